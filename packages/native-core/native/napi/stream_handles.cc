// The stream JS class and the exports of streams (stream_handles.h): enqueueing with pins, promises settled
// through the environment's completions function.
#include "stream_handles.h"

#include <cstring>
#include <string>
#include <utility>

namespace nuvec {

namespace {

// What the handles' constructors are given by their makers, so that `new` from JavaScript is refused.
char constructToken = 0;

void RunCompletion(napi_env env, napi_value, void*, void* data) {
  std::unique_ptr<Completion> completion(static_cast<Completion*>(data));
  if (env == nullptr) return;  // the environment is gone: only freed
  // Torn down (streams stopped, their dropped work posted here): no promise is settled on the way out.
  AddonData* instance = nullptr;
  if (napi_get_instance_data(env, reinterpret_cast<void**>(&instance)) != napi_ok || instance == nullptr ||
      instance->state->tornDown) {
    return;
  }
  try {
    Napi::HandleScope scope(env);
    (*completion)(env);
  } catch (const Napi::Error&) {
    // Nothing can be thrown from here; a promise that could not be settled stays pending.
  }
}

StreamPlatform& StreamsOf(Napi::Env env) {
  AddonData& data = DataOf(env);
  Platform& platform = PlatformOf(env, *data.state);
  std::string why;
  StreamPlatform* streams = platform.streams(&why);
  if (streams == nullptr) throw MakeError(env, kUnavailable, why);
  return *streams;
}

// The allocation handle `value` of this environment, else ERR_NUVEC_INVALID_ARGUMENT naming `argument`.
AllocationHandle* AllocationOf(Napi::Env env, const Napi::Value& value, const char* argument) {
  AllocationHandle* handle = UnwrapAllocation(env, value);
  if (handle == nullptr || handle->state != DataOf(env).state) {
    ThrowArgument(env, argument, std::string(argument) + " must be a buffer or mapped file of this addon");
  }
  return handle;
}

// newStream(): a stream of the platform.
Napi::Value NewStream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  StreamPlatform& streams = StreamsOf(env);
  data.registry->Settle();
  Failure failure;
  std::unique_ptr<Stream> stream = streams.newStream(&failure);
  if (!stream) ThrowFailure(env, failure, "stream", 0);
  uint64_t id = data.registry->AddStream(std::move(stream));
  try {
    return data.streamConstructor.New({Napi::External<char>::New(env, &constructToken), Napi::Number::New(env, static_cast<double>(id))});
  } catch (...) {
    data.registry->FreeStream(id);
    throw;
  }
}

// loadModule(kind, text, options?): kind "host" (text: a library's path), "cuda" (CUDA C source), "ptx" or
// "metal" (MSL source); options: strings (NVRTC's).
Napi::Value LoadModule(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonData& data = DataOf(env);
  StreamPlatform& streams = StreamsOf(env);
  if (!info[0].IsString()) ThrowArgument(env, "kind", "kind must be a string");
  std::string kind = info[0].As<Napi::String>().Utf8Value();
  ModuleSource source;
  if (kind == "host") {
    source.kind = ModuleSource::Kind::kHostLibrary;
    source.text = CheckPath(env, info[1]);
  } else if (kind == "cuda" || kind == "ptx" || kind == "metal") {
    source.kind = kind == "cuda" ? ModuleSource::Kind::kCudaSource
                  : kind == "ptx" ? ModuleSource::Kind::kPtx
                                  : ModuleSource::Kind::kMetalSource;
    if (!info[1].IsString()) ThrowArgument(env, "source", "the source must be a string");
    source.text = info[1].As<Napi::String>().Utf8Value();
  } else {
    ThrowArgument(env, "kind", "kind must be \"host\", \"cuda\", \"ptx\" or \"metal\", got " + kind);
  }
  if (!info[2].IsUndefined()) {
    if (!info[2].IsArray()) ThrowArgument(env, "options", "options must be an array of strings");
    Napi::Array options = info[2].As<Napi::Array>();
    for (uint32_t i = 0; i < options.Length(); ++i) {
      Napi::Value option = options.Get(i);
      if (!option.IsString()) ThrowArgument(env, "options", "options must be an array of strings");
      source.options.push_back(option.As<Napi::String>().Utf8Value());
    }
  }
  Failure failure;
  std::unique_ptr<Module> module = streams.loadModule(source, &failure);
  if (!module) ThrowFailure(env, failure, "source", 0);
  uint64_t id = data.registry->AddModule(std::move(module));
  try {
    return data.moduleConstructor.New({Napi::External<char>::New(env, &constructToken), Napi::Number::New(env, static_cast<double>(id))});
  } catch (...) {
    data.registry->ReleaseModule(id);
    throw;
  }
}

// streamsUnavailable(): why this platform has no streams, or undefined when it has them.
Napi::Value StreamsUnavailable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AddonState& state = *DataOf(env).state;
  if (state.tornDown || !state.platform) return Napi::String::New(env, "the native device is not available");
  std::string why;
  return state.platform->streams(&why) == nullptr ? Napi::String::New(env, why) : env.Undefined();
}

}  // namespace

