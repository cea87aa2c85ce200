// The JS classes both addons share: a buffer and a mapped file (one template, AllocationObject<Kind>) and a
// residency set, over an AddonState (core/addon_state.h) per environment. The handles hold ids, never
// owning pointers: the state owns.
#ifndef NUVEC_NAPI_HANDLES_H_
#define NUVEC_NAPI_HANDLES_H_

#include <napi.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include "../core/addon_state.h"
#include "../core/stream_registry.h"
#include "errors.h"
#include "views.h"

namespace nuvec {

// What an addon adds to the shared classes. Its entry file sets these before InitCommon (addon.h).
struct BindingFeatures {
  // The devicePointer accessor on buffers and mapped files: the address of memory the CPU cannot address
  // (cuda-native). Off in metal-native, whose memory has a host address.
  bool devicePointers = false;
  // Whether the bytes of buffers count as external memory for V8 (napi_adjust_external_memory), so that
  // dropped handles are collected in time. True for host memory; off for device memory (cuda-native),
  // which is no pressure on the JavaScript heap: telling V8 of gigabytes of it only brings on full
  // collections at every large allocation.
  bool accountsExternalMemory = true;
};

// A view handed out: the ArrayBuffer held weakly, its id in the state's view records, and its length (a
// view is exactly the bytes asked for).
struct HandedOutView {
  std::unique_ptr<ViewRef> ref;
  uint64_t viewId;
  size_t length;
};

// The views handed out in one environment that may still be attached, by allocation id. Kept here rather
// than on the handles, so that the environment's teardown reaches the views of collected handles too.
// Shared: a view's finalizer holds it weakly and forgets its entry.
struct ViewRegistry {
  std::unordered_map<uint64_t, std::vector<HandedOutView>> byAllocation;
  // Views are V8 backing stores reporting to the state's ViewLedger (views.h), rather than Node-API
  // external ArrayBuffers with finalizers; then there is no teardown sentinel, and each handle lists its own
  // views (AllocationHandle::ownViews, counted here) instead of byAllocation.
  bool backingStores = false;
  size_t handleListed = 0;
  // The generation of the newest teardown sentinel (RenewTeardownSentinel): only its finalizer acts.
  uint64_t sentinel = 0;
  // The newest view id the sentinel covers (made before it), and how many views made since may still be
  // attached: the sentinel is renewed only while one may be (SecureNewViews), not once per view.
  uint64_t coveredUpTo = 0;
  uint64_t uncoveredAttached = 0;
};

// A view made after the sentinel stopped being attached as far as we know (detached by us, or finalized).
inline void UncoveredViewGone(ViewRegistry& views, uint64_t viewId) {
  if (viewId > views.coveredUpTo && views.uncoveredAttached > 0) views.uncoveredAttached -= 1;
}

class AllocationHandle;

// The calls made for every view (contents and its detaching) reach their handle through a slot, a number the
// JavaScript wrapper reads once, rather than through napi_unwrap, whose private-symbol lookup runs through
// V8's generic property lookup and was the largest single cost of a contents() call. A slot is an index in
// this table with a generation: a slot whose handle is gone (or a number that never was a slot) finds
// nothing, and a reused index answers only to its new generation.
class HandleSlots {
 public:
  // A slot for `handle`, until Remove().
  double Add(AllocationHandle* handle);
  void Remove(double slot);
  // The handle in `slot`, or nullptr.
  AllocationHandle* Find(double slot) const;

