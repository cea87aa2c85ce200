// Unit test of the host's streams without N-API: WorkerStream (worker_stream.h), host modules
// (host_module.h) and StreamRegistry (stream_registry.h) over an AddonState, with memory the CPU addresses.
// Compiled and run by test/native-core.test.ts with the sources it names, and the kernels of
// host_kernels_test_library.c built as shared libraries whose paths come in NUVEC_TEST_KERNELS (as written),
// NUVEC_TEST_KERNELS_VERSION_2 (a table of version 2) and NUVEC_TEST_KERNELS_BAD (a bad parameter letter).
#include <errno.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "addon_state.h"
#include "check_test.h"
#include "host_module.h"
#include "stream_registry.h"
#include "worker_stream.h"

namespace {

using nuvec::AddonState;
using nuvec::Allocation;
using nuvec::Failure;
using nuvec::KernelArgument;
using nuvec::LaunchShape;
using nuvec::ParameterKind;

// Memory the CPU addresses; counts its frees.
class HostAllocation final : public Allocation {
 public:
  HostAllocation(size_t bytes, int* freed) : bytes_(bytes, 0), freed_(freed) {}
  ~HostAllocation() override { *freed_ += 1; }
  void* data() const override { return const_cast<uint8_t*>(bytes_.data()); }
  size_t length() const override { return bytes_.size(); }
  size_t allocatedSize() const override { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
  int* freed_;
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    std::fprintf(stderr, "%s is not set\n", name);
    std::exit(2);
  }
  return value;
}

std::unique_ptr<nuvec::Module> Load(const std::string& path, Failure* failure) {
  nuvec::ModuleSource source;
  source.kind = nuvec::ModuleSource::Kind::kHostLibrary;
  source.text = path;
  return nuvec::LoadHostModule(source, failure);
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

uint64_t F32(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, 4);
  return bits;
}

uint64_t F64(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, 8);
  return bits;
}

