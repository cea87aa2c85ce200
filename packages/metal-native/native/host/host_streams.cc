// The host layer's streams (core/streams.h): a worker thread per stream (core/worker_stream.h) on the
// process's memory, and modules of host kernels loaded with dlopen (core/host_module.h, the
// nuvec_host_kernels table of core/nuvec_host_kernels.h).
#include <atomic>
#include <memory>
#include <string>
#include <system_error>

#include "core/host_module.h"
#include "core/worker_stream.h"
#include "host_system.h"

namespace nuvec {

namespace {

class HostStreamPlatform final : public StreamPlatform {
 public:
  std::unique_ptr<Stream> newStream(Failure* failure) override {
    try {
      return std::make_unique<WorkerStream>(++lastStream_);
    } catch (const std::system_error& error) {  // no thread to be had
      *failure = Failure::System("pthread_create", error.code().value(), "",
                                 std::string("a stream's worker thread could not start: ") + error.what());
      return nullptr;
    }
  }
  std::unique_ptr<Module> loadModule(const ModuleSource& source, Failure* failure) override {
    if (source.kind != ModuleSource::Kind::kHostLibrary) {
      *failure = Failure::Format("the host backend loads modules from shared libraries only (the source's host entry)", "");
      return nullptr;
    }
    return LoadHostModule(source, failure);
  }

 private:
  std::atomic<uint64_t> lastStream_{0};
};

}  // namespace

std::unique_ptr<StreamPlatform> CreateHostStreamPlatform() { return std::make_unique<HostStreamPlatform>(); }

}  // namespace nuvec