bool IsConstructToken(const Napi::Value& value) {
  return value.IsExternal() && value.As<Napi::External<char>>().Data() == &constructToken;
}

Napi::Object MakeHandle(Napi::Env env, Napi::FunctionReference& constructor, std::initializer_list<napi_value> extra) {
  std::vector<napi_value> args{Napi::External<char>::New(env, &constructToken)};
  args.insert(args.end(), extra.begin(), extra.end());
  return constructor.New(args);
}

bool PostCompletion(napi_threadsafe_function completions, std::unique_ptr<Completion> completion) {
  if (completions == nullptr) return false;
  if (napi_call_threadsafe_function(completions, completion.get(), napi_tsfn_nonblocking) != napi_ok) return false;
  static_cast<void>(completion.release());  // RunCompletion's from now on
  return true;
}

void AwaitCompletion(Napi::Env env) {
  AddonData& data = DataOf(env);
  if (data.awaitedCompletions++ == 0) napi_ref_threadsafe_function(env, data.completions);
}

void CompletionArrived(napi_env env) {
  AddonData& data = DataOf(Napi::Env(env));
  if (data.awaitedCompletions > 0 && --data.awaitedCompletions == 0) napi_unref_threadsafe_function(env, data.completions);
  data.registry->Settle();
}

Napi::Value NotifyPromise(Napi::Env env, Stream* stream, std::function<void(Napi::Env, const Failure&, Napi::Promise::Deferred&)> settle) {
  AddonData& data = DataOf(env);
  auto deferred = std::make_shared<Napi::Promise::Deferred>(Napi::Promise::Deferred::New(env));
  napi_threadsafe_function completions = data.completions;
  auto payload = std::make_shared<decltype(settle)>(std::move(settle));
  Failure failure;
  bool enqueued = stream->notify(
      [completions, deferred, payload](const Failure& outcome) {
        PostCompletion(completions, std::make_unique<Completion>([deferred, payload, outcome](napi_env raw) {
                         Napi::Env env(raw);
                         CompletionArrived(raw);
                         (*payload)(env, outcome, *deferred);
                       }));
      },
      &failure);
  if (!enqueued) {
    // The bytes a read was given must outlive it: wait for what is queued, then throw.
    Failure ignored;
    stream->synchronize(&ignored);
    ThrowFailure(env, failure, "stream", 0);
  }
  AwaitCompletion(env);
  return deferred->Promise();
}

Napi::Function StreamHandle::Define(Napi::Env env) {
  return DefineClass(env, "NativeStreamHandle",
                     {InstanceMethod<&StreamHandle::Launch>("launch"), InstanceMethod<&StreamHandle::Write>("write"),
                      InstanceMethod<&StreamHandle::Read>("read"), InstanceMethod<&StreamHandle::Copy>("copy"),
                      InstanceMethod<&StreamHandle::Record>("record"), InstanceMethod<&StreamHandle::Wait>("wait"),
                      InstanceMethod<&StreamHandle::Done>("done"),
                      InstanceMethod<&StreamHandle::Synchronize>("synchronize"),
                      InstanceMethod<&StreamHandle::Release>("release"), InstanceAccessor<&StreamHandle::Id>("id"),
                      InstanceAccessor<&StreamHandle::Released>("released")});
}

StreamHandle::StreamHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<StreamHandle>(info) {
  Napi::Env env = info.Env();
  if (!IsConstructToken(info[0])) ThrowArgument(env, "this", "streams are made by newStream()");
  AddonData& data = DataOf(env);
  state_ = data.state;
  registry_ = data.registry;
  id_ = static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue());
  released_ = false;
}

