// The N-API binding of the CUDA addon (node-addon-api, C++17): @nuvec/metal-native's native/binding.cc, the
// same handles, ownership, detaching and typed errors, plus what memory the CPU cannot address needs:
// contents() refused with ERR_NUVEC_NOT_HOST_VISIBLE, read()/write() by copies, device pointers as BigInts,
// and an explicit open(ordinal) (the driver is only touched when JavaScript asks for a device).
//
// Ownership: an AddonState per JS environment owns the platform and every live allocation and set, by id.
// Handles (JS objects) hold ids, never owning pointers, so that whichever comes first — release(), the
// handle being collected, the environment's cleanup — frees once and the others find nothing to do.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform.h"

namespace nuvec {
namespace {

constexpr const char* kInvalidArgument = "ERR_NUVEC_INVALID_ARGUMENT";
constexpr const char* kReleased = "ERR_NUVEC_RELEASED";
constexpr const char* kSystem = "ERR_NUVEC_SYSTEM";
constexpr const char* kAllocationFailed = "ERR_NUVEC_ALLOCATION_FAILED";
constexpr const char* kUnavailable = "ERR_NUVEC_NATIVE_UNAVAILABLE";
constexpr const char* kNotHostVisible = "ERR_NUVEC_NOT_HOST_VISIBLE";

// A JS Error with the fields the TypeScript layer turns into the classes of errors.ts.
Napi::Error MakeError(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

[[noreturn]] void ThrowArgument(Napi::Env env, const char* argument, const std::string& message) {
  Napi::Error error = MakeError(env, kInvalidArgument, message);
  error.Set("argument", Napi::String::New(env, argument));
  throw error;
}

[[noreturn]] void ThrowFailure(Napi::Env env, const Failure& failure, double bytes) {
  switch (failure.kind) {
    case Failure::Kind::kSystem: {
      Napi::Error error = MakeError(env, kSystem, failure.message);
      error.Set("syscall", Napi::String::New(env, failure.syscall));
      error.Set("errno", Napi::String::New(env, failure.errname.empty() ? ErrnoName(failure.errnum) : failure.errname));
      error.Set("errnoNumber", Napi::Number::New(env, failure.errnum));
      if (!failure.path.empty()) error.Set("path", Napi::String::New(env, failure.path));
      throw error;
    }
    case Failure::Kind::kArgument:
      ThrowArgument(env, "bytes", failure.message);
    case Failure::Kind::kAllocation:
    case Failure::Kind::kNone:
    default: {
      Napi::Error error = MakeError(env, kAllocationFailed, failure.message);
      error.Set("bytes", Napi::Number::New(env, bytes));
      throw error;
    }
  }
}

struct Counters {
  uint64_t buffersMade = 0;
  uint64_t buffersReleased = 0;
  uint64_t bufferBytes = 0;
  uint64_t mappingsMade = 0;
  uint64_t mappingsReleased = 0;
  uint64_t mappedBytes = 0;
  uint64_t residencySetsMade = 0;
  uint64_t commits = 0;
  uint64_t residencyRequests = 0;
};

// An allocation's memory is freed when all of these hold: its handle is done with (release(), or collected
// without it), no view can still reach it (release() detaches them; a collected handle waits for its views'
// finalizers), and no residency set holds it (Metal's sets retain their allocations; the host follows).
struct LiveAllocation {
  std::unique_ptr<Allocation> allocation;
  bool mapped = false;
  bool released = false;
  bool handleCollected = false;
  uint32_t liveViews = 0;
};

class AddonState {
 public:
  std::unique_ptr<Platform> platform;
  Counters counters;
  bool tornDown = false;

  uint64_t AddAllocation(Napi::Env env, std::unique_ptr<Allocation> allocation, bool mapped) {
    uint64_t id = ++lastId_;
    size_t bytes = allocation->allocatedSize();
    if (mapped) {
      counters.mappingsMade += 1;
      counters.mappedBytes += bytes;
    } else {
      counters.buffersMade += 1;
      counters.bufferBytes += bytes;
      // Tell V8 about memory it cannot see, so that dropped handles are collected (and freed) in time.
      Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(bytes));
    }
    LiveAllocation& live = allocations_[id];
    live.allocation = std::move(allocation);
    live.mapped = mapped;
    return id;
  }

  // The allocation, released or not, while its memory exists.
  Allocation* FindAllocation(uint64_t id) {
    auto found = allocations_.find(id);
    return found == allocations_.end() ? nullptr : found->second.allocation.get();
  }

  // release() (after detaching the views) or the handle's collection: counted as released at once; the
  // memory goes when nothing reaches it any more.
  void HandleDone(napi_env env, uint64_t id, bool explicitly) {
    auto found = allocations_.find(id);
    if (found == allocations_.end()) return;
    LiveAllocation& live = found->second;
    if (live.released || live.handleCollected) return;
    (explicitly ? live.released : live.handleCollected) = true;
    size_t bytes = live.allocation->allocatedSize();
    if (live.mapped) {
      counters.mappingsReleased += 1;
      counters.mappedBytes -= bytes;
    } else {
      counters.buffersReleased += 1;
      counters.bufferBytes -= bytes;
    }
    MaybeFree(env, id);
  }

  void ViewCreated(uint64_t id) {
    auto found = allocations_.find(id);
    if (found != allocations_.end()) found->second.liveViews += 1;
  }

  void ViewCollected(napi_env env, uint64_t id) {
    auto found = allocations_.find(id);
    if (found == allocations_.end()) return;
    found->second.liveViews -= 1;
    MaybeFree(env, id);
  }

  uint64_t AddSet(std::unique_ptr<ResidencySet> set) {
    uint64_t id = ++lastId_;
    sets_[id] = std::move(set);
    counters.residencySetsMade += 1;
    return id;
  }

  ResidencySet* FindSet(uint64_t id) {
    auto found = sets_.find(id);
    return found == sets_.end() ? nullptr : found->second.get();
  }

  void AddToSet(ResidencySet* set, uint64_t id) {
    Allocation* allocation = FindAllocation(id);
    set->add(allocation);
    set->members.insert(allocation);
    allocation->sets.insert(set);
    setMemberIds_[allocation] = id;
  }

  void Commit(napi_env env, ResidencySet* set) {
    for (Allocation* allocation : set->commit()) Unlink(env, set, allocation);
  }

  void FreeSet(napi_env env, uint64_t id) {
    auto found = sets_.find(id);
    if (found == sets_.end()) return;
    std::unique_ptr<ResidencySet> set = std::move(found->second);
    sets_.erase(found);
    set->endResidency();
    std::vector<Allocation*> members(set->members.begin(), set->members.end());
    for (Allocation* allocation : members) allocation->sets.erase(set.get());
    set.reset();  // before any of its allocations may go: a layer's set may still point at them
    for (Allocation* allocation : members) {
      if (allocation->sets.empty()) MaybeFreeAllocation(env, allocation);
    }
  }

  // The environment is going away (process or worker exit): give everything back to the system.
  void TearDown() {
    if (tornDown) return;
    tornDown = true;
    while (!sets_.empty()) FreeSet(nullptr, sets_.begin()->first);
    allocations_.clear();
    platform.reset();
  }

 private:
  void Unlink(napi_env env, ResidencySet* set, Allocation* allocation) {
    set->members.erase(allocation);
    allocation->sets.erase(set);
    if (allocation->sets.empty()) MaybeFreeAllocation(env, allocation);
  }

  void MaybeFreeAllocation(napi_env env, Allocation* allocation) {
    auto id = setMemberIds_.find(allocation);
    if (id == setMemberIds_.end()) return;
    MaybeFree(env, id->second);
  }

  // env is null during the environment's teardown (no V8 accounting then).
  void MaybeFree(napi_env env, uint64_t id) {
    auto found = allocations_.find(id);
    if (found == allocations_.end()) return;
    LiveAllocation& live = found->second;
    if (!live.released && !live.handleCollected) return;
    if (!live.released && live.liveViews > 0) return;
    if (!live.allocation->sets.empty()) return;
    if (!live.mapped && env != nullptr) {
      int64_t ignored = 0;
      napi_adjust_external_memory(env, -static_cast<int64_t>(live.allocation->allocatedSize()), &ignored);
    }
    setMemberIds_.erase(live.allocation.get());
    allocations_.erase(found);
  }

  uint64_t lastId_ = 0;
  std::unordered_map<uint64_t, LiveAllocation> allocations_;
  std::unordered_map<uint64_t, std::unique_ptr<ResidencySet>> sets_;
  // Allocations that are or were in a set, back to their ids (sets deal in pointers).
  std::unordered_map<Allocation*, uint64_t> setMemberIds_;
};

// Instance data of one environment (main thread or worker).
struct AddonData {
  std::shared_ptr<AddonState> state = std::make_shared<AddonState>();
  Napi::FunctionReference bufferConstructor;
  Napi::FunctionReference mappedFileConstructor;
  Napi::FunctionReference residencySetConstructor;
};

AddonData& DataOf(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

Platform& PlatformOf(Napi::Env env, AddonState& state) {
  if (state.tornDown || !state.platform) {
    Napi::Error error = MakeError(env, kUnavailable, "the CUDA device is not open (call open(ordinal) first)");
    throw error;
  }
  return *state.platform;
}

// What a view's finalizer needs: the state may be gone by then (weak), and the allocation may have been
// freed by release() (looked up by id).
struct ViewHint {
  std::weak_ptr<AddonState> state;
  uint64_t id;
};

// Shared by the buffer and mapped-file handles.
class AllocationHandle {
 public:
  std::shared_ptr<AddonState> state;
  uint64_t id = 0;
  bool released = true;
  double length = 0;
  double allocatedSize = 0;
  // Weak references to the ArrayBuffers handed out, detached on release.
  std::vector<Napi::Reference<Napi::ArrayBuffer>> views;

  Allocation* Live(Napi::Env env, const char* what) {
    Allocation* allocation = released || state->tornDown ? nullptr : state->FindAllocation(id);
    if (allocation == nullptr) throw MakeError(env, kReleased, std::string("this ") + what + " was released");
    return allocation;
  }

  Napi::Value Contents(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    Allocation* allocation = Live(env, what);
    if (allocation->data() == nullptr) {
      throw MakeError(env, kNotHostVisible,
                      std::string("contents(): this ") + what +
                          " is device memory, which the CPU cannot address: copy with read() and write()");
    }
    // The same ArrayBuffer while it lives: an external ArrayBuffer costs microseconds (TOOLCHAIN.md).
    for (auto& view : views) {
      Napi::ArrayBuffer buffer = view.Value();
      if (!buffer.IsEmpty() && !buffer.IsDetached()) return buffer;
    }
    views.erase(std::remove_if(views.begin(), views.end(), [](auto& view) { return view.Value().IsEmpty(); }),
                views.end());
    auto* hint = new ViewHint{state, id};
    Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
        env, allocation->data(), allocation->length(),
        [](Napi::Env finalizerEnv, void*, ViewHint* hint) {
          if (auto state = hint->state.lock()) state->ViewCollected(finalizerEnv, hint->id);
          delete hint;
        },
        hint);
    state->ViewCreated(id);
    views.push_back(Napi::Reference<Napi::ArrayBuffer>::New(buffer, 0));
    return buffer;
  }

  // Detaches every view handed out: each reads byteLength 0 from now on, never a later owner's bytes.
  void DetachViews() {
    for (auto& view : views) {
      Napi::ArrayBuffer buffer = view.Value();
      if (!buffer.IsEmpty() && !buffer.IsDetached()) buffer.Detach();
    }
    views.clear();
  }

  // read(offset, length): a new ArrayBuffer with a copy of the bytes (arguments checked by the TS layer and
  // again here).
  Napi::Value Read(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    Allocation* allocation = Live(env, what);
    size_t offset = CheckRange(env, info[0], "offset", allocation->length());
    size_t length = CheckRange(env, info[1], "length", allocation->length() - offset);
    Napi::ArrayBuffer target = Napi::ArrayBuffer::New(env, length);
    Failure failure;
    if (!allocation->copyOut(offset, target.Data(), length, &failure)) ThrowFailure(env, failure, 0);
    return target;
  }

  // write(source, offset): source is an ArrayBuffer or any ArrayBuffer view.
  void Write(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    Allocation* allocation = Live(env, what);
    const void* data = nullptr;
    size_t bytes = 0;
    if (info[0].IsArrayBuffer()) {
      Napi::ArrayBuffer source = info[0].As<Napi::ArrayBuffer>();
      data = source.Data();
      bytes = source.ByteLength();
    } else if (info[0].IsTypedArray()) {
      Napi::TypedArray source = info[0].As<Napi::TypedArray>();
      data = static_cast<const char*>(source.ArrayBuffer().Data()) + source.ByteOffset();
      bytes = source.ByteLength();
    } else if (info[0].IsDataView()) {
      Napi::DataView source = info[0].As<Napi::DataView>();
      data = static_cast<const char*>(source.ArrayBuffer().Data()) + source.ByteOffset();
      bytes = source.ByteLength();
    } else {
      ThrowArgument(env, "source", "source must be an ArrayBuffer or an ArrayBuffer view");
    }
    size_t offset = CheckRange(env, info[1], "offset", allocation->length());
    if (bytes > allocation->length() - offset) {
      ThrowArgument(env, "source",
                    "source (" + std::to_string(bytes) + " bytes) does not fit at offset " + std::to_string(offset) +
                        " of " + std::to_string(allocation->length()) + " bytes");
    }
    Failure failure;
    if (!allocation->copyIn(offset, data, bytes, &failure)) ThrowFailure(env, failure, 0);
  }

  // The device address as a BigInt, or undefined when there is none (a mapped file not wired).
  Napi::Value DevicePointer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Allocation* allocation = released || state->tornDown ? nullptr : state->FindAllocation(id);
    if (allocation == nullptr || allocation->devicePointer() == 0) return env.Undefined();
    return Napi::BigInt::New(env, static_cast<uint64_t>(allocation->devicePointer()));
  }

