// The entry point of @nuvec/cuda-native's addon (node-addon-api, C++17): the CUDA layer
// (cuda/cuda_platform.cc) behind the N-API layer both addons share (native-core/napi/ over native-core/core/,
// the copy of @nuvec/native-core that binding.gyp includes). The handles, ownership, views and their
// detaching, escape quarantine, typed errors and counters are that shared code; what is only this addon's:
//   - the device is opened when JavaScript asks, open(ordinal), not at load (the driver is only touched then);
//   - memory the CPU cannot address: the devicePointer accessor on the handles
//     (BindingFeatures::devicePointers); contents() refused with ERR_NUVEC_NOT_HOST_VISIBLE and read()/write()
//     copying with the driver (shared);
//   - facts() adds hostVisible, ordinal and driverVersion; memoryInfo, copyFromMapping,
//     timeDriverAllocFree and driverVersion.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cuda/cuda_platform.h"
#include "napi/addon.h"

namespace nuvec {
namespace {

constexpr const char* kNotOpen = "the CUDA device is not open (call open(ordinal) first)";

CudaPlatformApi& CudaPlatformOf(Napi::Env env) {
  // Only CreateCudaPlatform makes this addon's platform.
  return static_cast<CudaPlatformApi&>(PlatformOf(env, *DataOf(env).state));
}

Napi::Value Facts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const DeviceFacts& facts = CudaPlatformOf(env).facts();
  Napi::Object object = FactsObject(env, facts);
  object.Set("hostVisible", facts.hostVisible);
  object.Set("ordinal", facts.ordinal);
  object.Set("driverVersion", DriverVersion());
  object.Set("mapGranularity", static_cast<double>(CudaPlatformOf(env).mapGranularity()));
  return object;
}

// reserveAddressSpace(bytes): a buffer handle over `bytes` of address space with no memory (whole granules).
// Made through the shared buffer constructor, so it is an ordinary buffer handle: ranges, release, teardown.
Napi::Value ReserveAddressSpace(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  CudaPlatformApi& platform = CudaPlatformOf(env);
  struct Reserving {
    CudaPlatformApi& platform;
    explicit Reserving(CudaPlatformApi& target) : platform(target) { platform.reserveNextBuffer(true); }
    ~Reserving() { platform.reserveNextBuffer(false); }
  } reserving(platform);
  return data.bufferConstructor.Value().New({info[0]});
}

// The address space behind a buffer handle argument, live.
Allocation* SpaceArgument(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data.bufferConstructor.Value())) {
    ThrowArgument(env, "space", "space must be an address space of this backend");
  }
  return BufferHandle::Unwrap(info[0].As<Napi::Object>())->handle().Live(env, "address space");
}

// mapMemory(space, offset, length) / unmapMemory(space, offset, length): the same checks, then the call.
template <bool (CudaPlatformApi::*Call)(Allocation*, size_t, size_t, Failure*)>
void SpaceCall(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Allocation* space = SpaceArgument(info);
  size_t offset = CheckRange(env, info[1], "offset", space->length());
  size_t length = CheckRange(env, info[2], "length", space->length() - offset);
  Failure failure;
  if (!(CudaPlatformOf(env).*Call)(space, offset, length, &failure)) {
    ThrowFailure(env, failure, "length", static_cast<double>(length));
  }
}

// open(ordinal): opens the device once per environment. Throws ERR_NUVEC_NATIVE_UNAVAILABLE (with the
// reason: no driver, no GPU, no such device, another device already open in this thread).
void Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonState& state = *DataOf(env).state;
  if (!info[0].IsNumber()) ThrowArgument(env, "device", "device must be a number");
  double ordinal = info[0].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(ordinal) || ordinal != std::floor(ordinal) || ordinal < 0 || ordinal > 1e6) {
    ThrowArgument(env, "device", "device must be a device ordinal (0, 1, ...)");
  }
  if (state.tornDown) throw MakeError(env, kUnavailable, "the environment is shutting down");
  if (state.platform) {
    if (state.platform->facts().ordinal != static_cast<int>(ordinal)) {
      throw MakeError(env, kUnavailable,
                      "this thread already uses CUDA device " + std::to_string(state.platform->facts().ordinal) +
                          ": one device per thread (open another in a worker thread)");
    }
    return;
  }
  Failure failure;
  state.platform = CreateCudaPlatform(static_cast<int>(ordinal), &failure);
  if (!state.platform) throw MakeError(env, kUnavailable, failure.message);
}

