// The residency-set JS class (handles.h): Metal's add/remove/commit staging and residency requests, over
// the AddonState, which keeps the sets' members and the memory they hold.
#include <string>

#include "handles.h"

namespace nuvec {

Napi::Function ResidencySetHandle::Define(Napi::Env env) {
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

ResidencySetHandle::ResidencySetHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ResidencySetHandle>(info) {
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

void ResidencySetHandle::Finalize(Napi::Env) {
  if (state_) state_->FreeSet(id_);
}

ResidencySet* ResidencySetHandle::Live(Napi::Env env) {
  ResidencySet* set = Find();
  if (set == nullptr) throw MakeError(env, kReleased, "this residency set was released");
  return set;
}

AllocationHandle* ResidencySetHandle::Argument(const Napi::CallbackInfo& info) {
  AllocationHandle* handle = UnwrapAllocation(info.Env(), info[0]);
  if (handle == nullptr) ThrowArgument(info.Env(), "allocation", "allocation must be a buffer or a mapped file");
  return handle;
}

void ResidencySetHandle::Add(const Napi::CallbackInfo& info) {
  ResidencySet* set = Live(info.Env());
  AllocationHandle* handle = Argument(info);
  handle->Live(info.Env(), "allocation");
  state_->AddToSet(set, handle->id);
}

// A released allocation may be removed: the set holds it (and its memory) until the commit.
void ResidencySetHandle::Remove(const Napi::CallbackInfo& info) {
  ResidencySet* set = Live(info.Env());
  state_->RemoveFromSet(set, Argument(info)->id);
}

void ResidencySetHandle::Commit(const Napi::CallbackInfo& info) {
  state_->Commit(Live(info.Env()));
  state_->counters.commits += 1;
}

void ResidencySetHandle::RequestResidency(const Napi::CallbackInfo& info) {
  Live(info.Env())->requestResidency();
  state_->counters.residencyRequests += 1;
}

void ResidencySetHandle::EndResidency(const Napi::CallbackInfo& info) { Live(info.Env())->endResidency(); }

void ResidencySetHandle::Release(const Napi::CallbackInfo& info) {
  Live(info.Env());
  state_->FreeSet(id_);
}

// Getters answer after release too (0, no advice) rather than throw: they are read in reports.
ResidencySet* ResidencySetHandle::Find() { return state_ && !state_->tornDown ? state_->FindSet(id_) : nullptr; }

Napi::Value ResidencySetHandle::AllocatedSize(const Napi::CallbackInfo& info) {
  ResidencySet* set = Find();
  return Napi::Number::New(info.Env(), set ? static_cast<double>(set->allocatedSize()) : 0);
}

Napi::Value ResidencySetHandle::AllocationCount(const Napi::CallbackInfo& info) {
  ResidencySet* set = Find();
  return Napi::Number::New(info.Env(), set ? static_cast<double>(set->allocationCount()) : 0);
}

Napi::Value ResidencySetHandle::WiringFailures(const Napi::CallbackInfo& info) {
  ResidencySet* set = Find();
  if (set) wiringFailures_ = static_cast<double>(set->wiringFailures());
  return Napi::Number::New(info.Env(), wiringFailures_);
}

Napi::Value ResidencySetHandle::LastWiringError(const Napi::CallbackInfo& info) {
  ResidencySet* set = Find();
  std::string advice = set ? set->lastWiringError() : "";
  return advice.empty() ? info.Env().Undefined() : Napi::String::New(info.Env(), advice);
}

Napi::Value ResidencySetHandle::Released(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), Find() == nullptr);
}

// The id<MTLResidencySet> as a BigInt (Metal), undefined elsewhere or once released.
Napi::Value ResidencySetHandle::MetalResidencySet(const Napi::CallbackInfo& info) {
  ResidencySet* set = Find();
  uint64_t pointer = set ? PlatformOf(info.Env(), *state_).metalResidencySet(set) : 0;
  return pointer == 0 ? info.Env().Undefined() : Napi::BigInt::New(info.Env(), pointer);
}

}  // namespace nuvec