  // A whole number in [0, limit] (offsets and lengths).
  static size_t CheckRange(Napi::Env env, const Napi::Value& value, const char* name, size_t limit) {
    if (!value.IsNumber()) ThrowArgument(env, name, std::string(name) + " must be a number");
    double number = value.As<Napi::Number>().DoubleValue();
    if (!std::isfinite(number) || number != std::floor(number) || number < 0 ||
        number > static_cast<double>(limit)) {
      ThrowArgument(env, name,
                    std::string(name) + " must be a whole number from 0 to " + std::to_string(limit) + ", got " +
                        value.ToString().Utf8Value());
    }
    return static_cast<size_t>(number);
  }

  void DetachContents(const Napi::CallbackInfo& info, const char* what) {
    Live(info.Env(), what);
    DetachViews();
  }

  void Release(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    Live(env, what);
    // Detach first: no view may outlive the memory.
    DetachViews();
    released = true;
    state->HandleDone(env, id, true);
  }

  // The handle was collected without release(): freed once no view reaches the memory (or no set holds it).
  void Collected(napi_env env) {
    if (!released && state) state->HandleDone(env, id, false);
    released = true;
  }
};

// Throws unless value is a whole number of bytes in (0, limit].
size_t CheckBytes(Napi::Env env, const Napi::Value& value, uint64_t limit) {
  if (!value.IsNumber()) ThrowArgument(env, "bytes", "bytes must be a number");
  double bytes = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(bytes) || bytes != std::floor(bytes) || bytes <= 0) {
    ThrowArgument(env, "bytes", "bytes must be a positive whole number, got " + value.ToString().Utf8Value());
  }
  if (bytes > static_cast<double>(limit)) {
    ThrowArgument(env, "bytes",
                  "bytes (" + value.ToString().Utf8Value() + ") is above maxBufferLength (" + std::to_string(limit) + ")");
  }
  return static_cast<size_t>(bytes);
}