 private:
  struct Entry {
    AllocationHandle* handle = nullptr;
    uint32_t generation = 0;
  };
  static constexpr double kIndexSpan = 4294967296.0;  // 2^32: slot = generation * 2^32 + index
  static constexpr uint32_t kGenerations = 1u << 20;  // so that every slot is an exact double
  std::vector<Entry> entries_;
  std::vector<uint32_t> free_;
};

// Instance data of one environment (main thread or worker).
struct AddonData {
  std::shared_ptr<AddonState> state = std::make_shared<AddonState>();
  std::shared_ptr<ViewRegistry> views = std::make_shared<ViewRegistry>();
  // Shared with the handles, which leave it when they are destroyed (after the environment's data, at exit).
  std::shared_ptr<HandleSlots> slots = std::make_shared<HandleSlots>();
  BindingFeatures features;
  Napi::FunctionReference bufferConstructor;
  Napi::FunctionReference mappedFileConstructor;
  Napi::FunctionReference residencySetConstructor;
  // Streams, events and modules of this environment and the pins of their queued work (stream_handles.h).
  std::shared_ptr<StreamRegistry> registry = std::make_shared<StreamRegistry>(state);
  Napi::FunctionReference streamConstructor;
  Napi::FunctionReference eventConstructor;
  Napi::FunctionReference moduleConstructor;
  Napi::FunctionReference kernelConstructor;
  // Where stream work that completed on a worker thread is settled on this thread (promises resolved, pins
  // let go): made before the teardown hook, so that it still takes calls while the teardown stops the
  // streams. Referenced (keeping the event loop alive) only while completions are awaited.
  napi_threadsafe_function completions = nullptr;
  size_t awaitedCompletions = 0;
  // The latest teardown sentinel (RenewTeardownSentinel), held so that only the environment's cleanup
  // finalizes it.
  Napi::Reference<Napi::ArrayBuffer> teardownSentinel;
};

AddonData& DataOf(Napi::Env env);
// The platform, or ERR_NUVEC_NATIVE_UNAVAILABLE with the state's platformFailure.
Platform& PlatformOf(Napi::Env env, AddonState& state);
// `value` as an object of `constructor`'s class (a handle of this addon), else an ERR_NUVEC_INVALID_ARGUMENT
// naming `argument` with `message`.
Napi::Object HandleArgument(Napi::Env env, const Napi::Value& value, const Napi::FunctionReference& constructor,
                            const char* argument, const char* message);
// Detaches the views of allocation `id` still attached (telling the state) and forgets them all.
void DetachAllViews(napi_env env, ViewRegistry& views, AddonState& state, uint64_t id);
// Whether this environment is being torn down (worker or process exit).
bool EnvironmentStopping(napi_env env);
// Views made by Napi::ArrayBuffer::New are Node buffers: when the environment is torn down, Node detaches
// each one and calls its finalizer, newest first and before any cleanup hook (an N-API cleanup hook,
// synchronous or not, registered after a view still runs after it), whether or not its memory lives on in
// an ArrayBuffer moved out of the environment (transfer(), then postMessage). A finalizer called then
// cannot tell a view attached until that moment from a moved one, so it does nothing and the view counts
// as possibly moved. The sentinel, a one-byte buffer of the same kind held until the next, is newer than
// the views it covers: its finalizer runs first and records every view still attached here as dying with
// the environment, so that only the moved ones remain in doubt (their memory is abandoned, never freed).
// Nothing is detached then: V8 refuses that while a worker is being terminated.
//
// The sentinel costs what a view costs, so it is renewed only when a view made after it may still be
// attached: before the next view is made (SecureNewViews from contents()), and at the end of each job that
// made views (the binding's secureViews(), from a microtask). A loop that detaches each view before making
// the next renews none; a view made after the last renewal and still attached when a worker is terminated
// in the same job is in doubt, and its memory is abandoned (counted in abandonedBytes), never freed.
void RenewTeardownSentinel(Napi::Env env);
// Renews the sentinel when a view made after it may still be attached.
void SecureNewViews(Napi::Env env);

// What a buffer and a mapped-file object do, whichever they are (AllocationObject forwards to it).
class AllocationHandle {
 public:
  AllocationHandle() = default;
  AllocationHandle(const AllocationHandle&) = delete;
  AllocationHandle& operator=(const AllocationHandle&) = delete;
  ~AllocationHandle() {
    if (slots) slots->Remove(slot);
  }

  std::shared_ptr<AddonState> state;
  std::weak_ptr<ViewRegistry> views;
  // Backing stores: the views this handle made that may still be attached (Node-API: the registry's).
  std::vector<HandedOutView> ownViews;
  uint64_t id = 0;
  bool released = true;
  double length = 0;
  double allocatedSize = 0;
  // Its place in the environment's HandleSlots, once made; the word for it in messages.
  std::shared_ptr<HandleSlots> slots;
  double slot = -1;
  const char* what = "buffer";

  // Takes a slot in `data`'s table (the last step of making the handle).
  void TakeSlot(AddonData& data);

  // The allocation, or ERR_NUVEC_RELEASED ("this <what> was released").
  Allocation* Live(Napi::Env env, const char* what);
  // contents(length?): a view of the first `length` bytes (default: all of them, when `length` is undefined),
  // the same one while it is attached.
  Napi::Value Contents(Napi::Env env, const Napi::Value& length);
  Napi::Value NativeHandle(const Napi::CallbackInfo& info, const char* what);
  Napi::Value DetachContents(Napi::Env env);
  Napi::Value Read(Napi::Env env, const Napi::Value& offset, const Napi::Value& length, const Napi::Value& target);
  void Write(Napi::Env env, const Napi::Value& source, const Napi::Value& offset);
  Napi::Value DevicePointer(const Napi::CallbackInfo& info);
  void Release(const Napi::CallbackInfo& info, const char* what);
  // The handle was collected without release(): freed once no view reaches the memory (or no set holds it).
  void Collected();

