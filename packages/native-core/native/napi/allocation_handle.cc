// What a buffer or mapped-file object does (handles.h): views, their detaching, copies, nativeHandle(),
// release. The ownership decisions are AddonState's; this file turns JavaScript events into its calls.
#include <algorithm>
#include <string>

#include "handles.h"

namespace nuvec {

namespace {
// What a Node-API view's finalizer needs: the state may be gone by then (weak), and the allocation may have
// been freed by release() (looked up by id). `creating` while napi_create_external_arraybuffer runs: Node
// calls the finalizer at once when it refuses the buffer, and the creator, which owns the hint until it
// succeeds, frees it then.
struct ViewHint {
  std::weak_ptr<AddonState> state;
  std::weak_ptr<ViewRegistry> views;
  uint64_t id;
  uint64_t viewId;
  bool creating = true;
};

// The view's entry in the environment's list is of no more use once its finalizer ran.
// Counted as gone only when it was still listed (a view we detached was counted then, and unlisted).
void ForgetView(ViewRegistry& views, uint64_t id, uint64_t viewId) {
  auto found = views.byAllocation.find(id);
  if (found == views.byAllocation.end()) return;
  std::vector<HandedOutView>& list = found->second;
  auto gone = std::remove_if(list.begin(), list.end(), [viewId](auto& view) { return view.viewId == viewId; });
  if (gone != list.end()) UncoveredViewGone(views, viewId);
  list.erase(gone, list.end());
  if (list.empty()) views.byAllocation.erase(found);
}

void FinalizeNodeApiView(napi_env env, void*, void* data) {
  auto* hint = static_cast<ViewHint*>(data);
  if (hint->creating) return;  // refused while being made: the creator frees the hint
  std::unique_ptr<ViewHint> owned(hint);
  // While the environment stops, Node calls this for moved views too (RenewTeardownSentinel): the view
  // stays on record as possibly reachable.
  if (EnvironmentStopping(env)) return;
  if (auto views = owned->views.lock()) ForgetView(*views, owned->id, owned->viewId);
  if (auto state = owned->state.lock()) state->ViewCollected(owned->id, owned->viewId);
}

// A Node-API view, held by a weak napi_ref.
class NodeApiViewRef final : public ViewRef {
 public:
  NodeApiViewRef(napi_env env, napi_value buffer) : env_(env) { napi_create_reference(env, buffer, 0, &ref_); }
  ~NodeApiViewRef() override {
    if (ref_ != nullptr) napi_delete_reference(env_, ref_);
  }
  napi_value Attached(napi_env env) override {
    napi_value buffer = nullptr;
    if (ref_ == nullptr || napi_get_reference_value(env, ref_, &buffer) != napi_ok || buffer == nullptr) return nullptr;
    bool detached = true;
    if (napi_is_detached_arraybuffer(env, buffer, &detached) != napi_ok || detached) return nullptr;
    return buffer;
  }
  bool Detach(napi_env env) override {
    napi_value buffer = Attached(env);
    return buffer != nullptr && napi_detach_arraybuffer(env, buffer) == napi_ok;
  }

 private:
  napi_ref ref_ = nullptr;
  napi_env env_ = nullptr;
};

// A Node-API view (views.h) of `length` bytes at `memory`, recorded as view `viewId`; nullptr when Node
// refuses (the record is then the caller's to drop).
std::unique_ptr<ViewRef> MakeNodeApiView(napi_env env, AddonData& data, const std::shared_ptr<AddonState>& state,
                                         uint64_t id, void* memory, size_t length, uint64_t viewId,
                                         napi_value* result) {
  // Owned here until Node has it: freed on every refusal, whether or not Node called the finalizer.
  auto hint = std::make_unique<ViewHint>(ViewHint{state, data.views, id, viewId});
  napi_status status = napi_create_external_arraybuffer(env, memory, length, FinalizeNodeApiView, hint.get(), result);
  if (status != napi_ok || *result == nullptr) return nullptr;
  hint->creating = false;
  static_cast<void>(hint.release());  // the finalizer's from now on
  return std::make_unique<NodeApiViewRef>(env, *result);
}
}  // namespace

Allocation* AllocationHandle::Live(Napi::Env env, const char* what) {
  Allocation* allocation = released || state->tornDown ? nullptr : state->FindAllocation(id);
  if (allocation == nullptr) throw MakeError(env, kReleased, std::string("this ") + what + " was released");
  return allocation;
}

double HandleSlots::Add(AllocationHandle* handle) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  entries_[index].handle = handle;
  return static_cast<double>(entries_[index].generation) * kIndexSpan + index;
}

