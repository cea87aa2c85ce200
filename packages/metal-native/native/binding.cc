// The N-API binding shared by both platform layers (node-addon-api, C++17). Everything JavaScript sees goes
// through here: the handle classes, external ArrayBuffers (made lazily, detached on release), the typed
// errors, the counters and the per-environment state that a worker thread's exit cleans up.
//
// Ownership: an AddonState per JS environment owns the platform and every live allocation and set, by id.
// Handles (JS objects) hold ids, never owning pointers, so that whichever comes first — release(), the
// handle being collected, the environment's cleanup — frees once and the others find nothing to do.
//
// Worker termination: worker.terminate() may stop a worker inside any entry point, and from then on every
// N-API call that runs JavaScript fails (setting a property of an error, creating a view, napi_throw itself).
// binding.gyp defines NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS so that node-addon-api's single boundary
// around every entry point, constructor and finalizer (WrapCallback) drops an error it can no longer throw
// into a terminating environment instead of rethrowing it as a C++ exception out of an extern "C" callback
// (std::terminate, SIGABRT: issue 11). NODE_ADDON_API_CPP_EXCEPTIONS_ALL makes the same boundary catch any
// C++ exception (std::bad_alloc from a std::string, ...) and turn it into a JavaScript error.
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

// `argument`: the name of the argument the call was given, for a Failure::Kind::kArgument.
[[noreturn]] void ThrowFailure(Napi::Env env, const Failure& failure, const char* argument, double bytes) {
  switch (failure.kind) {
    case Failure::Kind::kSystem: {
      Napi::Error error = MakeError(env, kSystem, failure.message);
      error.Set("syscall", Napi::String::New(env, failure.syscall));
      error.Set("errno", Napi::String::New(env, ErrnoName(failure.errnum)));
      error.Set("errnoNumber", Napi::Number::New(env, failure.errnum));
      if (!failure.path.empty()) error.Set("path", Napi::String::New(env, failure.path));
      throw error;
    }
    case Failure::Kind::kArgument:
      ThrowArgument(env, argument, failure.message);
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
  uint64_t quarantinedAllocations = 0;  // released, held for a view moved out of our reach
};

// An allocation's memory is freed when all of these hold: its handle is done with (release(), or collected
// without it), no view can still reach it (release() detaches them; a collected handle waits for its views'
// finalizers), and no residency set holds it (Metal's sets retain their allocations; the host follows).
//
// A view detached by someone else (moved away by ArrayBuffer.prototype.transfer() or a postMessage
// transfer) has "escaped": its backing store, our memory, lives on in an ArrayBuffer we cannot detach. Such
// an allocation is quarantined: released or not, its memory is freed only when the last escaped view's
// finalizer runs (no JavaScript object can reach it any more), and the TypeScript layer never caches it.
//
// Escape is decided by elimination, not by finding the moved ArrayBuffer (the detached original may have
// been collected already): when the views are detached, every view whose backing store still exists
// (its finalizer has not run) and that we did not detach ourselves is counted as escaped. A view that was
// merely collected, its finalizer still pending, is counted too: its buffer then goes to the system instead
// of the cache, which is always safe.
enum class ViewState { kHandedOut, kDetachedByUs, kEscaped };

struct LiveAllocation {
  std::unique_ptr<Allocation> allocation;
  bool mapped = false;
  bool released = false;
  bool handleCollected = false;
  uint32_t liveViews = 0;
  uint32_t escapedViews = 0;
  // Views whose backing store still exists, by view id.
  std::unordered_map<uint64_t, ViewState> views;
};

class AddonState {
 public:
  std::unique_ptr<Platform> platform;
  Failure platformFailure;
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
    if (live.escapedViews > 0) counters.quarantinedAllocations += 1;
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

  // A new view of allocation `id`; returns the view's id.
  uint64_t ViewCreated(uint64_t id) {
    uint64_t viewId = ++lastViewId_;
    auto found = allocations_.find(id);
    if (found != allocations_.end()) {
      found->second.liveViews += 1;
      found->second.views[viewId] = ViewState::kHandedOut;
    }
    return viewId;
  }

  // We detached this view ourselves: nothing can reach the memory through it.
  void ViewDetachedByUs(uint64_t id, uint64_t viewId) {
    auto found = allocations_.find(id);
    if (found == allocations_.end()) return;
    auto view = found->second.views.find(viewId);
    if (view != found->second.views.end() && view->second == ViewState::kHandedOut) {
      view->second = ViewState::kDetachedByUs;
    }
  }

  // After detaching every view we could: the others escaped. Returns whether any escaped view still exists.
  bool SettleViews(uint64_t id) {
    auto found = allocations_.find(id);
    if (found == allocations_.end()) return false;
    for (auto& [viewId, view] : found->second.views) {
      if (view != ViewState::kHandedOut) continue;
      view = ViewState::kEscaped;
      found->second.escapedViews += 1;
    }
    return found->second.escapedViews > 0;
  }

  // The view's backing store is gone (its finalizer ran): nothing reaches the memory through it any more.
  void ViewCollected(napi_env env, uint64_t id, uint64_t viewId) {
    auto found = allocations_.find(id);
    if (found == allocations_.end()) return;
    LiveAllocation& live = found->second;
    auto view = live.views.find(viewId);
    if (view == live.views.end()) return;
    bool escaped = view->second == ViewState::kEscaped;
    live.views.erase(view);
    live.liveViews -= 1;
    if (escaped) {
      live.escapedViews -= 1;
      if (live.escapedViews == 0 && (live.released || live.handleCollected)) counters.quarantinedAllocations -= 1;
    }
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
    // Empty the set before it goes (Metal: removeAllocation: and commit), so that it retains none of them:
    // the queue may hold on to a set a little longer than we do.
    for (Allocation* allocation : members) set->remove(allocation);
    set->commit();
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
    if (live.escapedViews > 0) return;  // quarantined: a moved view still reaches the memory
    if (!live.allocation->sets.empty()) return;
    if (!live.mapped && env != nullptr) {
      int64_t ignored = 0;
      napi_adjust_external_memory(env, -static_cast<int64_t>(live.allocation->allocatedSize()), &ignored);
    }
    setMemberIds_.erase(live.allocation.get());
    allocations_.erase(found);
  }

  uint64_t lastId_ = 0;
  uint64_t lastViewId_ = 0;
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
    Failure failure = state.platformFailure;
    Napi::Error error = MakeError(env, kUnavailable,
                                  failure.message.empty() ? "the native device is not available" : failure.message);
    throw error;
  }
  return *state.platform;
}