class BufferHandle final : public Napi::ObjectWrap<BufferHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeBufferHandle",
                       {InstanceMethod<&BufferHandle::Contents>("contents"),
                        InstanceMethod<&BufferHandle::Read>("read"),
                        InstanceMethod<&BufferHandle::Write>("write"),
                        InstanceAccessor<&BufferHandle::DevicePointer>("devicePointer"),
                        InstanceMethod<&BufferHandle::DetachContents>("detachContents"),
                        InstanceMethod<&BufferHandle::Release>("release"),
                        InstanceAccessor<&BufferHandle::Length>("length"),
                        InstanceAccessor<&BufferHandle::AllocatedSize>("allocatedSize"),
                        InstanceAccessor<&BufferHandle::Released>("released")});
  }

  // new NativeBufferHandle(bytes)
  explicit BufferHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BufferHandle>(info) {
    Napi::Env env = info.Env();
    AddonData& data = DataOf(env);
    Platform& platform = PlatformOf(env, *data.state);
    size_t bytes = CheckBytes(env, info[0], platform.facts().maxBufferLength);
    Failure failure;
    std::unique_ptr<Allocation> allocation = platform.newBuffer(bytes, &failure);
    if (!allocation) ThrowFailure(env, failure, static_cast<double>(bytes));
    handle_.state = data.state;
    handle_.length = static_cast<double>(allocation->length());
    handle_.allocatedSize = static_cast<double>(allocation->allocatedSize());
    handle_.id = data.state->AddAllocation(env, std::move(allocation), false);
    handle_.released = false;
  }

  void Finalize(Napi::Env env) override { handle_.Collected(env); }

  AllocationHandle& handle() { return handle_; }

 private:
  Napi::Value Contents(const Napi::CallbackInfo& info) { return handle_.Contents(info, "buffer"); }
  Napi::Value Read(const Napi::CallbackInfo& info) { return handle_.Read(info, "buffer"); }
  void Write(const Napi::CallbackInfo& info) { handle_.Write(info, "buffer"); }
  Napi::Value DevicePointer(const Napi::CallbackInfo& info) { return handle_.DevicePointer(info); }
  void DetachContents(const Napi::CallbackInfo& info) { handle_.DetachContents(info, "buffer"); }
  void Release(const Napi::CallbackInfo& info) { handle_.Release(info, "buffer"); }
  Napi::Value Length(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), handle_.length); }
  Napi::Value AllocatedSize(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), handle_.allocatedSize);
  }
  Napi::Value Released(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), handle_.released); }

  AllocationHandle handle_;
};