void HandleSlots::Remove(double slot) {
  if (Find(slot) == nullptr) return;
  auto index = static_cast<uint32_t>(static_cast<uint64_t>(slot));
  Entry& entry = entries_[index];
  entry.handle = nullptr;
  entry.generation = (entry.generation + 1) % kGenerations;
  free_.push_back(index);
}

AllocationHandle* HandleSlots::Find(double slot) const {
  // NaN, negatives and numbers past the last generation are no slots; nor are fractions, which the
  // conversion to an integer would round down (a comparison, not a call of floor()).
  if (!(slot >= 0) || slot >= static_cast<double>(kGenerations) * kIndexSpan) return nullptr;
  auto value = static_cast<uint64_t>(slot);
  if (static_cast<double>(value) != slot) return nullptr;
  uint64_t index = value & 0xffffffffu;
  uint64_t generation = value >> 32;
  if (index >= entries_.size() || entries_[index].generation != generation) return nullptr;
  return entries_[index].handle;
}

void AllocationHandle::TakeSlot(AddonData& data) {
  slots = data.slots;
  slot = slots->Add(this);
}

namespace {

// The handle in the slot given as the first argument, or ERR_NUVEC_INVALID_ARGUMENT.
AllocationHandle& HandleInSlot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  double slot = -1;
  AllocationHandle* handle = nullptr;
  if (napi_get_value_double(env, info[0], &slot) == napi_ok) handle = DataOf(env).slots->Find(slot);
  if (handle == nullptr) ThrowArgument(env, "slot", "slot must be the slot of a live buffer or mapped file of this addon");
  return *handle;
}

}  // namespace

Napi::Value ContentsOfSlot(const Napi::CallbackInfo& info) {
  return HandleInSlot(info).Contents(info.Env(), info[1]);
}

Napi::Value DetachContentsOfSlot(const Napi::CallbackInfo& info) {
  return HandleInSlot(info).DetachContents(info.Env());
}

Napi::Value ReadOfSlot(const Napi::CallbackInfo& info) {
  return HandleInSlot(info).Read(info.Env(), info[1], info[2], info[3]);
}

void WriteOfSlot(const Napi::CallbackInfo& info) { HandleInSlot(info).Write(info.Env(), info[1], info[2]); }

Napi::Value AllocationHandle::Contents(Napi::Env env, const Napi::Value& lengthArgument) {
  Allocation* allocation = Live(env, what);
  if (allocation->data() == nullptr) {
    throw MakeError(env, kNotHostVisible,
                    std::string("contents(): this ") + what +
                        " is device memory, which the CPU cannot address: copy with read() and write()");
  }
  size_t length = allocation->length();
  if (!lengthArgument.IsUndefined()) {
    length = CheckRange(env, lengthArgument, "length", allocation->length());
    if (length == 0) ThrowArgument(env, "length", "a view has at least one byte");
  }
  AddonData& data = DataOf(env);
  ViewRegistry& registry = *data.views;
  state->SettleEndedViews();
  // Backing stores: the handle's own list (nothing else needs it). Node-API: the environment's, which its
  // teardown reaches.
  std::vector<HandedOutView>& views = registry.backingStores ? ownViews : registry.byAllocation[id];
  // The same ArrayBuffer while it lives: a new one costs a native object and a weak handle.
  for (auto& view : views) {
    if (view.length != length) continue;
    if (napi_value buffer = view.ref->Attached(env)) return Napi::Value(env, buffer);
  }
  // Collected or detached ones are forgotten here; the state still knows of them until they end.
  size_t listed = views.size();
  views.erase(std::remove_if(views.begin(), views.end(), [env](auto& view) { return view.ref->Attached(env) == nullptr; }),
              views.end());
  if (registry.backingStores) registry.handleListed -= listed - views.size();
  // Node-API: the views made since the sentinel that are still attached are covered before this one is made.
  if (!registry.backingStores) SecureNewViews(env);
  uint64_t viewId = state->ViewCreated(id);
  napi_value buffer = nullptr;
  std::unique_ptr<ViewRef> ref =
      registry.backingStores
          ? MakeBackingStoreView(env, allocation->data(), length, state->viewLedger, id, viewId, &buffer)
          : MakeNodeApiView(env, data, state, id, allocation->data(), length, viewId, &buffer);
  if (!ref) {
    // No view exists: its record goes (a backing store made and dropped reports its own end too), and what
    // the engine threw (Node-API refuses buffers over its limit, 4 GiB on Node.js 20) becomes our error.
    state->ViewDetachedByUs(id, viewId);
    state->SettleEndedViews();
    std::string why = "the JavaScript engine refused it";
    napi_value pending = nullptr;
    if (napi_get_and_clear_last_exception(env, &pending) == napi_ok && pending != nullptr) {
      Napi::Value thrown(env, pending);
      if (thrown.IsObject()) {
        Napi::Value message = thrown.As<Napi::Object>().Get("message");
        if (message.IsString()) why = message.As<Napi::String>().Utf8Value();
      }
    }
    Napi::Error error = MakeError(env, kAllocationFailed,
                                  "contents(): no view of " + std::to_string(length) + " bytes could be made (" +
                                      why + ")");
    error.Set("bytes", Napi::Number::New(env, static_cast<double>(length)));
    throw error;
  }
  if (registry.backingStores) {
    ownViews.push_back(HandedOutView{std::move(ref), viewId, length});
    registry.handleListed += 1;
  } else {
    // Looked up again: a finalizer run meanwhile may have erased the allocation's entry.
    registry.byAllocation[id].push_back(HandedOutView{std::move(ref), viewId, length});
    registry.uncoveredAttached += 1;
  }
  return Napi::Value(env, buffer);
}