// What a view's finalizer needs: the state may be gone by then (weak), and the allocation may have been
// freed by release() (looked up by id).
struct ViewHint {
  std::weak_ptr<AddonState> state;
  uint64_t id;
  uint64_t viewId;
};

// A view handed out: a weak reference to the ArrayBuffer, and its id in the state's view records.
struct HandedOutView {
  Napi::Reference<Napi::ArrayBuffer> buffer;
  uint64_t viewId;
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
  std::vector<HandedOutView> views;

  Allocation* Live(Napi::Env env, const char* what) {
    Allocation* allocation = released || state->tornDown ? nullptr : state->FindAllocation(id);
    if (allocation == nullptr) throw MakeError(env, kReleased, std::string("this ") + what + " was released");
    return allocation;
  }

  Napi::Value Contents(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    Allocation* allocation = Live(env, what);
    // The same ArrayBuffer while it lives: an external ArrayBuffer costs microseconds (TOOLCHAIN.md).
    for (auto& view : views) {
      Napi::ArrayBuffer buffer = view.buffer.Value();
      if (!buffer.IsEmpty() && !buffer.IsDetached()) return buffer;
    }
    // Collected or detached ones are forgotten here; the state still knows of them until their finalizer.
    views.erase(std::remove_if(views.begin(), views.end(),
                               [](auto& view) {
                                 Napi::ArrayBuffer buffer = view.buffer.Value();
                                 return buffer.IsEmpty() || buffer.IsDetached();
                               }),
                views.end());
    auto* hint = new ViewHint{state, id, 0};
    Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
        env, allocation->data(), allocation->length(),
        [](Napi::Env finalizerEnv, void*, ViewHint* hint) {
          if (auto state = hint->state.lock()) state->ViewCollected(finalizerEnv, hint->id, hint->viewId);
          delete hint;
        },
        hint);
    hint->viewId = state->ViewCreated(id);
    views.push_back(HandedOutView{Napi::Reference<Napi::ArrayBuffer>::New(buffer, 0), hint->viewId});
    return buffer;
  }

  // Where the memory is, for a runtime's native code: { platform, address, and on Metal metalBuffer and
  // gpuAddress }, pointers as BigInts. Nothing is retained: valid until release.
  Napi::Value NativeHandle(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    Allocation* allocation = Live(env, what);
    const std::string& platform = PlatformOf(env, *state).facts().platform;
    Napi::Object handle = Napi::Object::New(env);
    handle.Set("platform", Napi::String::New(env, platform));
    uint64_t address = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(allocation->data()));
    handle.Set("address", Napi::BigInt::New(env, address));
    if (platform == "metal") {
      handle.Set("metalBuffer", Napi::BigInt::New(env, allocation->metalBuffer()));
      handle.Set("gpuAddress", Napi::BigInt::New(env, allocation->gpuAddress()));
    }
    return handle;
  }

  // Detaches every view handed out: each reads byteLength 0 from now on, never a later owner's bytes. A view
  // we could not detach (already detached by someone else: transfer()) may live on in another ArrayBuffer,
  // so the memory is quarantined (see LiveAllocation). Returns whether a view escaped and still exists: such
  // an allocation must never be reused.
  bool DetachViews() {
    for (auto& view : views) {
      Napi::ArrayBuffer buffer = view.buffer.Value();
      if (buffer.IsEmpty() || buffer.IsDetached()) continue;
      buffer.Detach();
      state->ViewDetachedByUs(id, view.viewId);
    }
    views.clear();
    return state->SettleViews(id);
  }

  Napi::Value DetachContents(const Napi::CallbackInfo& info, const char* what) {
    Live(info.Env(), what);
    return Napi::Boolean::New(info.Env(), DetachViews());
  }

  void Release(const Napi::CallbackInfo& info, const char* what) {
    Napi::Env env = info.Env();
    Live(env, what);
    // Detach first: no view may outlive the memory (an escaped one keeps it, quarantined).
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

// Throws unless value is a non-empty string without NUL characters (the C API would cut it short there).
std::string CheckPath(Napi::Env env, const Napi::Value& value) {
  if (!value.IsString()) ThrowArgument(env, "path", "path must be a string");
  std::string path = value.As<Napi::String>().Utf8Value();
  if (path.empty()) ThrowArgument(env, "path", "path must not be empty");
  if (path.find('\0') != std::string::npos) ThrowArgument(env, "path", "path must not contain a NUL character");
  return path;
}

// What tells a buffer handle from a mapped-file handle: the class's name, what error messages call it, and
// the argument it takes and how the allocation is made from it. Everything else is AllocationObject's.
// The JS class's name, the word in error messages, the constructor's argument, and whether it is a mapping.
struct KindNames {
  const char* className;
  const char* what;
  const char* argument;
  bool mapped;
};

struct BufferKind {
  static constexpr KindNames kNames{"NativeBufferHandle", "buffer", "bytes", false};

  // new NativeBufferHandle(bytes); `bytes` is what an allocation failure reports.
  static std::unique_ptr<Allocation> Make(Napi::Env env, const Napi::CallbackInfo& info, Platform& platform,
                                          Failure* failure, double* bytes) {
    size_t checked = CheckBytes(env, info[0], platform.facts().maxBufferLength);
    *bytes = static_cast<double>(checked);
    return platform.newBuffer(checked, failure);
  }
};

struct MappedFileKind {
  static constexpr KindNames kNames{"NativeMappedFileHandle", "mapped file", "path", true};

  // new NativeMappedFileHandle(path)
  static std::unique_ptr<Allocation> Make(Napi::Env env, const Napi::CallbackInfo& info, Platform& platform,
                                          Failure* failure, double*) {
    return platform.mapFile(CheckPath(env, info[0]), failure);
  }
};

// The JS class of a buffer or a mapped file: one implementation, the differences in Kind.
template <typename Kind>
class AllocationObject final : public Napi::ObjectWrap<AllocationObject<Kind>> {
  using Base = Napi::ObjectWrap<AllocationObject<Kind>>;

 public:
  static Napi::Function Define(Napi::Env env) {
    std::vector<typename Base::PropertyDescriptor> properties = {
        Base::template InstanceMethod<&AllocationObject::Contents>("contents"),
        Base::template InstanceMethod<&AllocationObject::DetachContents>("detachContents"),
        Base::template InstanceMethod<&AllocationObject::NativeHandle>("nativeHandle"),
        Base::template InstanceMethod<&AllocationObject::Release>("release"),
        Base::template InstanceAccessor<&AllocationObject::Length>("length"),
        Base::template InstanceAccessor<&AllocationObject::AllocatedSize>("allocatedSize"),
        Base::template InstanceAccessor<&AllocationObject::Released>("released")};
    // A mapping's allocated size is its mapped length (whole pages).
    if (Kind::kNames.mapped) {
      properties.push_back(Base::template InstanceAccessor<&AllocationObject::AllocatedSize>("mappedLength"));
    }
    return Base::DefineClass(env, Kind::kNames.className, properties);
  }

  explicit AllocationObject(const Napi::CallbackInfo& info) : Base(info) {
    Napi::Env env = info.Env();
    AddonData& data = DataOf(env);
    Platform& platform = PlatformOf(env, *data.state);
    Failure failure;
    double bytes = 0;
    std::unique_ptr<Allocation> allocation = Kind::Make(env, info, platform, &failure, &bytes);
    if (!allocation) ThrowFailure(env, failure, Kind::kNames.argument, bytes);
    handle_.state = data.state;
    handle_.length = static_cast<double>(allocation->length());
    handle_.allocatedSize = static_cast<double>(allocation->allocatedSize());
    handle_.id = data.state->AddAllocation(env, std::move(allocation), Kind::kNames.mapped);
    handle_.released = false;
  }

  void Finalize(Napi::Env env) override { handle_.Collected(env); }

  AllocationHandle& handle() { return handle_; }

 private:
  Napi::Value Contents(const Napi::CallbackInfo& info) { return handle_.Contents(info, Kind::kNames.what); }
  Napi::Value DetachContents(const Napi::CallbackInfo& info) { return handle_.DetachContents(info, Kind::kNames.what); }
  Napi::Value NativeHandle(const Napi::CallbackInfo& info) { return handle_.NativeHandle(info, Kind::kNames.what); }
  void Release(const Napi::CallbackInfo& info) { handle_.Release(info, Kind::kNames.what); }
  Napi::Value Length(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), handle_.length); }
  Napi::Value AllocatedSize(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), handle_.allocatedSize);
  }
  Napi::Value Released(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), handle_.released); }

  AllocationHandle handle_;
};