class MappedFileHandle final : public Napi::ObjectWrap<MappedFileHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeMappedFileHandle",
                       {InstanceMethod<&MappedFileHandle::Contents>("contents"),
                        InstanceMethod<&MappedFileHandle::DetachContents>("detachContents"),
                        InstanceMethod<&MappedFileHandle::Release>("release"),
                        InstanceAccessor<&MappedFileHandle::DevicePointer>("devicePointer"),
                        InstanceAccessor<&MappedFileHandle::Length>("length"),
                        InstanceAccessor<&MappedFileHandle::AllocatedSize>("allocatedSize"),
                        InstanceAccessor<&MappedFileHandle::AllocatedSize>("mappedLength"),
                        InstanceAccessor<&MappedFileHandle::Released>("released")});
  }

  // new NativeMappedFileHandle(path)
  explicit MappedFileHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<MappedFileHandle>(info) {
    Napi::Env env = info.Env();
    AddonData& data = DataOf(env);
    Platform& platform = PlatformOf(env, *data.state);
    if (!info[0].IsString()) ThrowArgument(env, "path", "path must be a string");
    std::string path = info[0].As<Napi::String>().Utf8Value();
    if (path.empty()) ThrowArgument(env, "path", "path must not be empty");
    if (path.find('\0') != std::string::npos) ThrowArgument(env, "path", "path must not contain a NUL character");
    Failure failure;
    std::unique_ptr<Allocation> allocation = platform.mapFile(path, &failure);
    if (!allocation) ThrowFailure(env, failure, 0);
    handle_.state = data.state;
    handle_.length = static_cast<double>(allocation->length());
    handle_.allocatedSize = static_cast<double>(allocation->allocatedSize());
    handle_.id = data.state->AddAllocation(env, std::move(allocation), true);
    handle_.released = false;
  }

  void Finalize(Napi::Env env) override { handle_.Collected(env); }

  AllocationHandle& handle() { return handle_; }

 private:
  Napi::Value Contents(const Napi::CallbackInfo& info) { return handle_.Contents(info, "mapped file"); }
  void DetachContents(const Napi::CallbackInfo& info) { handle_.DetachContents(info, "mapped file"); }
  Napi::Value DevicePointer(const Napi::CallbackInfo& info) { return handle_.DevicePointer(info); }
  void Release(const Napi::CallbackInfo& info) { handle_.Release(info, "mapped file"); }
  Napi::Value Length(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), handle_.length); }
  Napi::Value AllocatedSize(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), handle_.allocatedSize);
  }
  Napi::Value Released(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), handle_.released); }

  AllocationHandle handle_;
};

