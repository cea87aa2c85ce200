// Modules of host kernels (streams.h's Module for ModuleSource::kHostLibrary): a shared library loaded with
// dlopen(RTLD_NOW | RTLD_LOCAL) that exports `nuvec_host_kernels`, the table of nuvec_host_kernels.h. A
// library that fails to load, lacks the symbol or has a table of another version is a kFormat failure with
// dlerror's text (or the table's fault) as its log. The library stays loaded while its module or any
// prepared launch of its kernels exists (they share it), so a kernel never runs after dlclose.
#ifndef NUVEC_HOST_MODULE_H_
#define NUVEC_HOST_MODULE_H_

#include <memory>
#include <string>
#include <vector>

#include "nuvec_host_kernels.h"
#include "streams.h"
#include "worker_stream.h"

namespace nuvec {

// A loaded library: dlclose'd when the last module or launch sharing it goes.
class HostLibrary {
 public:
  HostLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  ~HostLibrary();
  HostLibrary(const HostLibrary&) = delete;
  HostLibrary& operator=(const HostLibrary&) = delete;
  const std::string& path() const { return path_; }

 private:
  void* handle_;
  std::string path_;
};

// A launch with its arguments resolved to the table's slots, ready to run on any thread.
struct PreparedLaunch {
  std::shared_ptr<HostLibrary> library;
  const nuvec_host_kernel* entry = nullptr;
  nuvec_host_launch launch{};
  std::vector<void*> buffers;
  std::vector<uint64_t> scalars;
  // Runs the kernel; false and a kSystem failure (syscall "kernel <name>", errnum its return value, errname
  // NUVEC_HOST_KERNEL_FAILED, the kernel's text in the message) when it returns non-zero.
  bool Run(Failure* failure) const;
};

class HostKernel final : public WorkerKernel {
 public:
  HostKernel(std::shared_ptr<HostLibrary> library, const nuvec_host_kernel* entry,
             std::vector<ParameterKind> parameters)
      : library_(std::move(library)), entry_(entry), name_(entry->name), parameters_(std::move(parameters)) {}
  const std::string& name() const override { return name_; }
  const std::vector<ParameterKind>& parameters() const override { return parameters_; }
  // Resolves `args` (their kinds checked against the parameters again, buffers to their CPU addresses).
  bool PrepareLaunch(const LaunchShape& shape, const std::vector<KernelArgument>& args, PreparedLaunch* launch,
                     Failure* failure) const;
  // The same, as the function a worker stream runs.
  bool Prepare(const LaunchShape& shape, const std::vector<KernelArgument>& args, std::function<bool(Failure*)>* run,
               Failure* failure) const override;

 private:
  std::shared_ptr<HostLibrary> library_;
  const nuvec_host_kernel* entry_;
  std::string name_;
  std::vector<ParameterKind> parameters_;
};

class HostModule final : public Module {
 public:
  explicit HostModule(std::vector<std::unique_ptr<HostKernel>> kernels) : kernels_(std::move(kernels)) {}
  Kernel* kernel(const std::string& name, const std::vector<ParameterKind>* declared, Failure* failure) override;
  std::vector<std::string> kernelNames() const override;

 private:
  std::vector<std::unique_ptr<HostKernel>> kernels_;
};

// The parameter kinds of a table's letters ("bfu"), or false and the fault.
bool ParseHostParameters(const char* letters, std::vector<ParameterKind>* kinds, std::string* fault);
// The names of the kinds, comma-separated ("buffer, f32, u32"), for messages.
std::string ParameterList(const std::vector<ParameterKind>& kinds);
// Loads a host module from source.text (a library's path); nullptr and a kFormat failure when it cannot.
std::unique_ptr<Module> LoadHostModule(const ModuleSource& source, Failure* failure);

}  // namespace nuvec

#endif  // NUVEC_HOST_MODULE_H_
