// The CUDA streams layer (native/cuda/cuda_streams.cc, cuda_modules.cc, nvrtc.cc) exercised in C++ on a GPU,
// without Node.js: streams, NVRTC compiles (PTX and CUBIN), PTX loads, launches with every scalar kind,
// writes and reads (chunked through pinned staging), copies (from a mapped file too), events across streams, host notifications, the refusals
// (a compile error's log, a missing kernel, a declaration that does not match, a launch shape the driver
// refuses), and teardown with work still queued. gpu/run.sh builds it with g++ against the same sources as
// the addon and runs it (stage `streams`). Prints one line per check and a summary; exit status 1 when a
// check failed.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <condition_variable>
#include <string>
#include <vector>

#include "../native/cuda/cuda_platform.h"
#include "core/streams.h"
#include "../native/cuda/nvrtc.h"

using namespace nuvec;

namespace {

int checks = 0;
int failures = 0;

void Check(bool ok, const std::string& what) {
  checks += 1;
  if (!ok) failures += 1;
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  std::fflush(stdout);
}

// The condition first, then the message (which may read what the condition's calls set).
#define CHECK(condition, message) \
  do {                            \
    bool passed = (condition);    \
    Check(passed, message);       \
  } while (0)

double Now() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* kSource = R"(
extern "C" __global__ void scale(float* x, float f, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= f;
}
extern "C" __global__ void add(float* out, const float* a, const float* b, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
extern "C" __global__ void kinds(unsigned long long* out, int i, unsigned u, float f, long long l,
                                 unsigned long long ul, double d) {
  out[0] = (unsigned long long)(long long)i; out[1] = u; out[2] = __float_as_uint(f);
  out[3] = (unsigned long long)l; out[4] = ul; out[5] = __double_as_longlong(d);
}
extern "C" __global__ void spin(unsigned long long cycles, unsigned* flag) {
  unsigned long long start = clock64();
  while (clock64() - start < cycles) {}
  *flag = 1;
}
extern "C" __global__ void empty() {}
extern "C" __global__ void fault(unsigned long long address) { *(volatile unsigned*)address = 1; }
)";

uint64_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}
uint64_t Bits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  return bits;
}

KernelArgument Buffer(Allocation* allocation, size_t offset = 0) {
  KernelArgument argument;
  argument.kind = ParameterKind::kBuffer;
  argument.allocation = allocation;
  argument.offset = offset;
  return argument;
}
KernelArgument Scalar(ParameterKind kind, uint64_t bits) {
  KernelArgument argument;
  argument.kind = kind;
  argument.bits = bits;
  return argument;
}

std::vector<uint8_t> FloatBytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

LaunchShape Shape(uint32_t grid, uint32_t block) {
  LaunchShape shape;
  shape.grid[0] = grid;
  shape.block[0] = block;
  return shape;
}

}  // namespace

// `streams_probe fault`: a kernel's illegal write. notify's callback gets the failure, synchronize reports
// it, the process goes on (the context is broken from here: a separate run of the probe).
int Fault(StreamPlatform* streams) {
  Failure failure;
  ModuleSource source;
  source.kind = ModuleSource::Kind::kCudaSource;
  source.text = kSource;
  std::unique_ptr<Module> module = streams->loadModule(source, &failure);
  const std::vector<ParameterKind> kinds = {ParameterKind::kU64};
  Kernel* fault = module->kernel("fault", &kinds, &failure);
  std::unique_ptr<Stream> stream = streams->newStream(&failure);
  CHECK(stream->launch(fault, Shape(1, 1), {Scalar(ParameterKind::kU64, 8)}, &failure), "launch fault (a write to address 8)");
  std::mutex mutex;
  std::condition_variable woken;
  bool notified = false;
  Failure told;
  stream->notify([&](const Failure& result) {
    std::lock_guard<std::mutex> lock(mutex);
    told = result;
    notified = true;
    woken.notify_all();
  }, &failure);
  {
    std::unique_lock<std::mutex> lock(mutex);
    woken.wait_for(lock, std::chrono::seconds(10), [&] { return notified; });
  }
  CHECK(notified && told.failed(), "notify's callback ran and was told: " + told.errname + ": " + told.message);
  failure = Failure();
  CHECK(!stream->synchronize(&failure) && failure.failed(), "synchronize fails: " + failure.message);
  std::unique_ptr<Event> event = stream->record(&failure);
  failure = Failure();
  CHECK(event == nullptr || !event->query(&failure), "an event after it is not reported complete: " + failure.message);
  event.reset();
  stream.reset();
  module.reset();
  CHECK(true, "the stream and module released after the fault without a crash");
  return 0;
}