// The handle behind a buffer or mapped-file object, or nullptr for anything else.
AllocationHandle* UnwrapAllocation(Napi::Env env, const Napi::Value& value) {
  if (!value.IsObject()) return nullptr;
  AddonData& data = DataOf(env);
  Napi::Object object = value.As<Napi::Object>();
  if (object.InstanceOf(data.bufferConstructor.Value())) return &BufferHandle::Unwrap(object)->handle();
  if (object.InstanceOf(data.mappedFileConstructor.Value())) return &MappedFileHandle::Unwrap(object)->handle();
  return nullptr;
}

class ResidencySetHandle final : public Napi::ObjectWrap<ResidencySetHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeResidencySetHandle",
                       {InstanceMethod<&ResidencySetHandle::Add>("add"),
                        InstanceMethod<&ResidencySetHandle::Remove>("remove"),
                        InstanceMethod<&ResidencySetHandle::Commit>("commit"),
                        InstanceMethod<&ResidencySetHandle::RequestResidency>("requestResidency"),
                        InstanceMethod<&ResidencySetHandle::EndResidency>("endResidency"),
                        InstanceMethod<&ResidencySetHandle::Release>("release"),
                        InstanceAccessor<&ResidencySetHandle::AllocatedSize>("allocatedSize"),
                        InstanceAccessor<&ResidencySetHandle::AllocationCount>("allocationCount"),
                        InstanceAccessor<&ResidencySetHandle::WiringFailures>("wiringFailures"),
                        InstanceAccessor<&ResidencySetHandle::LastWiringError>("lastWiringError"),
                        InstanceAccessor<&ResidencySetHandle::Released>("released")});
  }

  // new NativeResidencySetHandle(): throws ERR_NUVEC_NATIVE_UNAVAILABLE when the device has no sets.
  explicit ResidencySetHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ResidencySetHandle>(info) {
    Napi::Env env = info.Env();
    AddonData& data = DataOf(env);
    Platform& platform = PlatformOf(env, *data.state);
    Failure failure;
    std::unique_ptr<ResidencySet> set = platform.newResidencySet(&failure);
    if (failure.failed()) ThrowFailure(env, failure, 0);
    if (!set) throw MakeError(env, kUnavailable, "this device has no residency sets");
    state_ = data.state;
    id_ = state_->AddSet(std::move(set));
  }

  void Finalize(Napi::Env env) override {
    if (state_) state_->FreeSet(env, id_);
  }

  ResidencySet* Live(Napi::Env env) {
    ResidencySet* set = Find();
    if (set == nullptr) throw MakeError(env, kReleased, "this residency set was released");
    return set;
  }

 private:
  AllocationHandle* Argument(const Napi::CallbackInfo& info) {
    AllocationHandle* handle = UnwrapAllocation(info.Env(), info[0]);
    if (handle == nullptr) ThrowArgument(info.Env(), "allocation", "allocation must be a buffer or a mapped file");
    return handle;
  }

  void Add(const Napi::CallbackInfo& info) {
    ResidencySet* set = Live(info.Env());
    AllocationHandle* handle = Argument(info);
    handle->Live(info.Env(), "allocation");
    state_->AddToSet(set, handle->id);
  }

  // A released allocation may be removed: the set holds it (and its memory) until the commit.
  void Remove(const Napi::CallbackInfo& info) {
    ResidencySet* set = Live(info.Env());
    AllocationHandle* handle = Argument(info);
    Allocation* allocation = state_->FindAllocation(handle->id);
    if (allocation != nullptr && set->members.count(allocation) > 0) set->remove(allocation);
  }

  void Commit(const Napi::CallbackInfo& info) {
    state_->Commit(info.Env(), Live(info.Env()));
    state_->counters.commits += 1;
  }

  void RequestResidency(const Napi::CallbackInfo& info) {
    Live(info.Env())->requestResidency();
    state_->counters.residencyRequests += 1;
  }

  void EndResidency(const Napi::CallbackInfo& info) { Live(info.Env())->endResidency(); }

  void Release(const Napi::CallbackInfo& info) {
    Live(info.Env());
    state_->FreeSet(info.Env(), id_);
  }

  // Getters answer after release too (0, no advice) rather than throw: they are read in reports.
  ResidencySet* Find() { return state_ && !state_->tornDown ? state_->FindSet(id_) : nullptr; }
  Napi::Value AllocatedSize(const Napi::CallbackInfo& info) {
    ResidencySet* set = Find();
    return Napi::Number::New(info.Env(), set ? static_cast<double>(set->allocatedSize()) : 0);
  }
  Napi::Value AllocationCount(const Napi::CallbackInfo& info) {
    ResidencySet* set = Find();
    return Napi::Number::New(info.Env(), set ? static_cast<double>(set->allocationCount()) : 0);
  }
  Napi::Value WiringFailures(const Napi::CallbackInfo& info) {
    ResidencySet* set = Find();
    if (set) wiringFailures_ = static_cast<double>(set->wiringFailures());
    return Napi::Number::New(info.Env(), wiringFailures_);
  }
  Napi::Value LastWiringError(const Napi::CallbackInfo& info) {
    ResidencySet* set = Find();
    std::string advice = set ? set->lastWiringError() : "";
    return advice.empty() ? info.Env().Undefined() : Napi::String::New(info.Env(), advice);
  }
  Napi::Value Released(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), Find() == nullptr);
  }

  std::shared_ptr<AddonState> state_;
  uint64_t id_ = 0;
  double wiringFailures_ = 0;  // the count as last read, still answered after release
};