// memoryInfo(): { free, total } of the device, from the driver.
Napi::Value MemoryInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t free = 0;
  uint64_t total = 0;
  Failure failure;
  if (!CudaPlatformOf(env).memoryInfo(&free, &total, &failure)) ThrowFailure(env, failure, "device", 0);
  Napi::Object object = Napi::Object::New(env);
  object.Set("free", static_cast<double>(free));
  object.Set("total", static_cast<double>(total));
  return object;
}

// copyFromMapping(buffer, mapping, length): copies the first `length` bytes of a wired mapping into a
// buffer through the mapping's device pointer (the copy engine reads the registered pages).
void CopyFromMapping(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  CudaPlatformApi& platform = CudaPlatformOf(env);
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data.bufferConstructor.Value())) {
    ThrowArgument(env, "buffer", "buffer must be a buffer of this backend");
  }
  if (!info[1].IsObject() || !info[1].As<Napi::Object>().InstanceOf(data.mappedFileConstructor.Value())) {
    ThrowArgument(env, "mapping", "mapping must be a mapped file of this backend");
  }
  Allocation* target = BufferHandle::Unwrap(info[0].As<Napi::Object>())->handle().Live(env, "buffer");
  Allocation* source = MappedFileHandle::Unwrap(info[1].As<Napi::Object>())->handle().Live(env, "mapped file");
  size_t limit = std::min(target->length(), source->length());
  size_t length = CheckRange(env, info[2], "length", limit);
  if (source->devicePointer() == 0) {
    ThrowArgument(env, "mapping", "the mapped file is not wired: it has no device pointer");
  }
  Failure failure;
  if (!platform.copyDevice(target->devicePointer(), source->devicePointer(), length, &failure)) {
    ThrowFailure(env, failure, "length", 0);
  }
}

// timeDriverAllocFree(bytes, count): ns per cuMemAlloc + cuMemFree pair, timed in C++.
Napi::Value TimeDriverAllocFree(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaPlatformApi& platform = CudaPlatformOf(env);
  size_t bytes = CheckBytes(env, info[0], platform.facts().maxBufferLength);
  size_t count = CheckRange(env, info[1], "count", 10'000'000);
  Failure failure;
  double nanoseconds = platform.timeDriverAllocFree(bytes, static_cast<uint32_t>(count), &failure);
  if (nanoseconds < 0) ThrowFailure(env, failure, "bytes", static_cast<double>(bytes));
  return Napi::Number::New(env, nanoseconds);
}

// clearCurrentContext(): makes no context current on the calling thread, as a library that pops its own
// context does. For tests: the backend's next call must make its primary context current again.
void ClearCurrentContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaPlatformOf(env);  // open, or the typed "not open" error
  CudaPlatformOf(env).clearCurrentContext();
}

Napi::Value DriverVersionOf(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), DriverVersion()); }

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  data->features.devicePointers = true;
  data->features.accountsExternalMemory = false;
  // No platform until open(): what the "unavailable" error says meanwhile.
  data->state->platformFailure.message = kNotOpen;
  InitCommon(env, exports, data);
  exports.Set("facts", Napi::Function::New<Facts>(env, "facts"));
  exports.Set("open", Napi::Function::New<Open>(env, "open"));
  exports.Set("memoryInfo", Napi::Function::New<MemoryInfo>(env, "memoryInfo"));
  exports.Set("copyFromMapping", Napi::Function::New<CopyFromMapping>(env, "copyFromMapping"));
  exports.Set("timeDriverAllocFree", Napi::Function::New<TimeDriverAllocFree>(env, "timeDriverAllocFree"));
  exports.Set("driverVersion", Napi::Function::New<DriverVersionOf>(env, "driverVersion"));
  exports.Set("reserveAddressSpace", Napi::Function::New<ReserveAddressSpace>(env, "reserveAddressSpace"));
  exports.Set("mapMemory", Napi::Function::New<SpaceCall<&CudaPlatformApi::mapMemory>>(env, "mapMemory"));
  exports.Set("clearCurrentContext", Napi::Function::New<ClearCurrentContext>(env, "clearCurrentContext"));
  exports.Set("unmapMemory", Napi::Function::New<SpaceCall<&CudaPlatformApi::unmapMemory>>(env, "unmapMemory"));
  return exports;
}

}  // namespace nuvec

// The macro pastes the function's name into an identifier: it must be unqualified.
static Napi::Object InitNuvec(Napi::Env env, Napi::Object exports) { return nuvec::Init(env, exports); }
NODE_API_MODULE(nuvec_cuda_native, InitNuvec)