 private:
  bool DetachViews(Napi::Env env);
};

// The handle behind a buffer or mapped-file object, or nullptr for anything else.
AllocationHandle* UnwrapAllocation(Napi::Env env, const Napi::Value& value);

// contentsOf(slot, length?), detachContentsOf(slot), readOf(slot, offset, length, target?) and
// writeOf(slot, source, offset): the handle's own calls, for the handle in `slot` (HandleSlots): what the
// wrappers call for every view and copy.
Napi::Value ContentsOfSlot(const Napi::CallbackInfo& info);
Napi::Value DetachContentsOfSlot(const Napi::CallbackInfo& info);
Napi::Value ReadOfSlot(const Napi::CallbackInfo& info);
void WriteOfSlot(const Napi::CallbackInfo& info);

// What tells a buffer handle from a mapped-file handle: the JS class's name, the word in error messages,
// the constructor's argument, whether it is a mapping, and how the allocation is made from the argument.
// Everything else is AllocationObject's.
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
                                          Failure* failure, double* bytes);
};

struct MappedFileKind {
  static constexpr KindNames kNames{"NativeMappedFileHandle", "mapped file", "path", true};
  // new NativeMappedFileHandle(path)
  static std::unique_ptr<Allocation> Make(Napi::Env env, const Napi::CallbackInfo& info, Platform& platform,
                                          Failure* failure, double* bytes);
};

// The JS class of a buffer or a mapped file: one implementation, the differences in Kind.
template <typename Kind>
class AllocationObject final : public Napi::ObjectWrap<AllocationObject<Kind>> {
  using Base = Napi::ObjectWrap<AllocationObject<Kind>>;

 public:
  static Napi::Function Define(Napi::Env env, const BindingFeatures& features) {
    std::vector<typename Base::PropertyDescriptor> properties = {
        Base::template InstanceMethod<&AllocationObject::Contents>("contents"),
        Base::template InstanceMethod<&AllocationObject::DetachContents>("detachContents"),
        Base::template InstanceMethod<&AllocationObject::NativeHandle>("nativeHandle"),
        Base::template InstanceMethod<&AllocationObject::Release>("release"),
        // Copies in and out on every addon: where the CPU can address the memory they cost no view (nothing
        // to detach when the buffer is cached); where it cannot, they are the only way to the bytes.
        Base::template InstanceMethod<&AllocationObject::Read>("read"),
        Base::template InstanceMethod<&AllocationObject::Write>("write"),
        Base::template InstanceAccessor<&AllocationObject::Length>("length"),
        Base::template InstanceAccessor<&AllocationObject::AllocatedSize>("allocatedSize"),
        Base::template InstanceAccessor<&AllocationObject::Released>("released"),
        Base::template InstanceAccessor<&AllocationObject::QuarantinedBytes>("quarantinedBytes"),
        Base::template InstanceAccessor<&AllocationObject::Slot>("slot")};
    // A mapping's allocated size is its mapped length (whole pages).
    if (Kind::kNames.mapped) {
      properties.push_back(Base::template InstanceAccessor<&AllocationObject::AllocatedSize>("mappedLength"));
    }
    if (features.devicePointers) {
      properties.push_back(Base::template InstanceAccessor<&AllocationObject::DevicePointer>("devicePointer"));
    }
    return Base::DefineClass(env, Kind::kNames.className, properties);
  }

  explicit AllocationObject(const Napi::CallbackInfo& info) : Base(info) {
    Napi::Env env = info.Env();
    AddonData& data = DataOf(env);
    Platform& platform = PlatformOf(env, *data.state);
    // new NativeBufferHandle(segment, offset, length): a range of a live buffer of this environment.
    if (!Kind::kNames.mapped && info.Length() == 3 && info[0].IsObject()) {
      AllocationHandle* parent = UnwrapAllocation(env, info[0]);
      if (parent == nullptr || parent->state != data.state || !info[0].As<Napi::Object>().InstanceOf(
                                                                     data.bufferConstructor.Value())) {
        ThrowArgument(env, "segment", "the segment must be a buffer of this addon");
      }
      Allocation* memory = parent->Live(env, "buffer");
      size_t offset = CheckRange(env, info[1], "offset", memory->length() - 1);
      size_t length = CheckRange(env, info[2], "length", memory->length() - offset);
      if (length == 0) ThrowArgument(env, "length", "a range has at least one byte");
      handle_.state = data.state;
      handle_.views = data.views;
      handle_.length = static_cast<double>(length);
      handle_.allocatedSize = static_cast<double>(length);
      handle_.id = data.state->AddRange(parent->id, offset, length);
      handle_.released = false;
      handle_.what = Kind::kNames.what;
      handle_.TakeSlot(data);
      return;
    }
    data.state->SettleEndedViews();  // memory views let go of since the last call is freed first
    data.registry->Settle();          // and memory that completed stream work held
    Failure failure;
    double bytes = 0;
    std::unique_ptr<Allocation> allocation = Kind::Make(env, info, platform, &failure, &bytes);
    if (!allocation) ThrowFailure(env, failure, Kind::kNames.argument, bytes);
    handle_.state = data.state;
    handle_.views = data.views;
    handle_.length = static_cast<double>(allocation->length());
    handle_.allocatedSize = static_cast<double>(allocation->allocatedSize());
    handle_.id = data.state->AddAllocation(std::move(allocation), Kind::kNames.mapped);
    handle_.released = false;
    handle_.what = Kind::kNames.what;
    handle_.TakeSlot(data);
  }