Napi::Value Facts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const DeviceFacts& facts = PlatformOf(env, *DataOf(env).state).facts();
  Napi::Object object = Napi::Object::New(env);
  object.Set("name", facts.name);
  object.Set("platform", facts.platform);
  object.Set("memorySize", static_cast<double>(facts.memorySize));
  object.Set("recommendedMaxWorkingSetSize", static_cast<double>(facts.recommendedMaxWorkingSetSize));
  object.Set("maxBufferLength", static_cast<double>(facts.maxBufferLength));
  object.Set("resourceLimit", static_cast<double>(facts.resourceLimit));
  object.Set("pageSize", static_cast<double>(facts.pageSize));
  object.Set("supportsResidencySets", facts.supportsResidencySets);
  object.Set("hostVisible", facts.hostVisible);
  object.Set("ordinal", facts.ordinal);
  object.Set("driverVersion", DriverVersion());
  return object;
}

Napi::Value CountersOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonState& state = *DataOf(env).state;
  WiringCounters wiring = PlatformOf(env, state).wiringCounters();
  const Counters& counters = state.counters;
  Napi::Object object = Napi::Object::New(env);
  object.Set("buffersMade", static_cast<double>(counters.buffersMade));
  object.Set("buffersReleased", static_cast<double>(counters.buffersReleased));
  object.Set("bufferBytes", static_cast<double>(counters.bufferBytes));
  object.Set("mappingsMade", static_cast<double>(counters.mappingsMade));
  object.Set("mappingsReleased", static_cast<double>(counters.mappingsReleased));
  object.Set("mappedBytes", static_cast<double>(counters.mappedBytes));
  object.Set("residencySetsMade", static_cast<double>(counters.residencySetsMade));
  object.Set("commits", static_cast<double>(counters.commits));
  object.Set("residencyRequests", static_cast<double>(counters.residencyRequests));
  object.Set("wiredBytes", static_cast<double>(wiring.wiredBytes));
  object.Set("wiringFailures", static_cast<double>(wiring.wiringFailures));
  return object;
}