int main(int argc, char** argv) {
  Failure failure;
  std::unique_ptr<CudaPlatformApi> platform = CreateCudaPlatform(0, &failure);
  if (platform == nullptr) {
    std::printf("no CUDA platform: %s\n", failure.message.c_str());
    return 2;
  }
  std::printf("device: %s, driver %d\n", platform->facts().name.c_str(), DriverVersion());
  std::string why;
  bool nvrtc = cuda::NvrtcAvailable(&why);
  std::printf("nvrtc: %s\n", nvrtc ? "loaded" : why.c_str());
  std::string noStreams;
  StreamPlatform* streams = platform->streams(&noStreams);
  CHECK(streams != nullptr, "streams(): " + noStreams);
  if (streams == nullptr) return 1;
  if (argc > 1 && std::string(argv[1]) == "fault") {
    Fault(streams);
    platform.reset();
    std::printf("streams probe (fault): %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
  }
  {
    ModuleSource source;
    source.kind = ModuleSource::Kind::kCudaSource;
    source.text = kSource;
    double start = Now();
    failure = Failure();
    std::unique_ptr<Module> module = streams->loadModule(source, &failure);
    CHECK(module != nullptr, "NVRTC compile + load (default -arch) in " + std::to_string((Now() - start) / 1000) +
                                 " ms " + failure.message);
    if (module == nullptr) return 1;
    std::vector<std::string> names = module->kernelNames();
    std::string listed;
    for (const std::string& name : names) listed += name + " ";
    CHECK(names.size() == 6, "kernelNames lists the module's 6 kernels: " + listed);
    const std::vector<ParameterKind> scaleKinds = {ParameterKind::kBuffer, ParameterKind::kF32, ParameterKind::kU32};
    Kernel* scale = module->kernel("scale", &scaleKinds, &failure);
    CHECK(scale != nullptr && scale->parameters().size() == 3, "kernel scale declared (buffer, f32, u32)");
    CHECK(module->kernel("scale", &scaleKinds, &failure) == scale, "the same declaration gives the same kernel");

    failure = Failure();
    const std::vector<ParameterKind> wrong = {ParameterKind::kBuffer, ParameterKind::kF64, ParameterKind::kU32};
    CHECK(module->kernel("scale", &wrong, &failure) == nullptr && failure.kind == Failure::Kind::kArgument,
          "scale declared (buffer, f64, u32): kArgument: " + failure.message);
    failure = Failure();
    const std::vector<ParameterKind> sameSize = {ParameterKind::kBuffer, ParameterKind::kU32, ParameterKind::kU32};
    CHECK(module->kernel("scale", &sameSize, &failure) == nullptr && failure.kind == Failure::Kind::kArgument,
          "scale declared (buffer, u32, u32): kArgument from the PTX's types: " + failure.message);
    failure = Failure();
    const std::vector<ParameterKind> shorter = {ParameterKind::kBuffer};
    CHECK(module->kernel("scale", &shorter, &failure) == nullptr && failure.kind == Failure::Kind::kArgument,
          "scale declared with 1 parameter: kArgument: " + failure.message);
    failure = Failure();
    CHECK(module->kernel("scale", nullptr, &failure) == nullptr && failure.kind == Failure::Kind::kArgument,
          "scale undeclared: kArgument: " + failure.message);
    failure = Failure();
    CHECK(module->kernel("nope", &scaleKinds, &failure) == nullptr && failure.kind == Failure::Kind::kFormat,
          "a kernel the module lacks: kFormat: " + failure.message);
    failure = Failure();
    Kernel* empty = module->kernel("empty", nullptr, &failure);
    CHECK(empty != nullptr, "a kernel of no parameters needs no declaration " + failure.message);

    std::unique_ptr<Stream> stream = streams->newStream(&failure);
    CHECK(stream != nullptr, "newStream " + failure.message);
    const unsigned n = 1 << 20;
    std::unique_ptr<Allocation> x = platform->newBuffer(4 * n, &failure);
    std::vector<float> ones(n, 1.5f);
    CHECK(stream->write(x.get(), 0, FloatBytes(ones), &failure), "write 4 MiB (staged)");
    CHECK(stream->launch(scale, Shape((n + 255) / 256, 256), {Buffer(x.get()), Scalar(ParameterKind::kF32, Bits(2.0f)), Scalar(ParameterKind::kU32, n)}, &failure),
          "launch scale " + failure.message);
    std::vector<uint8_t> out(4 * n, 0);
    CHECK(stream->read(x.get(), 0, 4 * n, out.data(), &failure), "read 4 MiB");
    std::mutex mutex;
    std::condition_variable woken;
    bool notified = false;
    CHECK(stream->notify([&](const Failure&) {
            std::lock_guard<std::mutex> lock(mutex);
            notified = true;
            woken.notify_all();
          }, &failure),
          "notify");
    {
      std::unique_lock<std::mutex> lock(mutex);
      woken.wait_for(lock, std::chrono::seconds(10), [&] { return notified; });
    }
    CHECK(notified, "notify's callback ran");
    const float* values = reinterpret_cast<const float*>(out.data());
    bool right = true;
    for (unsigned i = 0; i < n; i += 1) right = right && values[i] == 3.0f;
    CHECK(right, "read after notify: every element 1.5 * 2 = 3 (first " + std::to_string(values[0]) + ")");

    // Every scalar kind, bit for bit.
    const std::vector<ParameterKind> kindsKinds = {ParameterKind::kBuffer, ParameterKind::kI32, ParameterKind::kU32,
                                                   ParameterKind::kF32, ParameterKind::kI64, ParameterKind::kU64,
                                                   ParameterKind::kF64};
    Kernel* kinds = module->kernel("kinds", &kindsKinds, &failure);
    CHECK(kinds != nullptr, "kernel kinds declared with all seven kinds " + failure.message);
    std::unique_ptr<Allocation> k = platform->newBuffer(48, &failure);
    int32_t i32 = -7;
    CHECK(stream->launch(kinds, Shape(1, 1), {Buffer(k.get()), Scalar(ParameterKind::kI32, static_cast<uint32_t>(i32)),
                                              Scalar(ParameterKind::kU32, 4000000000u), Scalar(ParameterKind::kF32, Bits(-0.25f)),
                                              Scalar(ParameterKind::kI64, static_cast<uint64_t>(-5000000000LL)),
                                              Scalar(ParameterKind::kU64, 0xFEDCBA9876543210ull),
                                              Scalar(ParameterKind::kF64, Bits(3.141592653589793))}, &failure),
          "launch kinds");
    uint64_t got[6] = {0};
    stream->read(k.get(), 0, 48, reinterpret_cast<uint8_t*>(got), &failure);
    CHECK(stream->synchronize(&failure), "synchronize");
    CHECK(got[0] == static_cast<uint64_t>(-7LL) && got[1] == 4000000000u && got[2] == Bits(-0.25f) &&
              got[3] == static_cast<uint64_t>(-5000000000LL) && got[4] == 0xFEDCBA9876543210ull &&
              got[5] == Bits(3.141592653589793),
          "scalars arrive bit for bit (i32 -7, u32 4e9, f32 -0.25, i64 -5e9, u64 0xFEDCBA9876543210, f64 pi)");

    // Offsets into buffers: add on the second half.
    const std::vector<ParameterKind> addKinds = {ParameterKind::kBuffer, ParameterKind::kBuffer, ParameterKind::kBuffer,
                                                 ParameterKind::kU32};
    Kernel* add = module->kernel("add", &addKinds, &failure);
    std::unique_ptr<Allocation> y = platform->newBuffer(4 * n, &failure);
    std::vector<float> ramp(n);
    for (unsigned i = 0; i < n; i += 1) ramp[i] = static_cast<float>(i);
    stream->write(y.get(), 0, FloatBytes(ramp), &failure);
    unsigned half = n / 2;
    CHECK(stream->launch(add, Shape((half + 255) / 256, 256), {Buffer(y.get(), 4 * half), Buffer(x.get(), 4 * half), Buffer(y.get(), 4 * half), Scalar(ParameterKind::kU32, half)}, &failure),
          "launch add at an offset of 2 MiB");
    std::vector<float> after(n);
    stream->read(y.get(), 0, 4 * n, reinterpret_cast<uint8_t*>(after.data()), &failure);
    stream->synchronize(&failure);
    CHECK(after[0] == 0.0f && after[half - 1] == static_cast<float>(half - 1) && after[half] == half + 3.0f &&
              after[n - 1] == (n - 1) + 3.0f,
          "add touched the second half only");

    // Two streams: the second waits for an event of the first without the host.
    std::unique_ptr<Stream> other = streams->newStream(&failure);
    const std::vector<ParameterKind> spinKinds = {ParameterKind::kU64, ParameterKind::kBuffer};
    Kernel* spin = module->kernel("spin", &spinKinds, &failure);
    CHECK(spin != nullptr, "kernel spin " + failure.message);
    std::unique_ptr<Allocation> flag = platform->newBuffer(4, &failure);
    stream->write(flag.get(), 0, std::vector<uint8_t>(4, 0), &failure);
    // About 50 ms at 2 GHz.
    stream->launch(spin, Shape(1, 1), {Scalar(ParameterKind::kU64, 100000000ull), Buffer(flag.get())}, &failure);
    std::unique_ptr<Event> event = stream->record(&failure);
    CHECK(event != nullptr, "record " + failure.message);
    failure = Failure();
    bool early = event->query(&failure);
    CHECK(!early && !failure.failed(), "the event is not complete while spin runs");
    CHECK(other->wait(event.get(), &failure), "the other stream waits for it");
    std::unique_ptr<Allocation> copyOfFlag = platform->newBuffer(4, &failure);
    CHECK(other->copy(copyOfFlag.get(), 0, flag.get(), 0, 4, &failure), "copy on the other stream");
    uint32_t seen = 7;
    other->read(copyOfFlag.get(), 0, 4, reinterpret_cast<uint8_t*>(&seen), &failure);
    other->synchronize(&failure);
    CHECK(seen == 1, "the other stream saw spin's flag (1), got " + std::to_string(seen));
    CHECK(event->query(&failure), "the event is complete after");
    CHECK(event->synchronize(&failure), "event synchronize after completion");

    // A launch the driver refuses: a block of 2048 threads.
    failure = Failure();
    CHECK(!stream->launch(scale, Shape(1, 2048), {Buffer(x.get()), Scalar(ParameterKind::kF32, Bits(1.0f)), Scalar(ParameterKind::kU32, n)}, &failure) &&
              failure.kind == Failure::Kind::kArgument,
          "block of 2048 threads: kArgument: " + failure.message);
    failure = Failure();
    CHECK(stream->launch(empty, Shape(1, 1), {}, &failure) && stream->synchronize(&failure),
          "the stream works after the refusal " + failure.message);

    // A large write and its read (16 chunks through pinned staging).
    const size_t big = 64u << 20;
    std::unique_ptr<Allocation> large = platform->newBuffer(big, &failure);
    std::vector<uint8_t> pattern(big);
    for (size_t i = 0; i < big; i += 1) pattern[i] = static_cast<uint8_t>(i * 7 + 3);
    std::vector<uint8_t> back(big, 0);
    for (int round = 0; round < 3; round += 1) {
      double started = Now();
      bool wrote = stream->write(large.get(), 0, pattern, &failure) && stream->synchronize(&failure);
      double written = Now();
      stream->read(large.get(), 0, big, back.data(), &failure);
      stream->synchronize(&failure);
      double elapsed = Now() - written;
      CHECK(wrote && back == pattern, "64 MiB round trip " + std::to_string(round) + " equal: write " +
                                          std::to_string((written - started) / 1000) + " ms, read " +
                                          std::to_string(elapsed / 1000) + " ms");
    }
    {
      // A copy from a mapped file that is not registered: its pages through staging.
      const char* directory = std::getenv("TMPDIR");
      std::string path = std::string(directory != nullptr ? directory : "/tmp") + "/nuvec-streams-probe.bin";
      FILE* file = std::fopen(path.c_str(), "wb");
      std::fwrite(pattern.data(), 1, 10u << 20, file);
      std::fclose(file);
      std::unique_ptr<Allocation> mapping = platform->mapFile(path, &failure);
      CHECK(mapping != nullptr, "map a 10 MiB file " + failure.message);
      std::vector<uint8_t> zeros(big, 0);
      stream->write(large.get(), 0, zeros, &failure);
      double started = Now();
      CHECK(stream->copy(large.get(), 4096, mapping.get(), 1000, (10u << 20) - 1000, &failure),
            "copy from the mapped file " + failure.message);
      stream->read(large.get(), 0, 12u << 20, back.data(), &failure);
      stream->synchronize(&failure);
      double elapsed = Now() - started;
      CHECK(std::memcmp(back.data() + 4096, pattern.data() + 1000, (10u << 20) - 1000) == 0 && back[4095] == 0 &&
                back[4096 + (10u << 20) - 1000] == 0,
            "the mapped file's bytes landed at 4096, nothing around them (" + std::to_string(elapsed / 1000) + " ms with the read)");
      mapping.reset();
      std::remove(path.c_str());
    }
    std::vector<uint8_t> medium(8u << 20, 5);
    for (int round = 0; round < 3; round += 1) {
      double started = Now();
      stream->write(large.get(), 0, medium, &failure);
      stream->synchronize(&failure);
      std::printf("cost: 8 MiB staged write + synchronize, round %d: %.3f ms\n", round, (Now() - started) / 1000);
    }
    double started = 0;

    // Costs: enqueueing launches, and a small write + read round trip.
    const int launches = 20000;
    started = Now();
    for (int i = 0; i < launches; i += 1) stream->launch(empty, Shape(1, 1), {}, &failure);
    double enqueue = (Now() - started) / launches;
    stream->synchronize(&failure);
    double drained = (Now() - started) / launches;
    std::printf("cost: launch of an empty kernel enqueued in %.2f us, %.2f us each with the stream drained\n", enqueue,
                drained);
    started = Now();
    for (int i = 0; i < launches; i += 1) {
      stream->launch(scale, Shape(1, 256), {Buffer(x.get()), Scalar(ParameterKind::kF32, Bits(1.0f)), Scalar(ParameterKind::kU32, 256)}, &failure);
    }
    std::printf("cost: launch of scale (3 arguments) enqueued in %.2f us\n", (Now() - started) / launches);
    stream->synchronize(&failure);
    const int rounds = 200;
    started = Now();
    for (int i = 0; i < rounds; i += 1) {
      uint32_t word = 0;
      stream->write(flag.get(), 0, std::vector<uint8_t>(4, static_cast<uint8_t>(i)), &failure);
      stream->read(flag.get(), 0, 4, reinterpret_cast<uint8_t*>(&word), &failure);
      stream->synchronize(&failure);
    }
    std::printf("cost: 4-byte write + read + synchronize: %.2f us a round\n", (Now() - started) / rounds);
    started = Now();
    for (int i = 0; i < 1000; i += 1) {
      std::unique_ptr<Event> e = stream->record(&failure);
    }
    std::printf("cost: record + destroy an event: %.2f us\n", (Now() - started) / 1000);

    // PTX: compile to PTX here, load it as PTX.
    std::string ptx;
    bool cubin = true;
    failure = Failure();
    CHECK(cuda::CompileCuda(kSource, {}, 9, 0, &ptx, &cubin, &failure) && !cubin && ptx.find(".entry scale") != std::string::npos,
          "CompileCuda to PTX (" + std::to_string(ptx.size()) + " bytes) " + failure.message);
    ModuleSource ptxSource;
    ptxSource.kind = ModuleSource::Kind::kPtx;
    ptxSource.text = ptx;
    std::unique_ptr<Module> ptxModule = streams->loadModule(ptxSource, &failure);
    CHECK(ptxModule != nullptr && ptxModule->kernel("scale", &scaleKinds, &failure) != nullptr, "PTX module loads, has scale");
    // CUBIN for sm_90.
    ModuleSource cubinSource = source;
    cubinSource.options = {"-arch=sm_90", "--use_fast_math"};
    failure = Failure();
    std::unique_ptr<Module> cubinModule = streams->loadModule(cubinSource, &failure);
    CHECK(cubinModule != nullptr && cubinModule->kernel("empty", nullptr, &failure) != nullptr,
          "-arch=sm_90: CUBIN module loads " + failure.message);
    // Refusals.
    ModuleSource broken = source;
    broken.text = "extern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }";
    failure = Failure();
    CHECK(streams->loadModule(broken, &failure) == nullptr && failure.kind == Failure::Kind::kFormat &&
              failure.log.find("undefined_name") != std::string::npos && failure.message.find(failure.log) != std::string::npos,
          "a compile error: kFormat, its log in log and in the message:\n" + failure.message);
    ModuleSource badOption = source;
    badOption.options = {"--no-such-option"};
    failure = Failure();
    CHECK(streams->loadModule(badOption, &failure) == nullptr && failure.kind == Failure::Kind::kArgument,
          "an unknown NVRTC option: kArgument: " + failure.message);
    ModuleSource badPtx;
    badPtx.kind = ModuleSource::Kind::kPtx;
    badPtx.text = "this is not PTX";
    failure = Failure();
    CHECK(streams->loadModule(badPtx, &failure) == nullptr && failure.kind == Failure::Kind::kFormat,
          "text that is not PTX: kFormat: " + failure.message);

    // Teardown with work queued: a stream and a module released while spin runs.
    std::unique_ptr<Stream> doomed = streams->newStream(&failure);
    std::unique_ptr<Module> doomedModule = streams->loadModule(source, &failure);
    Kernel* doomedSpin = doomedModule->kernel("spin", &spinKinds, &failure);
    doomed->launch(doomedSpin, Shape(1, 1), {Scalar(ParameterKind::kU64, 100000000ull), Buffer(flag.get())}, &failure);
    std::vector<uint8_t> late(4, 0);
    doomed->read(flag.get(), 0, 4, late.data(), &failure);
    started = Now();
    doomed.reset();
    double streamGone = (Now() - started) / 1000;
    doomedModule.reset();
    CHECK(late[0] == 1, "a stream released with spin queued waits for it (" + std::to_string(streamGone) +
                            " ms); its read landed; module unloaded after");
  }
  platform.reset();
  std::printf("streams probe: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