void StreamHandle::Finalize(Napi::Env) {
  // Collected without release(): what it had not started is dropped (worker_stream.h), never run later.
  if (!released_ && !state_->tornDown) registry_->FreeStream(id_);
}

Stream* StreamHandle::Live(Napi::Env env) {
  Stream* stream = released_ || state_->tornDown ? nullptr : registry_->FindStream(id_);
  if (stream == nullptr) throw MakeError(env, kReleased, "this stream was released");
  registry_->Settle();
  return stream;
}

void StreamHandle::Enqueue(Napi::Env env, const std::vector<uint64_t>& pinned, uint64_t module, const char* argument,
                           const std::function<bool(Stream*, Failure*)>& enqueue) {
  Stream* stream = Live(env);
  registry_->Pin(id_, pinned, module);
  Failure failure;
  bool enqueued = false;
  try {
    enqueued = enqueue(stream, &failure);
  } catch (...) {
    registry_->Unpinned(id_, pinned, module);
    throw;
  }
  if (!enqueued) {
    registry_->Unpinned(id_, pinned, module);
    ThrowFailure(env, failure, argument, 0);
  }
  registry_->Enqueued(id_);
}

// launch(kernel, grid, block, sharedBytes, args)
void StreamHandle::Launch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Live(env);
  AddonData& data = DataOf(env);
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data.kernelConstructor.Value())) {
    ThrowArgument(env, "kernel", "kernel must be a kernel of this addon");
  }
  KernelHandle* handle = KernelHandle::Unwrap(info[0].As<Napi::Object>());
  nuvec::Kernel* kernel = handle->Live(env);
  LaunchShape shape = LaunchShapeOf(env, info[1], info[2], info[3]);
  std::vector<uint64_t> pinned;
  std::vector<KernelArgument> args = LaunchArguments(env, info[4], kernel, &pinned);
  Enqueue(env, pinned, handle->module(), "args",
          [&](Stream* stream, Failure* failure) { return stream->launch(kernel, shape, args, failure); });
}

// write(target, offset, source: a Uint8Array): its bytes are copied at the call.
void StreamHandle::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Live(env);
  AllocationHandle* target = AllocationOf(env, info[0], "target");
  Allocation* allocation = target->Live(env, "buffer");
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowArgument(env, "source", "source must be a Uint8Array");
  }
  Napi::Uint8Array source = info[2].As<Napi::Uint8Array>();
  size_t length = source.ByteLength();
  size_t offset = CheckRange(env, info[1], "offset", allocation->length());
  if (length > allocation->length() - offset) {
    ThrowArgument(env, "source", "source (" + std::to_string(length) + " bytes) does not fit the buffer from offset " +
                                     std::to_string(offset));
  }
  const uint8_t* bytes = length == 0 ? nullptr : source.Data();
  std::vector<uint8_t> copied(bytes, bytes + length);
  Enqueue(env, {target->id}, 0, "target", [&](Stream* stream, Failure* failure) {
    return stream->write(allocation, offset, std::move(copied), failure);
  });
}

// read(source, offset, length): a promise of a new Uint8Array of the bytes, once the stream ran the copy.
Napi::Value StreamHandle::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Stream* stream = Live(env);
  AllocationHandle* source = AllocationOf(env, info[0], "source");
  Allocation* allocation = source->Live(env, "buffer");
  size_t offset = CheckRange(env, info[1], "offset", allocation->length());
  size_t length = CheckRange(env, info[2], "length", allocation->length() - offset);
  auto bytes = std::make_shared<std::vector<uint8_t>>(length);
  Enqueue(env, {source->id}, 0, "source", [&](Stream* queue, Failure* failure) {
    return queue->read(allocation, offset, length, bytes->data(), failure);
  });
  registry_->CloseBatch(id_);
  return NotifyPromise(env, stream, [bytes](Napi::Env env, const Failure& failure, Napi::Promise::Deferred& deferred) {
    if (failure.failed()) {
      deferred.Reject(FailureError(env, failure, "source", 0).Value());
      return;
    }
    Napi::Uint8Array result = Napi::Uint8Array::New(env, bytes->size());
    if (!bytes->empty()) std::memcpy(result.Data(), bytes->data(), bytes->size());
    deferred.Resolve(result);
  });
}