// Where the memory is, for a runtime's native code: { platform, address (when the CPU can address it), and
// the layer's own fields (Metal: metalBuffer, gpuAddress; CUDA: devicePointer) }, pointers as BigInts.
// Nothing is retained: valid until release.
Napi::Value AllocationHandle::NativeHandle(const Napi::CallbackInfo& info, const char* what) {
  Napi::Env env = info.Env();
  Allocation* allocation = Live(env, what);
  Napi::Object handle = Napi::Object::New(env);
  handle.Set("platform", Napi::String::New(env, PlatformOf(env, *state).facts().platform));
  if (allocation->data() != nullptr) {
    uint64_t address = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(allocation->data()));
    handle.Set("address", Napi::BigInt::New(env, address));
  }
  for (const NativeField& field : allocation->nativeFields()) {
    handle.Set(field.name, Napi::BigInt::New(env, field.value));
  }
  return handle;
}

void DetachAllViews(napi_env env, ViewRegistry& views, AddonState& state, uint64_t id) {
  auto found = views.byAllocation.find(id);
  if (found != views.byAllocation.end()) {
    for (auto& view : found->second) {
      if (!view.ref->Detach(env)) continue;
      // Nothing reaches the memory through it now.
      state.ViewDetachedByUs(id, view.viewId);
      UncoveredViewGone(views, view.viewId);
    }
    views.byAllocation.erase(found);
  }
  state.SettleEndedViews();
}

// Detaches every view handed out: each reads byteLength 0 from now on, never a later owner's bytes. A view
// we could not detach (already detached by someone else: transfer()) may live on in another ArrayBuffer,
// so the memory is quarantined (see addon_state.h). Returns whether a view escaped and still exists: such
// an allocation must never be reused.
bool AllocationHandle::DetachViews(Napi::Env env) {
  ViewRegistry& registry = *DataOf(env).views;
  if (registry.backingStores) {
    // A backing store says itself whether it lives on elsewhere (its deleter ran, or the view escaped).
    for (auto& view : ownViews) view.ref->Detach(env);
    registry.handleListed -= ownViews.size();
    ownViews.clear();
    state->SettleEndedViews();
  } else {
    DetachAllViews(env, registry, *state, id);
  }
  return state->SettleViews(id);
}

Napi::Value AllocationHandle::DetachContents(Napi::Env env) {
  Live(env, what);
  return Napi::Boolean::New(env, DetachViews(env));
}

// read(offset, length): a new ArrayBuffer with a copy of the bytes.
// read(offset, length[, target]): into `target` (an ArrayBuffer of at least `length` bytes, from its start)
// when given, else into a new ArrayBuffer; returns the one written.
Napi::Value AllocationHandle::Read(Napi::Env env, const Napi::Value& offsetArgument, const Napi::Value& lengthArgument,
                                   const Napi::Value& targetArgument) {
  Allocation* allocation = Live(env, what);
  size_t offset = CheckRange(env, offsetArgument, "offset", allocation->length());
  size_t length = CheckRange(env, lengthArgument, "length", allocation->length() - offset);
  Napi::ArrayBuffer target;
  if (targetArgument.IsUndefined()) {
    target = Napi::ArrayBuffer::New(env, length);
  } else {
    if (!targetArgument.IsArrayBuffer()) ThrowArgument(env, "target", "target must be an ArrayBuffer");
    target = targetArgument.As<Napi::ArrayBuffer>();
    if (target.ByteLength() < length) {
      ThrowArgument(env, "target", "target (" + std::to_string(target.ByteLength()) + " bytes) cannot hold " +
                                       std::to_string(length) + " bytes");
    }
  }
  Failure failure;
  if (!allocation->copyOut(offset, target.Data(), length, &failure)) ThrowFailure(env, failure, "length", 0);
  return target;
}

