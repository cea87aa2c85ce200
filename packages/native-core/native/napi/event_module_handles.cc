// The event, module and kernel JS classes (stream_handles.h).
#include <string>
#include <utility>

#include "stream_handles.h"

namespace nuvec {

namespace {
uint64_t IdArgument(const Napi::CallbackInfo& info, size_t index) {
  return static_cast<uint64_t>(info[index].As<Napi::Number>().DoubleValue());
}
}  // namespace

Napi::Function EventHandle::Define(Napi::Env env) {
  return DefineClass(env, "NativeEventHandle",
                     {InstanceMethod<&EventHandle::Query>("query"), InstanceMethod<&EventHandle::Done>("done"),
                      InstanceMethod<&EventHandle::Synchronize>("synchronize"),
                      InstanceMethod<&EventHandle::Release>("release"),
                      InstanceAccessor<&EventHandle::Released>("released")});
}

EventHandle::EventHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EventHandle>(info) {
  if (!IsConstructToken(info[0])) ThrowArgument(info.Env(), "this", "events are made by a stream's record()");
  registry_ = DataOf(info.Env()).registry;
  id_ = IdArgument(info, 1);
  stream_ = IdArgument(info, 2);
  released_ = false;
}

void EventHandle::Finalize(Napi::Env) {
  if (!released_) registry_->FreeEvent(id_);
}

Event* EventHandle::Live(Napi::Env env) {
  Event* event = released_ ? nullptr : registry_->FindEvent(id_);
  if (event == nullptr) throw MakeError(env, kReleased, "this event was released");
  return event;
}

Napi::Value EventHandle::Query(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Failure failure;
  bool completed = Live(env)->query(&failure);
  registry_->Settle();
  if (failure.failed()) ThrowFailure(env, failure, "event", 0);
  return Napi::Boolean::New(env, completed);
}

// A promise that settles once the event completed: at once when it has, else with a notify on its stream
// (which runs after the event), asking the event itself then, so that only its own failure rejects it.
Napi::Value EventHandle::Done(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Event* event = Live(env);
  Failure failure;
  Stream* stream = registry_->FindStream(stream_);
  if (event->query(&failure) || failure.failed() || stream == nullptr) {
    if (stream == nullptr && !failure.failed()) event->synchronize(&failure);  // released: it ran or was dropped
    auto deferred = Napi::Promise::Deferred::New(env);
    if (failure.failed()) {
      deferred.Reject(FailureError(env, failure, "event", 0).Value());
    } else {
      deferred.Resolve(env.Undefined());
    }
    return deferred.Promise();
  }
  std::shared_ptr<StreamRegistry> registry = registry_;
  uint64_t id = id_;
  return NotifyPromise(env, stream, [registry, id](Napi::Env env, const Failure&, Napi::Promise::Deferred& deferred) {
    Failure own;
    Event* found = registry->FindEvent(id);
    if (found != nullptr) found->query(&own);
    if (own.failed()) {
      deferred.Reject(FailureError(env, own, "event", 0).Value());
    } else {
      deferred.Resolve(env.Undefined());
    }
  });
}

void EventHandle::Synchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Failure failure;
  bool completed = Live(env)->synchronize(&failure);
  registry_->Settle();
  if (!completed) ThrowFailure(env, failure, "event", 0);
}

void EventHandle::Release(const Napi::CallbackInfo& info) {
  Live(info.Env());
  released_ = true;
  registry_->FreeEvent(id_);
}

Napi::Value EventHandle::Released(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), released_ || registry_->FindEvent(id_) == nullptr);
}

Napi::Function ModuleHandle::Define(Napi::Env env) {
  return DefineClass(env, "NativeModuleHandle",
                     {InstanceMethod<&ModuleHandle::Kernel>("kernel"),
                      InstanceMethod<&ModuleHandle::Release>("release"),
                      InstanceAccessor<&ModuleHandle::KernelNames>("kernelNames"),
                      InstanceAccessor<&ModuleHandle::Released>("released")});
}

ModuleHandle::ModuleHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModuleHandle>(info) {
  if (!IsConstructToken(info[0])) ThrowArgument(info.Env(), "this", "modules are made by loadModule()");
  registry_ = DataOf(info.Env()).registry;
  id_ = IdArgument(info, 1);
  released_ = false;
}