Napi::Value LastWiringError(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string advice = PlatformOf(env, *DataOf(env).state).lastWiringError();
  return advice.empty() ? env.Undefined() : Napi::String::New(env, advice);
}

void AttachResidencySet(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  Platform& platform = PlatformOf(env, *data.state);
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data.residencySetConstructor.Value())) {
    ThrowArgument(env, "set", "set must be a residency set of this backend");
  }
  platform.attachResidencySet(ResidencySetHandle::Unwrap(info[0].As<Napi::Object>())->Live(env));
}

// Nothing: what a call across N-API costs, for the benchmark.
Napi::Value Noop(const Napi::CallbackInfo& info) { return info.Env().Undefined(); }

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
  state.platform = CreatePlatform(static_cast<int>(ordinal), &failure);
  if (!state.platform) throw MakeError(env, kUnavailable, failure.message);
}

// memoryInfo(): { free, total } of the device, from the driver.
Napi::Value MemoryInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Platform& platform = PlatformOf(env, *DataOf(env).state);
  uint64_t free = 0;
  uint64_t total = 0;
  Failure failure;
  if (!platform.memoryInfo(&free, &total, &failure)) ThrowFailure(env, failure, 0);
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
  Platform& platform = PlatformOf(env, *data.state);
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data.bufferConstructor.Value())) {
    ThrowArgument(env, "buffer", "buffer must be a buffer of this backend");
  }
  if (!info[1].IsObject() || !info[1].As<Napi::Object>().InstanceOf(data.mappedFileConstructor.Value())) {
    ThrowArgument(env, "mapping", "mapping must be a mapped file of this backend");
  }
  Allocation* target = BufferHandle::Unwrap(info[0].As<Napi::Object>())->handle().Live(env, "buffer");
  Allocation* source = MappedFileHandle::Unwrap(info[1].As<Napi::Object>())->handle().Live(env, "mapped file");
  size_t limit = std::min(target->length(), source->length());
  size_t length = AllocationHandle::CheckRange(env, info[2], "length", limit);
  if (source->devicePointer() == 0) {
    ThrowArgument(env, "mapping", "the mapped file is not wired: it has no device pointer");
  }
  Failure failure;
  if (!platform.copyDevice(target->devicePointer(), source->devicePointer(), length, &failure)) {
    ThrowFailure(env, failure, 0);
  }
}