// write(source, offset): source is an ArrayBuffer or any ArrayBuffer view.
void AllocationHandle::Write(Napi::Env env, const Napi::Value& sourceArgument, const Napi::Value& offsetArgument) {
  Allocation* allocation = Live(env, what);
  const void* data = nullptr;
  size_t bytes = 0;
  if (sourceArgument.IsArrayBuffer()) {
    Napi::ArrayBuffer source = sourceArgument.As<Napi::ArrayBuffer>();
    data = source.Data();
    bytes = source.ByteLength();
  } else if (sourceArgument.IsTypedArray()) {
    Napi::TypedArray source = sourceArgument.As<Napi::TypedArray>();
    data = static_cast<const char*>(source.ArrayBuffer().Data()) + source.ByteOffset();
    bytes = source.ByteLength();
  } else if (sourceArgument.IsDataView()) {
    Napi::DataView source = sourceArgument.As<Napi::DataView>();
    data = static_cast<const char*>(source.ArrayBuffer().Data()) + source.ByteOffset();
    bytes = source.ByteLength();
  } else {
    ThrowArgument(env, "source", "source must be an ArrayBuffer or an ArrayBuffer view");
  }
  size_t offset = CheckRange(env, offsetArgument, "offset", allocation->length());
  if (bytes > allocation->length() - offset) {
    ThrowArgument(env, "source",
                  "source (" + std::to_string(bytes) + " bytes) does not fit at offset " + std::to_string(offset) +
                      " of " + std::to_string(allocation->length()) + " bytes");
  }
  Failure failure;
  if (!allocation->copyIn(offset, data, bytes, &failure)) ThrowFailure(env, failure, "source", 0);
}

// The device address as a BigInt, or undefined when there is none (a mapped file not wired) or released.
Napi::Value AllocationHandle::DevicePointer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Allocation* allocation = released || state->tornDown ? nullptr : state->FindAllocation(id);
  if (allocation == nullptr || allocation->devicePointer() == 0) return env.Undefined();
  return Napi::BigInt::New(env, static_cast<uint64_t>(allocation->devicePointer()));
}

void AllocationHandle::Release(const Napi::CallbackInfo& info, const char* what) {
  Live(info.Env(), what);
  // Detach first: no view may outlive the memory (an escaped one keeps it, quarantined).
  DetachViews(info.Env());
  released = true;
  DataOf(info.Env()).views->byAllocation.erase(id);
  state->HandleDone(id, true);
}

void AllocationHandle::Collected() {
  // The list of a collected handle's views goes (a backing store's end still comes through the ledger).
  if (auto registry = views.lock()) registry->handleListed -= ownViews.size();
  ownViews.clear();
  if (!released && state) {
    state->SettleEndedViews();
    state->HandleDone(id, false);
  }
  released = true;
}

std::unique_ptr<Allocation> BufferKind::Make(Napi::Env env, const Napi::CallbackInfo& info, Platform& platform,
                                             Failure* failure, double* bytes) {
  size_t checked = CheckBytes(env, info[0], platform.facts().maxBufferLength);
  *bytes = static_cast<double>(checked);
  return platform.newBuffer(checked, failure);
}

std::unique_ptr<Allocation> MappedFileKind::Make(Napi::Env env, const Napi::CallbackInfo& info, Platform& platform,
                                                 Failure* failure, double*) {
  return platform.mapFile(CheckPath(env, info[0]), failure);
}

AllocationHandle* UnwrapAllocation(Napi::Env env, const Napi::Value& value) {
  if (!value.IsObject()) return nullptr;
  AddonData& data = DataOf(env);
  Napi::Object object = value.As<Napi::Object>();
  if (object.InstanceOf(data.bufferConstructor.Value())) return &BufferHandle::Unwrap(object)->handle();
  if (object.InstanceOf(data.mappedFileConstructor.Value())) return &MappedFileHandle::Unwrap(object)->handle();
  return nullptr;
}

}  // namespace nuvec