using BufferHandle = AllocationObject<BufferKind>;
using MappedFileHandle = AllocationObject<MappedFileKind>;

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
                        InstanceAccessor<&ResidencySetHandle::MetalResidencySet>("metalResidencySet"),
                        InstanceAccessor<&ResidencySetHandle::Released>("released")});
  }

  // new NativeResidencySetHandle(): throws ERR_NUVEC_NATIVE_UNAVAILABLE when the device has no sets.
  explicit ResidencySetHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ResidencySetHandle>(info) {
    Napi::Env env = info.Env();
    AddonData& data = DataOf(env);
    Platform& platform = PlatformOf(env, *data.state);
    Failure failure;
    std::unique_ptr<ResidencySet> set = platform.newResidencySet(&failure);
    if (failure.failed()) ThrowFailure(env, failure, "residencySet", 0);  // no argument: never an argument failure today
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
  // The id<MTLResidencySet> as a BigInt (Metal), undefined elsewhere or once released.
  Napi::Value MetalResidencySet(const Napi::CallbackInfo& info) {
    ResidencySet* set = Find();
    uint64_t pointer = set ? PlatformOf(info.Env(), *state_).metalResidencySet(set) : 0;
    return pointer == 0 ? info.Env().Undefined() : Napi::BigInt::New(info.Env(), pointer);
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
  object.Set("quarantinedAllocations", static_cast<double>(counters.quarantinedAllocations));
  const FreedCounters& freed = *PlatformOf(env, state).freed;
  object.Set("buffersFreedByPlatform", static_cast<double>(freed.buffers.load()));
  object.Set("mappingsUnmappedByPlatform", static_cast<double>(freed.mappings.load()));
  object.Set("residencySetsFreedByPlatform", static_cast<double>(freed.residencySets.load()));
  return object;
}

Napi::Value LastWiringError(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string advice = PlatformOf(env, *DataOf(env).state).lastWiringError();
  return advice.empty() ? env.Undefined() : Napi::String::New(env, advice);
}

// A pointer given as a BigInt: a non-zero value that fits 64 bits (0 when optional and undefined).
uint64_t PointerArgument(Napi::Env env, const Napi::Value& value, const char* name, bool optional) {
  if (optional && value.IsUndefined()) return 0;
  if (!value.IsBigInt()) ThrowArgument(env, name, std::string(name) + " must be a pointer given as a bigint");
  bool lossless = false;
  uint64_t pointer = value.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless || pointer == 0) {
    ThrowArgument(env, name, std::string(name) + " must be a non-zero 64-bit pointer");
  }
  return pointer;
}