void ModuleHandle::Finalize(Napi::Env) {
  // Its kernels' handles hold no module: a kernel launched later finds it released. Queued launches pin it.
  if (!released_) registry_->ReleaseModule(id_);
}

Module* ModuleHandle::Live(Napi::Env env) {
  Module* module = released_ ? nullptr : registry_->FindModule(id_);
  if (module == nullptr) throw MakeError(env, kReleased, "this module was released");
  return module;
}

// kernel(name, parameters?): parameters as kind names ("buffer", "f32", ...).
Napi::Value ModuleHandle::Kernel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Module* module = Live(env);
  if (!info[0].IsString()) ThrowArgument(env, "name", "name must be a string");
  std::string name = info[0].As<Napi::String>().Utf8Value();
  std::vector<ParameterKind> declared;
  bool hasDeclared = !info[1].IsUndefined();
  if (hasDeclared) {
    if (!info[1].IsArray()) ThrowArgument(env, "parameters", "parameters must be an array of kinds");
    Napi::Array kinds = info[1].As<Napi::Array>();
    for (uint32_t i = 0; i < kinds.Length(); ++i) {
      std::string kind = kinds.Get(i).IsString() ? kinds.Get(i).As<Napi::String>().Utf8Value() : "";
      size_t found = 0;
      while (found < 7 && kind != kParameterKindNames[found]) found += 1;
      if (found == 7) ThrowArgument(env, "parameters", "parameter " + std::to_string(i) + " is no kernel parameter kind");
      declared.push_back(static_cast<ParameterKind>(found));
    }
  }
  Failure failure;
  nuvec::Kernel* kernel = module->kernel(name, hasDeclared ? &declared : nullptr, &failure);
  if (kernel == nullptr) {
    if (failure.kind == Failure::Kind::kFormat) throw MakeError(env, kKernelNotFound, failure.message);
    ThrowFailure(env, failure, "parameters", 0);
  }
  return MakeHandle(env, DataOf(env).kernelConstructor,
                    {Napi::Number::New(env, static_cast<double>(id_)), Napi::External<nuvec::Kernel>::New(env, kernel)});
}

Napi::Value ModuleHandle::KernelNames(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Module* module = released_ ? nullptr : registry_->FindModule(id_);
  if (module != nullptr && !module->listsKernels()) return env.Undefined();
  std::vector<std::string> names = module ? module->kernelNames() : std::vector<std::string>{};
  Napi::Array array = Napi::Array::New(env, names.size());
  for (size_t i = 0; i < names.size(); ++i) array.Set(static_cast<uint32_t>(i), names[i]);
  return array;
}

void ModuleHandle::Release(const Napi::CallbackInfo& info) {
  Live(info.Env());
  released_ = true;
  registry_->ReleaseModule(id_);
}

Napi::Value ModuleHandle::Released(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), released_ || registry_->FindModule(id_) == nullptr);
}

Napi::Function KernelHandle::Define(Napi::Env env) {
  return DefineClass(env, "NativeKernelHandle",
                     {InstanceAccessor<&KernelHandle::Name>("name"),
                      InstanceAccessor<&KernelHandle::Parameters>("parameters")});
}

KernelHandle::KernelHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<KernelHandle>(info) {
  if (!IsConstructToken(info[0])) ThrowArgument(info.Env(), "this", "kernels are made by a module's kernel()");
  registry_ = DataOf(info.Env()).registry;
  module_ = IdArgument(info, 1);
  kernel_ = info[2].As<Napi::External<nuvec::Kernel>>().Data();
}

nuvec::Kernel* KernelHandle::Live(Napi::Env env) {
  // The kernel belongs to its module: valid while the module is not released.
  if (registry_->FindModule(module_) == nullptr) throw MakeError(env, kReleased, "the module of this kernel was released");
  return kernel_;
}

Napi::Value KernelHandle::Name(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), Live(info.Env())->name());
}

Napi::Value KernelHandle::Parameters(const Napi::CallbackInfo& info) {
  const std::vector<ParameterKind>& kinds = Live(info.Env())->parameters();
  Napi::Array array = Napi::Array::New(info.Env(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    array.Set(static_cast<uint32_t>(i), kParameterKindNames[static_cast<size_t>(kinds[i])]);
  }
  return array;
}

}  // namespace nuvec
