// The entry point of @nuvec/metal-native's addon (node-addon-api, C++17): the host layer (Linux) or the
// Metal layer (macOS) behind the N-API layer both addons share (native-core/napi/, over native-core/core/).
// What is only this addon's: the platform is made at load (available / unavailableReason say whether it
// was) and checkMetalDevice. @nuvec/cuda-native's native/binding.cc is the other entry point over the same
// layers.
//
// Worker termination: worker.terminate() may stop a worker inside any entry point, and from then on every
// N-API call that runs JavaScript fails (setting a property of an error, creating a view, napi_throw itself).
// binding.gyp defines NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS so that node-addon-api's single boundary
// around every entry point, constructor and finalizer (WrapCallback) drops an error it can no longer throw
// into a terminating environment instead of rethrowing it as a C++ exception out of an extern "C" callback
// (std::terminate, SIGABRT). NODE_ADDON_API_CPP_EXCEPTIONS_ALL makes the same boundary catch any
// C++ exception (std::bad_alloc from a std::string, ...) and turn it into a JavaScript error.
#include <napi.h>

#include "napi/addon.h"

namespace nuvec {

// The host layer's (host/host_platform.cc) or the Metal layer's (metal/metal_platform.mm): one is compiled.
std::unique_ptr<Platform> CreatePlatform(Failure* failure);

namespace {

// checkMetalDevice(device): throws an argument error unless device is the GPU the buffers come from.
void CheckMetalDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Platform& platform = PlatformOf(env, *DataOf(env).state);
  uint64_t device = PointerArgument(env, info[0], "device", false);
  Failure failure;
  if (!platform.checkMetalDevice(device, &failure)) ThrowArgument(env, "device", failure.message);
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  Failure failure;
  data->state->platform = CreatePlatform(&failure);
  data->state->platformFailure = failure;
  InitCommon(env, exports, data);
  exports.Set("checkMetalDevice", Napi::Function::New<CheckMetalDevice>(env, "checkMetalDevice"));
  exports.Set("available", Napi::Boolean::New(env, static_cast<bool>(data->state->platform)));
  exports.Set("unavailableReason", Napi::String::New(env, failure.message));
  return exports;
}

}  // namespace nuvec

// The macro pastes the function's name into an identifier: it must be unqualified.
static Napi::Object InitNuvec(Napi::Env env, Napi::Object exports) { return nuvec::Init(env, exports); }
NODE_API_MODULE(nuvec_metal_native, InitNuvec)