std::vector<uint8_t> Floats(std::vector<float> values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void Modules() {
  Failure failure;
  auto module = Load(Env("NUVEC_TEST_KERNELS"), &failure);
  CHECK(module != nullptr && !failure.failed());
  CHECK((module->kernelNames() == std::vector<std::string>{"scale", "sleep", "fail", "kinds"}));
  nuvec::Kernel* scale = module->kernel("scale", nullptr, &failure);
  CHECK(scale != nullptr && scale->name() == "scale");
  CHECK((scale->parameters() == std::vector<ParameterKind>{ParameterKind::kBuffer, ParameterKind::kF32,
                                                            ParameterKind::kU32}));
  std::vector<ParameterKind> wrong{ParameterKind::kBuffer, ParameterKind::kF32};
  CHECK(module->kernel("scale", &wrong, &failure) == nullptr);
  CHECK(failure.kind == Failure::Kind::kArgument);
  CHECK(failure.message == "the kernel scale takes (buffer, f32, u32), declared (buffer, f32)");
  failure = Failure();
  CHECK(module->kernel("gemm", nullptr, &failure) == nullptr);
  CHECK(failure.kind == Failure::Kind::kFormat);
  CHECK(failure.message == "the module has no kernel named \"gemm\" (it has: scale, sleep, fail, kinds)");

  failure = Failure();
  CHECK(Load("/nonexistent/kernels.so", &failure) == nullptr);
  CHECK(failure.kind == Failure::Kind::kFormat);
  CHECK(failure.log.find("/nonexistent/kernels.so") != std::string::npos);
  CHECK(failure.message == "the host module /nonexistent/kernels.so cannot be loaded: " + failure.log);
  failure = Failure();
  CHECK(Load("libm.so.6", &failure) == nullptr);  // loads, but has no table
  CHECK(failure.kind == Failure::Kind::kFormat && failure.log.find("nuvec_host_kernels") != std::string::npos);
  failure = Failure();
  CHECK(Load(Env("NUVEC_TEST_KERNELS_VERSION_2"), &failure) == nullptr);
  CHECK(failure.kind == Failure::Kind::kFormat);
  CHECK(failure.log == "its nuvec_host_kernels has version 2, this nuvec reads 1");
  failure = Failure();
  CHECK(Load(Env("NUVEC_TEST_KERNELS_BAD"), &failure) == nullptr);
  CHECK(failure.log == "kernel 3 (kinds): its parameters \"bdIx\" have 'x', which is none of b i u f I U d");
  std::puts("ok host modules: the table, lookups, and every refusal");
}

void OrderAndKinds() {
  int freed = 0;
  Failure failure;
  auto module = Load(Env("NUVEC_TEST_KERNELS"), &failure);
  nuvec::Kernel* scale = module->kernel("scale", nullptr, &failure);
  nuvec::Kernel* kinds = module->kernel("kinds", nullptr, &failure);
  nuvec::Kernel* sleep = module->kernel("sleep", nullptr, &failure);
  HostAllocation x(16, &freed);
  HostAllocation y(32, &freed);
  std::vector<uint8_t> out(16, 0xee);
  std::vector<uint8_t> out2(32, 0);
  {
    nuvec::WorkerStream stream(1);
    LaunchShape shape;
    // A slow first operation: everything after it is still queued when the calls return.
    CHECK(stream.launch(sleep, shape, {Scalar(ParameterKind::kU64, 30)}, &failure));
    CHECK(stream.write(&x, 0, Floats({1, 2, 3, 4}), &failure));
    CHECK(stream.launch(scale, shape, {Buffer(&x, 4), Scalar(ParameterKind::kF32, F32(2.5f)),
                                       Scalar(ParameterKind::kU32, 2)},
                        &failure));
    CHECK(stream.read(&x, 0, 16, out.data(), &failure));
    CHECK(stream.copy(&x, 0, &x, 4, 12, &failure));  // overlapping: memmove
    shape.grid[0] = 3;
    shape.block[0] = 7;
    CHECK(stream.launch(kinds, shape, {Buffer(&y), Scalar(ParameterKind::kF64, F64(-1.25)),
                                       Scalar(ParameterKind::kI64, static_cast<uint64_t>(-5)),
                                       Scalar(ParameterKind::kU64, 1ull << 60)},
                        &failure));
    CHECK(out[0] == 0xee);  // not run yet: the sleep holds the worker
    auto event = stream.record(&failure);
    CHECK(!event->query(&failure) && !failure.failed());
    CHECK(stream.enqueued() == 6);
    CHECK(stream.synchronize(&failure) && !failure.failed());
    CHECK(event->query(&failure));
    std::vector<float> read(4);
    std::memcpy(read.data(), out.data(), 16);
    CHECK((read == std::vector<float>{1, 5, 7.5f, 4}));
    std::vector<float> after(4);
    std::memcpy(after.data(), x.data(), 16);
    CHECK((after == std::vector<float>{5, 7.5f, 4, 4}));
    int64_t results[4];
    std::memcpy(results, y.data(), 32);
    CHECK(results[0] == -2 && results[1] == -5 && results[2] == (1ll << 60) && results[3] == 21);
    // A wrong argument is refused at the call and enqueues nothing.
    failure = Failure();
    CHECK(!stream.launch(scale, shape, {Buffer(&x)}, &failure));
    CHECK(failure.message == "the kernel scale takes 3 arguments, got 1" && stream.enqueued() == 6);
    failure = Failure();
    CHECK(!stream.launch(scale, shape, {Scalar(ParameterKind::kF32, 0), Scalar(ParameterKind::kF32, 0),
                                        Scalar(ParameterKind::kU32, 0)},
                         &failure));
    CHECK(failure.message == "argument 0 of scale must be buffer" && stream.enqueued() == 6);
  }
  std::puts("ok worker stream: order, overlapping copies, every scalar kind, refusals");
}

void WaitsAndFailures() {
  int freed = 0;
  Failure failure;
  auto module = Load(Env("NUVEC_TEST_KERNELS"), &failure);
  nuvec::Kernel* sleep = module->kernel("sleep", nullptr, &failure);
  nuvec::Kernel* fail = module->kernel("fail", nullptr, &failure);
  HostAllocation x(8, &freed);
  std::vector<uint8_t> out(4, 0);
  LaunchShape shape;
  {
    nuvec::WorkerStream a(1);
    nuvec::WorkerStream b(2);
    CHECK(a.launch(sleep, shape, {Scalar(ParameterKind::kU64, 40)}, &failure));
    CHECK(a.write(&x, 0, {1, 2, 3, 4}, &failure));
    auto written = a.record(&failure);
    CHECK(b.wait(written.get(), &failure));
    CHECK(b.read(&x, 0, 4, out.data(), &failure));
    CHECK(b.synchronize(&failure) && !failure.failed());
    CHECK((out == std::vector<uint8_t>{1, 2, 3, 4}));  // b read after a wrote, though b had nothing to do
    CHECK(written->query(&failure));

    // A failing kernel: later work is skipped; events, notify and synchronize report its failure.
    bool notified = false;
    Failure heard;
    auto before = a.record(&failure);
    CHECK(a.launch(fail, shape, {Scalar(ParameterKind::kI32, 7)}, &failure));
    CHECK(a.write(&x, 0, {9, 9, 9, 9}, &failure));
    auto after = a.record(&failure);
    CHECK(a.notify([&](const Failure& why) { notified = true, heard = why; }, &failure));
    CHECK(!failure.failed());
    CHECK(!a.synchronize(&failure));
    CHECK(failure.kind == Failure::Kind::kSystem && failure.syscall == "kernel fail" && failure.errnum == 7);
    CHECK(failure.errname == "NUVEC_HOST_KERNEL_FAILED");
    CHECK(failure.message == "the host kernel fail failed (7): asked to fail with 7");
    CHECK(notified && heard.message == failure.message);
    CHECK(static_cast<uint8_t*>(x.data())[0] == 1);  // the write after it was skipped
    Failure early;
    CHECK(before->query(&early) && !early.failed());  // work before the failure completed well
    Failure late;
    CHECK(!after->query(&late) && late.errnum == 7);
    // A stream waiting on the failed one fails there too.
    auto failed = a.record(&failure);
    failure = Failure();
    CHECK(b.wait(failed.get(), &failure));
    CHECK(!b.synchronize(&failure));
    CHECK(failure.message == "stream 2 waited on stream 1, which failed: " + heard.message);
  }
  std::puts("ok waits across streams and failures");
}

void Teardown() {
  int freed = 0;
  Failure failure;
  auto module = Load(Env("NUVEC_TEST_KERNELS"), &failure);
  nuvec::Kernel* sleep = module->kernel("sleep", nullptr, &failure);
  LaunchShape shape;
  // Destroyed with work queued: the running operation finishes, the others are dropped, callbacks hear it.
  HostAllocation x(4, &freed);
  Failure heard;
  int calls = 0;
  std::unique_ptr<nuvec::Event> event;
  auto start = std::chrono::steady_clock::now();
  {
    nuvec::WorkerStream stream(5);
    CHECK(stream.launch(sleep, shape, {Scalar(ParameterKind::kU64, 30)}, &failure));
    for (int i = 0; i < 100; ++i) CHECK(stream.launch(sleep, shape, {Scalar(ParameterKind::kU64, 30)}, &failure));
    CHECK(stream.write(&x, 0, {7, 7, 7, 7}, &failure));
    CHECK(stream.notify([&](const Failure& why) { calls += 1, heard = why; }, &failure));
    event = stream.record(&failure);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 1.0);  // not 101 sleeps of 30 ms
  CHECK(calls == 1 && heard.message == "stream 5 was released before this work ran");
  CHECK(heard.kind == Failure::Kind::kSystem && heard.errnum == ECANCELED && heard.syscall == "stream");
  CHECK(static_cast<uint8_t*>(x.data())[0] == 0);
  Failure late;
  CHECK(!event->query(&late) && late.message == heard.message);  // the event outlives its stream
  CHECK(!event->synchronize(&late));
  std::puts("ok destruction drops queued work and joins");
}

struct Fixture {
  int freed = 0;
  std::shared_ptr<AddonState> state = std::make_shared<AddonState>();
  std::unique_ptr<nuvec::StreamRegistry> registry = std::make_unique<nuvec::StreamRegistry>(state);
  uint64_t buffer(size_t bytes) {
    return state->AddAllocation(std::make_unique<HostAllocation>(bytes, &freed), false);
  }
};

void Pins() {
  Failure failure;
  Fixture f;
  uint64_t moduleId = f.registry->AddModule(Load(Env("NUVEC_TEST_KERNELS"), &failure));
  nuvec::Kernel* sleep = f.registry->FindModule(moduleId)->kernel("sleep", nullptr, &failure);
  nuvec::Kernel* scale = f.registry->FindModule(moduleId)->kernel("scale", nullptr, &failure);
  uint64_t streamId = f.registry->AddStream(std::make_unique<nuvec::WorkerStream>(1));
  nuvec::Stream* stream = f.registry->FindStream(streamId);
  uint64_t x = f.buffer(4096);
  LaunchShape shape;
  CHECK(stream->launch(sleep, shape, {Scalar(ParameterKind::kU64, 40)}, &failure));
  f.registry->Pin(streamId, {x}, moduleId);
  CHECK(stream->launch(scale, shape,
                       {Buffer(f.state->FindAllocation(x)), Scalar(ParameterKind::kF32, F32(2)),
                        Scalar(ParameterKind::kU32, 1024)},
                       &failure));
  f.registry->Enqueued(streamId);
  CHECK(f.state->Pins(x) == 1);
  // Released while pinned: counted as quarantined, not freed; the module's release waits too.
  f.state->HandleDone(x, true);
  f.registry->ReleaseModule(moduleId);
  CHECK(f.freed == 0 && f.registry->FindModule(moduleId) == nullptr && f.registry->Modules() == 1);
  CHECK(f.state->counters.quarantinedAllocations == 1 && f.state->counters.quarantinedBytes == 4096);
  CHECK(f.state->QuarantinedBytes(x) == 4096);
  CHECK(f.state->counters.buffersReleased == 1 && f.state->counters.bufferBytes == 0);
  CHECK(f.registry->PendingBatches() == 1);  // the release closed the batch
  f.registry->Settle();
  CHECK(f.freed == 0);  // still sleeping
  CHECK(stream->synchronize(&failure));
  f.registry->Settle();
  CHECK(f.freed == 1 && f.registry->Modules() == 0 && f.registry->PendingBatches() == 0);
  CHECK(f.state->counters.quarantinedAllocations == 0 && f.state->counters.quarantinedBytes == 0);

  // A refused operation gives its pins back.
  uint64_t y = f.buffer(64);
  f.registry->Pin(streamId, {y}, 0);
  f.registry->Unpinned(streamId, {y}, 0);
  CHECK(f.state->Pins(y) == 0);
  f.state->HandleDone(y, true);
  CHECK(f.freed == 2 && f.state->counters.quarantinedAllocations == 0);

  // Batches close by themselves every kBatchOperations operations.
  uint64_t z = f.buffer(64);
  for (size_t i = 0; i < nuvec::StreamRegistry::kBatchOperations; ++i) {
    f.registry->Pin(streamId, {z}, 0);
    CHECK(stream->write(f.state->FindAllocation(z), 0, {1}, &failure));
    f.registry->Enqueued(streamId);
  }
  CHECK(f.state->Pins(z) == nuvec::StreamRegistry::kBatchOperations && f.registry->PendingBatches() == 1);
  CHECK(stream->synchronize(&failure));
  f.registry->Settle();
  CHECK(f.state->Pins(z) == 0 && f.registry->PendingBatches() == 0);
  f.state->HandleDone(z, true);
  CHECK(f.freed == 3);
  std::puts("ok pins: released while queued, freed once the work completed; modules too");
}

void TearDownWithQueuedWork() {
  Failure failure;
  Fixture f;
  uint64_t moduleId = f.registry->AddModule(Load(Env("NUVEC_TEST_KERNELS"), &failure));
  nuvec::Kernel* sleep = f.registry->FindModule(moduleId)->kernel("sleep", nullptr, &failure);
  nuvec::Kernel* scale = f.registry->FindModule(moduleId)->kernel("scale", nullptr, &failure);
  uint64_t streamId = f.registry->AddStream(std::make_unique<nuvec::WorkerStream>(1));
  uint64_t other = f.registry->AddStream(std::make_unique<nuvec::WorkerStream>(2));
  nuvec::Stream* stream = f.registry->FindStream(streamId);
  uint64_t x = f.buffer(1 << 20);
  LaunchShape shape;
  for (int i = 0; i < 50; ++i) {
    f.registry->Pin(streamId, {x}, moduleId);
    CHECK(stream->launch(sleep, shape, {Scalar(ParameterKind::kU64, 20)}, &failure));
    f.registry->Enqueued(streamId);
    f.registry->Pin(streamId, {x}, moduleId);
    CHECK(stream->launch(scale, shape,
                         {Buffer(f.state->FindAllocation(x)), Scalar(ParameterKind::kF32, F32(2)),
                          Scalar(ParameterKind::kU32, 1024)},
                         &failure));
    f.registry->Enqueued(streamId);
  }
  auto event = stream->record(&failure);
  uint64_t eventId = f.registry->AddEvent(std::move(event));
  CHECK(f.registry->FindStream(other)->wait(f.registry->FindEvent(eventId), &failure));
  f.state->HandleDone(x, true);
  f.registry->ReleaseModule(moduleId);
  CHECK(f.freed == 0);
  auto start = std::chrono::steady_clock::now();
  f.state->TearDown();  // the process or worker exits with work queued
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 1.0);
  CHECK(f.freed == 1 && f.registry->Streams() == 0 && f.registry->Modules() == 0);
  CHECK(f.state->OwnedAllocations() == 0);
  f.registry.reset();  // after the state's teardown: nothing left to do
  std::puts("ok teardown with queued work: workers joined, then everything freed");
}

}  // namespace

int main() {
  Modules();
  OrderAndKinds();
  WaitsAndFailures();
  Teardown();
  Pins();
  TearDownWithQueuedWork();
  std::printf("all %d checks passed\n", nuvec_test::checks);
  return 0;
}
