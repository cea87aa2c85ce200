// The example a runtime author copies: native code that runs its own kernels on nuvec memory. nuvec hands
// out where a buffer is (device.native.handle(buffer): a CPU address on the host, and on Metal the
// id<MTLBuffer>); this addon runs two float32 kernels on that memory, on the libuv thread pool, each
// returning a promise — the promise a runtime passes to `buffer.free({ after })` so that nuvec neither
// caches nor reuses the memory while the kernel may still touch it.
//
//   scale(address, count, factor) → Promise<undefined>   data[i] *= factor for i < count
//   sum(address, count)           → Promise<number>      Σ data[i], accumulated in double
//
// The JavaScript wrapper (src/lib/kernel-addon.ts) checks every argument first; the checks here are for
// memory safety when the addon is called directly. What no check can know is whether `address` really
// points at `count` floats: that is what the handle's `length` is for, and the wrapper compares them.
#include <napi.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#ifdef NUVEC_EXAMPLE_METAL
namespace nuvec_example {
void InitMetal(Napi::Env env, Napi::Object exports);  // metal/kernel_metal.mm
}
#endif

namespace nuvec_example {
namespace {

[[noreturn]] void ThrowArgument(Napi::Env env, const char* argument, const std::string& message) {
  Napi::TypeError error = Napi::TypeError::New(env, message);
  error.Set("code", Napi::String::New(env, "ERR_NUVEC_INVALID_ARGUMENT"));
  error.Set("argument", Napi::String::New(env, argument));
  throw error;
}

float* AddressArgument(Napi::Env env, const Napi::Value& value) {
  if (!value.IsBigInt()) ThrowArgument(env, "address", "address must be a bigint (a handle's address)");
  bool lossless = false;
  uint64_t address = value.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless || address == 0) ThrowArgument(env, "address", "address must be a non-zero 64-bit pointer");
  if (address % alignof(float) != 0) ThrowArgument(env, "address", "address must be aligned for float32");
  return reinterpret_cast<float*>(static_cast<uintptr_t>(address));
}

size_t CountArgument(Napi::Env env, const Napi::Value& value) {
  if (!value.IsNumber()) ThrowArgument(env, "count", "count must be a number");
  double count = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(count) || count < 0 || count != std::floor(count) || count > 9007199254740991.0) {
    ThrowArgument(env, "count", "count must be a non-negative safe integer");
  }
  return static_cast<size_t>(count);
}

// data[i] *= factor, off the JavaScript thread. The memory must stay valid until the promise settles:
// nuvec guarantees it when the buffer is freed with { after: thisPromise } (or not freed at all).
class ScaleWorker final : public Napi::AsyncWorker {
 public:
  ScaleWorker(Napi::Env env, float* data, size_t count, float factor)
      : Napi::AsyncWorker(env, "nuvec-example-scale"),
        deferred_(Napi::Promise::Deferred::New(env)),
        data_(data),
        count_(count),
        factor_(factor) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    for (size_t index = 0; index < count_; index += 1) data_[index] *= factor_;
  }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  float* data_;
  size_t count_;
  float factor_;
};

// Σ data[i] in double (float32 accumulation would lose the low digits a test compares).
class SumWorker final : public Napi::AsyncWorker {
 public:
  SumWorker(Napi::Env env, const float* data, size_t count)
      : Napi::AsyncWorker(env, "nuvec-example-sum"),
        deferred_(Napi::Promise::Deferred::New(env)),
        data_(data),
        count_(count) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    double total = 0;
    for (size_t index = 0; index < count_; index += 1) total += data_[index];
    total_ = total;
  }
  void OnOK() override { deferred_.Resolve(Napi::Number::New(Env(), total_)); }
  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  const float* data_;
  size_t count_;
  double total_ = 0;
};

Napi::Value Scale(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  float* data = AddressArgument(env, info[0]);
  size_t count = CountArgument(env, info[1]);
  if (!info[2].IsNumber()) ThrowArgument(env, "factor", "factor must be a number");
  double factor = info[2].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(factor)) ThrowArgument(env, "factor", "factor must be finite");
  auto* worker = new ScaleWorker(env, data, count, static_cast<float>(factor));
  Napi::Promise promise = worker->Promise();
  worker->Queue();  // the worker deletes itself after OnOK/OnError
  return promise;
}

Napi::Value Sum(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const float* data = AddressArgument(env, info[0]);
  size_t count = CountArgument(env, info[1]);
  auto* worker = new SumWorker(env, data, count);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("scale", Napi::Function::New<Scale>(env, "scale"));
  exports.Set("sum", Napi::Function::New<Sum>(env, "sum"));
#ifdef NUVEC_EXAMPLE_METAL
  InitMetal(env, exports);
#endif
  return exports;
}

}  // namespace nuvec_example

static Napi::Object InitKernel(Napi::Env env, Napi::Object exports) { return nuvec_example::Init(env, exports); }
NODE_API_MODULE(nuvec_example_kernel, InitKernel)