// timeDriverAllocFree(bytes, count): ns per cuMemAlloc + cuMemFree pair, timed in C++.
Napi::Value TimeDriverAllocFree(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Platform& platform = PlatformOf(env, *DataOf(env).state);
  size_t bytes = CheckBytes(env, info[0], platform.facts().maxBufferLength);
  size_t count = AllocationHandle::CheckRange(env, info[1], "count", 10'000'000);
  Failure failure;
  double nanoseconds = platform.timeDriverAllocFree(bytes, static_cast<uint32_t>(count), &failure);
  if (nanoseconds < 0) ThrowFailure(env, failure, static_cast<double>(bytes));
  return Napi::Number::New(env, nanoseconds);
}

Napi::Value DriverVersionOf(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), DriverVersion()); }

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  Napi::Function buffer = BufferHandle::Define(env);
  Napi::Function mappedFile = MappedFileHandle::Define(env);
  Napi::Function residencySet = ResidencySetHandle::Define(env);
  data->bufferConstructor = Napi::Persistent(buffer);
  data->mappedFileConstructor = Napi::Persistent(mappedFile);
  data->residencySetConstructor = Napi::Persistent(residencySet);
  env.SetInstanceData<AddonData>(data);
  // Runs before N-API's own teardown of this environment (hooks run in reverse order of registration), so a
  // worker's or the process's memory, mappings and locks go back to the system at exit, whatever JS dropped.
  std::weak_ptr<AddonState> weak = data->state;
  env.AddCleanupHook([weak]() {
    if (auto state = weak.lock()) state->TearDown();
  });
  exports.Set("NativeBufferHandle", buffer);
  exports.Set("NativeMappedFileHandle", mappedFile);
  exports.Set("NativeResidencySetHandle", residencySet);
  exports.Set("facts", Napi::Function::New<Facts>(env, "facts"));
  exports.Set("counters", Napi::Function::New<CountersOf>(env, "counters"));
  exports.Set("lastWiringError", Napi::Function::New<LastWiringError>(env, "lastWiringError"));
  exports.Set("attachResidencySet", Napi::Function::New<AttachResidencySet>(env, "attachResidencySet"));
  exports.Set("noop", Napi::Function::New<Noop>(env, "noop"));
  exports.Set("open", Napi::Function::New<Open>(env, "open"));
  exports.Set("memoryInfo", Napi::Function::New<MemoryInfo>(env, "memoryInfo"));
  exports.Set("copyFromMapping", Napi::Function::New<CopyFromMapping>(env, "copyFromMapping"));
  exports.Set("timeDriverAllocFree", Napi::Function::New<TimeDriverAllocFree>(env, "timeDriverAllocFree"));
  exports.Set("driverVersion", Napi::Function::New<DriverVersionOf>(env, "driverVersion"));
  return exports;
}

}  // namespace nuvec

// The macro pastes the function's name into an identifier: it must be unqualified.
static Napi::Object InitNuvec(Napi::Env env, Napi::Object exports) { return nuvec::Init(env, exports); }
NODE_API_MODULE(nuvec_cuda_native, InitNuvec)