void AttachResidencySet(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  Platform& platform = PlatformOf(env, *data.state);
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data.residencySetConstructor.Value())) {
    ThrowArgument(env, "set", "set must be a residency set of this backend");
  }
  ResidencySet* set = ResidencySetHandle::Unwrap(info[0].As<Napi::Object>())->Live(env);
  uint64_t commandQueue = PointerArgument(env, info[1], "commandQueue", true);
  Failure failure;
  platform.attachResidencySet(set, commandQueue, &failure);
  if (failure.failed()) ThrowArgument(env, "commandQueue", failure.message);
}

// checkMetalDevice(device): throws an argument error unless device is the GPU the buffers come from.
void CheckMetalDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Platform& platform = PlatformOf(env, *DataOf(env).state);
  uint64_t device = PointerArgument(env, info[0], "device", false);
  Failure failure;
  if (!platform.checkMetalDevice(device, &failure)) ThrowArgument(env, "device", failure.message);
}

// Nothing: what a call across N-API costs, for the benchmark.
Napi::Value Noop(const Napi::CallbackInfo& info) { return info.Env().Undefined(); }

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  Failure failure;
  data->state->platform = CreatePlatform(&failure);
  data->state->platformFailure = failure;
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
  exports.Set("checkMetalDevice", Napi::Function::New<CheckMetalDevice>(env, "checkMetalDevice"));
  exports.Set("noop", Napi::Function::New<Noop>(env, "noop"));
  exports.Set("available", Napi::Boolean::New(env, static_cast<bool>(data->state->platform)));
  exports.Set("unavailableReason", Napi::String::New(env, failure.message));
  return exports;
}

}  // namespace nuvec

// The macro pastes the function's name into an identifier: it must be unqualified.
static Napi::Object InitNuvec(Napi::Env env, Napi::Object exports) { return nuvec::Init(env, exports); }
NODE_API_MODULE(nuvec_metal_native, InitNuvec)