  void Finalize(Napi::Env) override { handle_.Collected(); }

  AllocationHandle& handle() { return handle_; }

 private:
  Napi::Value Contents(const Napi::CallbackInfo& info) { return handle_.Contents(info.Env(), info[0]); }
  Napi::Value DetachContents(const Napi::CallbackInfo& info) { return handle_.DetachContents(info.Env()); }
  Napi::Value NativeHandle(const Napi::CallbackInfo& info) { return handle_.NativeHandle(info, Kind::kNames.what); }
  Napi::Value Read(const Napi::CallbackInfo& info) { return handle_.Read(info.Env(), info[0], info[1], info[2]); }
  void Write(const Napi::CallbackInfo& info) { handle_.Write(info.Env(), info[0], info[1]); }
  Napi::Value DevicePointer(const Napi::CallbackInfo& info) { return handle_.DevicePointer(info); }
  void Release(const Napi::CallbackInfo& info) { handle_.Release(info, Kind::kNames.what); }
  Napi::Value Length(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), handle_.length); }
  Napi::Value AllocatedSize(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), handle_.allocatedSize);
  }
  Napi::Value Released(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), handle_.released); }
  Napi::Value Slot(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), handle_.slot); }
  // After release: the bytes still held for a view moved away (0 once it is collected, and while live).
  Napi::Value QuarantinedBytes(const Napi::CallbackInfo& info) {
    bool held = handle_.released && handle_.state && !handle_.state->tornDown;
    if (held) handle_.state->SettleEndedViews();
    return Napi::Number::New(info.Env(),
                             held ? static_cast<double>(handle_.state->QuarantinedBytes(handle_.id)) : 0.0);
  }

  AllocationHandle handle_;
};

using BufferHandle = AllocationObject<BufferKind>;
using MappedFileHandle = AllocationObject<MappedFileKind>;

// The handle behind a buffer or mapped-file object, or nullptr for anything else.
AllocationHandle* UnwrapAllocation(Napi::Env env, const Napi::Value& value);

class ResidencySetHandle final : public Napi::ObjectWrap<ResidencySetHandle> {
 public:
  static Napi::Function Define(Napi::Env env);
  // new NativeResidencySetHandle(): throws ERR_NUVEC_NATIVE_UNAVAILABLE when the device has no sets.
  explicit ResidencySetHandle(const Napi::CallbackInfo& info);
  void Finalize(Napi::Env env) override;
  // The set, or ERR_NUVEC_RELEASED.
  ResidencySet* Live(Napi::Env env);

 private:
  AllocationHandle* Argument(const Napi::CallbackInfo& info);
  void Add(const Napi::CallbackInfo& info);
  void Remove(const Napi::CallbackInfo& info);
  void Commit(const Napi::CallbackInfo& info);
  void RequestResidency(const Napi::CallbackInfo& info);
  void EndResidency(const Napi::CallbackInfo& info);
  void Release(const Napi::CallbackInfo& info);
  ResidencySet* Find();
  Napi::Value AllocatedSize(const Napi::CallbackInfo& info);
  Napi::Value AllocationCount(const Napi::CallbackInfo& info);
  Napi::Value WiringFailures(const Napi::CallbackInfo& info);
  Napi::Value LastWiringError(const Napi::CallbackInfo& info);
  Napi::Value Released(const Napi::CallbackInfo& info);
  Napi::Value MetalResidencySet(const Napi::CallbackInfo& info);

  std::shared_ptr<AddonState> state_;
  uint64_t id_ = 0;
  double wiringFailures_ = 0;  // the count as last read, still answered after release
};

}  // namespace nuvec

#endif  // NUVEC_NAPI_HANDLES_H_
