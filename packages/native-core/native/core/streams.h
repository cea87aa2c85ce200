// Streams, events and kernels: what a platform implements to run work on its memory in order. The shared
// N-API layer (native/napi/) checks arguments, keeps every allocation an operation names alive until the
// operation has completed, and turns failures into typed errors; a platform only enqueues. The host
// implements streams with one worker thread each, CUDA with the driver's streams, Metal with command
// buffers of one command queue.
#ifndef NUVEC_STREAMS_H_
#define NUVEC_STREAMS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "platform.h"

namespace nuvec {

// The kinds of a kernel parameter (the TypeScript KernelParameterKind, in the same order).
enum class ParameterKind : uint8_t { kBuffer, kI32, kU32, kF32, kI64, kU64, kF64 };

// Bytes an argument of the kind takes in a kernel's parameter buffer (a buffer: a pointer, 8).
inline size_t ParameterBytes(ParameterKind kind) {
  switch (kind) {
    case ParameterKind::kI32:
    case ParameterKind::kU32:
    case ParameterKind::kF32:
      return 4;
    default:
      return 8;
  }
}

// One argument of a launch. kBuffer: `allocation` from `offset` (already checked to lie inside it); a scalar:
// its bits in `bits` (an f32 as its 4 bytes in the low half, an f64 as its 8).
struct KernelArgument {
  ParameterKind kind = ParameterKind::kBuffer;
  Allocation* allocation = nullptr;
  size_t offset = 0;
  uint64_t bits = 0;
};

struct LaunchShape {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
};

// A kernel of a module. Owned by its module; valid while the module is.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual const std::string& name() const = 0;
  virtual const std::vector<ParameterKind>& parameters() const = 0;
};

// What a module is loaded from: the platform's own entry (see NativeModuleSource in streams.ts).
struct ModuleSource {
  enum class Kind { kCudaSource, kPtx, kMetalSource, kHostLibrary };
  Kind kind = Kind::kHostLibrary;
  std::string text;                  // source, PTX, or a library's path
  std::vector<std::string> options;  // compiler options (NVRTC)
};

class Module {
 public:
  virtual ~Module() = default;
  // The kernel called `name`, or nullptr and a failure (kFormat for a name the module lacks, kArgument for a
  // declaration that does not match). `declared` is null when the caller declared nothing.
  virtual Kernel* kernel(const std::string& name, const std::vector<ParameterKind>* declared, Failure* failure) = 0;
  // The names of its kernels where the module can list them; empty otherwise.
  virtual std::vector<std::string> kernelNames() const { return {}; }
  // Whether kernelNames() is the module's list (false where the platform cannot enumerate a module's
  // kernels, e.g. a CUDA driver before 12.4): the binding then reports no list rather than an empty one.
  virtual bool listsKernels() const { return true; }
};

// A point in one stream's order.
class Event {
 public:
  virtual ~Event() = default;
  // Whether the work before it has completed; false and a failure when that work failed.
  virtual bool query(Failure* failure) = 0;
  // Blocks this thread until it has completed; false and a failure when the work failed.
  virtual bool synchronize(Failure* failure) = 0;
};

// An ordered queue of work. Each call enqueues and returns; `false` and a failure when nothing was enqueued.
// Calls come from the JavaScript thread only; `done` callbacks may run on any thread.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual bool launch(Kernel* kernel, const LaunchShape& shape, const std::vector<KernelArgument>& args,
                      Failure* failure) = 0;
  // Copies `bytes` (taken over by the stream) into `target` at `offset`.
  virtual bool write(Allocation* target, size_t offset, std::vector<uint8_t> bytes, Failure* failure) = 0;
  // Copies `length` bytes of `source` from `offset` into `target`, which the caller keeps alive until the
  // operation's completion has been observed (through an event or `notify`).
  virtual bool read(Allocation* source, size_t offset, size_t length, uint8_t* target, Failure* failure) = 0;
  virtual bool copy(Allocation* target, size_t targetOffset, Allocation* source, size_t sourceOffset, size_t length,
                    Failure* failure) = 0;
  // An event after everything enqueued so far.
  virtual std::unique_ptr<Event> record(Failure* failure) = 0;
  // Later work on this stream waits for `event` (of this platform) without blocking the host.
  virtual bool wait(Event* event, Failure* failure) = 0;
  // Calls `done` once, from any thread, when everything enqueued so far has run (with the failure of the
  // first operation that failed, if any).
  virtual bool notify(std::function<void(const Failure&)> done, Failure* failure) = 0;
  // Blocks this thread until everything enqueued so far has run.
  virtual bool synchronize(Failure* failure) = 0;
};

// The platform's side: a layer with streams overrides both (the Platform's defaults refuse).
class StreamPlatform {
 public:
  virtual ~StreamPlatform() = default;
  virtual std::unique_ptr<Stream> newStream(Failure* failure) = 0;
  virtual std::unique_ptr<Module> loadModule(const ModuleSource& source, Failure* failure) = 0;
};

}  // namespace nuvec

#endif  // NUVEC_STREAMS_H_
