// The Metal version of the example kernel (macOS): the same `scale`, as a compute kernel on the GPU, bound
// to a nuvec buffer by its `metalBuffer` (device.native.handle(buffer)) and run on the runtime's own command
// queue — the queue given to `Device.open({ metal: { commandQueue } })`, so nuvec's residency sets are
// attached where this kernel runs. The promise settles in the command buffer's completion handler (through
// a thread-safe function back to JavaScript): that is the promise to pass to `buffer.free({ after })`.
//
//   scaleMetal(metalBuffer, count, factor, commandQueue) → Promise<undefined>
//   newCommandQueue() → bigint   an id<MTLCommandQueue> on the system GPU for Device.open (retained: the
//                                 example keeps it for the life of the process)
//
// Never built or run on the machines it was written on: checked with clang -fsyntax-only against the
// declaration stub in packages/metal-native/native/metal/check/ (packages/metal-native/test/metal-syntax.test.ts).
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace nuvec_example {
namespace {

constexpr const char* kShaderSource = R"(
#include <metal_stdlib>
using namespace metal;
kernel void nuvec_scale(device float* data [[buffer(0)]],
                        constant float& factor [[buffer(1)]],
                        constant uint& count [[buffer(2)]],
                        uint index [[thread_position_in_grid]]) {
  if (index < count) data[index] *= factor;
}
)";

[[noreturn]] void ThrowArgument(Napi::Env env, const char* argument, const std::string& message) {
  Napi::TypeError error = Napi::TypeError::New(env, message);
  error.Set("code", Napi::String::New(env, "ERR_NUVEC_INVALID_ARGUMENT"));
  error.Set("argument", Napi::String::New(env, argument));
  throw error;
}

uint64_t PointerArgument(Napi::Env env, const Napi::Value& value, const char* name) {
  if (!value.IsBigInt()) ThrowArgument(env, name, std::string(name) + " must be a bigint pointer");
  bool lossless = false;
  uint64_t pointer = value.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless || pointer == 0) ThrowArgument(env, name, std::string(name) + " must be a non-zero 64-bit pointer");
  return pointer;
}

std::string Utf8(NSString* text) {
  const char* bytes = text != nil ? [text UTF8String] : nullptr;
  return bytes != nullptr ? std::string(bytes) : std::string();
}

// The compiled pipeline, made once per process on the first queue's device (Apple silicon has one GPU).
id<MTLComputePipelineState> ScalePipeline(id<MTLDevice> device, std::string* error) {
  static id<MTLComputePipelineState> pipeline = nil;
  if (pipeline != nil) return pipeline;
  NSError* failure = nil;
  id<MTLLibrary> library = [device newLibraryWithSource:[NSString stringWithUTF8String:kShaderSource]
                                                options:nil
                                                  error:&failure];
  if (library == nil) {
    *error = "compiling the scale kernel failed: " + Utf8(failure.localizedDescription);
    return nil;
  }
  id<MTLFunction> function = [library newFunctionWithName:@"nuvec_scale"];
  pipeline = [device newComputePipelineStateWithFunction:function error:&failure];
  if (pipeline == nil) *error = "making the scale pipeline failed: " + Utf8(failure.localizedDescription);
  return pipeline;
}

// What the completion handler hands back to the JavaScript thread.
struct Completion {
  Napi::Promise::Deferred deferred;
  std::string error;  // empty: the command buffer completed
};

Napi::Value ScaleMetal(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t bufferPointer = PointerArgument(env, info[0], "metalBuffer");
  if (!info[1].IsNumber()) ThrowArgument(env, "count", "count must be a number");
  double count = info[1].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(count) || count < 0 || count != std::floor(count) || count > 4294967295.0) {
    ThrowArgument(env, "count", "count must be a whole number below 2^32");
  }
  if (!info[2].IsNumber()) ThrowArgument(env, "factor", "factor must be a number");
  float factor = static_cast<float>(info[2].As<Napi::Number>().DoubleValue());
  uint64_t queuePointer = PointerArgument(env, info[3], "commandQueue");

  @autoreleasepool {
    id<MTLBuffer> buffer = (__bridge id<MTLBuffer>)reinterpret_cast<void*>(bufferPointer);
    id<MTLCommandQueue> queue = (__bridge id<MTLCommandQueue>)reinterpret_cast<void*>(queuePointer);
    if (static_cast<double>(buffer.length) < count * sizeof(float)) {
      ThrowArgument(env, "count", "count floats do not fit in the buffer");
    }
    std::string error;
    id<MTLComputePipelineState> pipeline = ScalePipeline(queue.device, &error);
    if (pipeline == nil) throw Napi::Error::New(env, error);

    auto* completion = new Completion{Napi::Promise::Deferred::New(env), std::string()};
    Napi::Promise promise = completion->deferred.Promise();
    auto settle = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}),
                                                "nuvec-example-scale-metal", 0, 1);

    uint32_t elements = static_cast<uint32_t>(count);
    id<MTLCommandBuffer> commandBuffer = [queue commandBuffer];
    id<MTLComputeCommandEncoder> encoder = [commandBuffer computeCommandEncoder];
    [encoder setComputePipelineState:pipeline];
    [encoder setBuffer:buffer offset:0 atIndex:0];  // nuvec's buffer itself: no copy
    [encoder setBytes:&factor length:sizeof(factor) atIndex:1];
    [encoder setBytes:&elements length:sizeof(elements) atIndex:2];
    NSUInteger width = pipeline.maxTotalThreadsPerThreadgroup;
    if (width > elements && elements > 0) width = elements;
    [encoder dispatchThreads:MTLSizeMake(elements, 1, 1) threadsPerThreadgroup:MTLSizeMake(width, 1, 1)];
    [encoder endEncoding];
    [commandBuffer addCompletedHandler:^(id<MTLCommandBuffer> done) {
      // A Metal thread: hand the outcome to the JavaScript thread, which settles the promise.
      if (done.status == MTLCommandBufferStatusError) completion->error = Utf8(done.error.localizedDescription);
      settle.BlockingCall(completion, [](Napi::Env jsEnv, Napi::Function, Completion* finished) {
        if (finished->error.empty()) {
          finished->deferred.Resolve(jsEnv.Undefined());
        } else {
          finished->deferred.Reject(Napi::Error::New(jsEnv, "the Metal kernel failed: " + finished->error).Value());
        }
        delete finished;
      });
      settle.Release();
    }];
    [commandBuffer commit];
    return promise;
  }
}

Napi::Value NewCommandQueue(const Napi::CallbackInfo& info) {
  @autoreleasepool {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    id<MTLCommandQueue> queue = device != nil ? [device newCommandQueue] : nil;
    if (queue == nil) throw Napi::Error::New(info.Env(), "no Metal device or command queue");
    // Retained on purpose (CFBridgingRetain): the runtime owns its queue for the life of the process.
    return Napi::BigInt::New(info.Env(), static_cast<uint64_t>(reinterpret_cast<uintptr_t>(CFBridgingRetain(queue))));
  }
}

}  // namespace

void InitMetal(Napi::Env env, Napi::Object exports) {
  exports.Set("scaleMetal", Napi::Function::New<ScaleMetal>(env, "scaleMetal"));
  exports.Set("newCommandQueue", Napi::Function::New<NewCommandQueue>(env, "newCommandQueue"));
}

}  // namespace nuvec_example
