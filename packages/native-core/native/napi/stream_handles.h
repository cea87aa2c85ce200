// The JS classes of streams, events, modules and kernels, shared by every addon whose platform has streams
// (Platform::streams): NativeStreamHandle, NativeEventHandle, NativeModuleHandle, NativeKernelHandle. They
// hold ids in the environment's StreamRegistry (core/stream_registry.h), never owning pointers; the registry
// owns, pins what queued work names, and is stopped first at the environment's teardown.
//
// Every call checks its arguments for memory safety (the TypeScript layer checks them for users first) and
// enqueues nothing when it throws. Work that completes on a platform's thread is settled on the JavaScript
// thread through the environment's thread-safe function (AddonData::completions): a read's bytes become a
// new Uint8Array, done() promises resolve or reject with the typed error of the first failure, and the pins
// of completed work go. Handles are made by the classes' own calls (newStream(), loadModule(), record(),
// kernel()), never by `new` from JavaScript.
#ifndef NUVEC_NAPI_STREAM_HANDLES_H_
#define NUVEC_NAPI_STREAM_HANDLES_H_

#include <napi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "handles.h"

namespace nuvec {

// Defines the four classes in `data` and sets the exports newStream(), loadModule(kind, text, options?),
// streamsUnavailable(); makes the completions function. Called by InitCommon before the teardown hook.
void InitStreams(Napi::Env env, Napi::Object exports, AddonData* data);

// Whether `value` is the token the makers of handles pass (a constructor called from JavaScript is refused).
bool IsConstructToken(const Napi::Value& value);
// A new object of `constructor`'s class, made with the token and `extra` arguments.
Napi::Object MakeHandle(Napi::Env env, Napi::FunctionReference& constructor, std::initializer_list<napi_value> extra);

// A completion to run on the JavaScript thread (env is null when the environment is gone: only free then).
using Completion = std::function<void(napi_env env)>;
// Posts `completion` from any thread; false when the environment no longer takes calls (it is then dropped).
bool PostCompletion(napi_threadsafe_function completions, std::unique_ptr<Completion> completion);

// A promise settled by `settle` on this thread once everything enqueued on `stream` so far has run (with the
// first failure, if any): a notify whose completion keeps the event loop alive until it arrived.
Napi::Value NotifyPromise(Napi::Env env, Stream* stream,
                          std::function<void(Napi::Env, const Failure&, Napi::Promise::Deferred&)> settle);

class StreamHandle final : public Napi::ObjectWrap<StreamHandle> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit StreamHandle(const Napi::CallbackInfo& info);
  void Finalize(Napi::Env env) override;
  uint64_t id() const { return id_; }
  // The stream, or ERR_NUVEC_RELEASED; settles completed work first.
  Stream* Live(Napi::Env env);

 private:
  void Launch(const Napi::CallbackInfo& info);
  void Write(const Napi::CallbackInfo& info);
  Napi::Value Read(const Napi::CallbackInfo& info);
  void Copy(const Napi::CallbackInfo& info);
  Napi::Value Record(const Napi::CallbackInfo& info);
  void Wait(const Napi::CallbackInfo& info);
  Napi::Value Done(const Napi::CallbackInfo& info);
  void Synchronize(const Napi::CallbackInfo& info);
  void Release(const Napi::CallbackInfo& info);
  Napi::Value Id(const Napi::CallbackInfo& info);
  Napi::Value Released(const Napi::CallbackInfo& info);
  // Enqueues through `enqueue` with `pinned` (and `module`) pinned; throws the failure when nothing was.
  void Enqueue(Napi::Env env, const std::vector<uint64_t>& pinned, uint64_t module, const char* argument,
               const std::function<bool(Stream*, Failure*)>& enqueue);

  std::shared_ptr<AddonState> state_;
  std::shared_ptr<StreamRegistry> registry_;
  uint64_t id_ = 0;
  bool released_ = true;
};

class EventHandle final : public Napi::ObjectWrap<EventHandle> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit EventHandle(const Napi::CallbackInfo& info);
  void Finalize(Napi::Env env) override;
  // The event, or ERR_NUVEC_RELEASED.
  Event* Live(Napi::Env env);

 private:
  Napi::Value Query(const Napi::CallbackInfo& info);
  Napi::Value Done(const Napi::CallbackInfo& info);
  void Synchronize(const Napi::CallbackInfo& info);
  void Release(const Napi::CallbackInfo& info);
  Napi::Value Released(const Napi::CallbackInfo& info);

  std::shared_ptr<StreamRegistry> registry_;
  uint64_t id_ = 0;
  uint64_t stream_ = 0;  // the stream it was recorded on
  bool released_ = true;
};

class ModuleHandle final : public Napi::ObjectWrap<ModuleHandle> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit ModuleHandle(const Napi::CallbackInfo& info);
  void Finalize(Napi::Env env) override;

 private:
  Napi::Value Kernel(const Napi::CallbackInfo& info);
  Napi::Value KernelNames(const Napi::CallbackInfo& info);
  void Release(const Napi::CallbackInfo& info);
  Napi::Value Released(const Napi::CallbackInfo& info);
  Module* Live(Napi::Env env);

  std::shared_ptr<StreamRegistry> registry_;
  uint64_t id_ = 0;
  bool released_ = true;
};

class KernelHandle final : public Napi::ObjectWrap<KernelHandle> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit KernelHandle(const Napi::CallbackInfo& info);
  // The kernel, or ERR_NUVEC_RELEASED when its module was released.
  nuvec::Kernel* Live(Napi::Env env);
  uint64_t module() const { return module_; }

 private:
  Napi::Value Name(const Napi::CallbackInfo& info);
  Napi::Value Parameters(const Napi::CallbackInfo& info);

  std::shared_ptr<StreamRegistry> registry_;
  uint64_t module_ = 0;
  nuvec::Kernel* kernel_ = nullptr;
};

// The kinds' names, in ParameterKind's order ("buffer", "i32", ...).
extern const char* const kParameterKindNames[7];

// A launch's arguments converted for `kernel`: buffers as [handle] or [handle, offset] or a handle, scalars
// by kind (numbers; bigints for i64 and u64). Fills `pinned` with the allocations named. Throws
// ERR_NUVEC_INVALID_ARGUMENT (argument "args") or ERR_NUVEC_RELEASED.
std::vector<KernelArgument> LaunchArguments(Napi::Env env, const Napi::Value& value, nuvec::Kernel* kernel,
                                            std::vector<uint64_t>* pinned);
// A launch shape from grid and block (arrays of 1 to 3 positive whole numbers below 2^32) and sharedBytes.
LaunchShape LaunchShapeOf(Napi::Env env, const Napi::Value& grid, const Napi::Value& block,
                          const Napi::Value& sharedBytes);

}  // namespace nuvec

#endif  // NUVEC_NAPI_STREAM_HANDLES_H_