// copy(target, targetOffset, source, sourceOffset, length)
void StreamHandle::Copy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Live(env);
  AllocationHandle* target = AllocationOf(env, info[0], "target");
  AllocationHandle* source = AllocationOf(env, info[2], "source");
  Allocation* to = target->Live(env, "buffer");
  Allocation* from = source->Live(env, "buffer");
  size_t targetOffset = CheckRange(env, info[1], "targetOffset", to->length());
  size_t sourceOffset = CheckRange(env, info[3], "sourceOffset", from->length());
  size_t length = CheckRange(env, info[4], "length", std::min(to->length() - targetOffset, from->length() - sourceOffset));
  Enqueue(env, {target->id, source->id}, 0, "length", [&](Stream* stream, Failure* failure) {
    return stream->copy(to, targetOffset, from, sourceOffset, length, failure);
  });
}

Napi::Value StreamHandle::Record(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Stream* stream = Live(env);
  registry_->CloseBatch(id_);
  Failure failure;
  std::unique_ptr<Event> event = stream->record(&failure);
  if (!event) ThrowFailure(env, failure, "stream", 0);
  uint64_t eventId = registry_->AddEvent(std::move(event));
  try {
    return MakeHandle(env, DataOf(env).eventConstructor,
                      {Napi::Number::New(env, static_cast<double>(eventId)), Napi::Number::New(env, static_cast<double>(id_))});
  } catch (...) {
    registry_->FreeEvent(eventId);
    throw;
  }
}

void StreamHandle::Wait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Live(env);
  AddonData& data = DataOf(env);
  if (!info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(data.eventConstructor.Value())) {
    ThrowArgument(env, "event", "event must be an event of this addon");
  }
  Event* event = EventHandle::Unwrap(info[0].As<Napi::Object>())->Live(env);
  Enqueue(env, {}, 0, "event", [&](Stream* stream, Failure* failure) { return stream->wait(event, failure); });
}

Napi::Value StreamHandle::Done(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Stream* stream = Live(env);
  registry_->CloseBatch(id_);
  return NotifyPromise(env, stream, [](Napi::Env env, const Failure& failure, Napi::Promise::Deferred& deferred) {
    if (failure.failed()) {
      deferred.Reject(FailureError(env, failure, "stream", 0).Value());
    } else {
      deferred.Resolve(env.Undefined());
    }
  });
}

void StreamHandle::Synchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Stream* stream = Live(env);
  registry_->CloseBatch(id_);
  Failure failure;
  bool ran = stream->synchronize(&failure);
  registry_->Settle();
  if (!ran) ThrowFailure(env, failure, "stream", 0);
}

// Waits for the stream's work (its failure is done()'s and synchronize()'s to report), then destroys it.
void StreamHandle::Release(const Napi::CallbackInfo& info) {
  Stream* stream = Live(info.Env());
  Failure ignored;
  stream->synchronize(&ignored);
  released_ = true;
  registry_->FreeStream(id_);
  registry_->Settle();
}

Napi::Value StreamHandle::Id(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(id_));
}

Napi::Value StreamHandle::Released(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), released_ || state_->tornDown || registry_->FindStream(id_) == nullptr);
}

void InitStreams(Napi::Env env, Napi::Object exports, AddonData* data) {
  data->streamConstructor = Napi::Persistent(StreamHandle::Define(env));
  data->eventConstructor = Napi::Persistent(EventHandle::Define(env));
  data->moduleConstructor = Napi::Persistent(ModuleHandle::Define(env));
  data->kernelConstructor = Napi::Persistent(KernelHandle::Define(env));
  napi_value name = Napi::String::New(env, "nuvec stream completions");
  napi_status status = napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr, nullptr,
                                                       RunCompletion, &data->completions);
  if (status != napi_ok) throw MakeError(env, kUnavailable, "the stream completions could not be set up");
  napi_unref_threadsafe_function(env, data->completions);
  exports.Set("NativeStreamHandle", data->streamConstructor.Value());
  exports.Set("NativeEventHandle", data->eventConstructor.Value());
  exports.Set("NativeModuleHandle", data->moduleConstructor.Value());
  exports.Set("NativeKernelHandle", data->kernelConstructor.Value());
  exports.Set("newStream", Napi::Function::New<NewStream>(env, "newStream"));
  exports.Set("loadModule", Napi::Function::New<LoadModule>(env, "loadModule"));
  exports.Set("streamsUnavailable", Napi::Function::New<StreamsUnavailable>(env, "streamsUnavailable"));
}

}  // namespace nuvec
