// CUDA modules and kernels (cuda_modules.cc), for cuda_streams.cc.
#ifndef NUVEC_CUDA_MODULES_H_
#define NUVEC_CUDA_MODULES_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda_streams.h"
#include "ptx_parameters.h"

namespace nuvec {

// A kernel of a CudaModule: its function and declared parameter kinds.
class CudaKernel final : public Kernel {
 public:
  CudaKernel(std::string name, std::vector<ParameterKind> parameters, cuda::CUfunction function)
      : name_(std::move(name)), parameters_(std::move(parameters)), function_(function) {}
  const std::string& name() const override { return name_; }
  const std::vector<ParameterKind>& parameters() const override { return parameters_; }
  cuda::CUfunction function() const { return function_; }

 private:
  std::string name_;
  std::vector<ParameterKind> parameters_;
  cuda::CUfunction function_;
};

// A loaded module (cuModuleLoadData); unloaded on destruction once the device has run what was queued.
class CudaModule final : public Module {
 public:
  // `ptxEntries`: its kernels' parameter classes where it was loaded from PTX (empty for CUBIN).
  CudaModule(const CudaDeviceContext& context, cuda::CUmodule module,
             std::map<std::string, PtxParameterClasses> ptxEntries)
      : context_(context), module_(module), ptxEntries_(std::move(ptxEntries)) {}
  ~CudaModule() override;
  Kernel* kernel(const std::string& name, const std::vector<ParameterKind>* declared, Failure* failure) override;
  // Its kernels' names (cuModuleEnumerateFunctions + cuFuncGetName, CUDA 12.4+); empty on older drivers.
  std::vector<std::string> kernelNames() const override;
  // Whether the driver enumerates a module's functions (cuModuleEnumerateFunctions, CUDA 12.4+).
  bool listsKernels() const override;

 private:
  CudaDeviceContext context_;
  cuda::CUmodule module_;
  std::map<std::string, PtxParameterClasses> ptxEntries_;
  std::vector<std::unique_ptr<CudaKernel>> kernels_;
};

// Loads a module from PTX (kPtx) or CUDA C source (kCudaSource, compiled with NVRTC). kFormat for source
// that does not compile (the log in the failure) or an image the driver does not load.
std::unique_ptr<Module> LoadCudaModule(const CudaDeviceContext& context, const ModuleSource& source, Failure* failure);

}  // namespace nuvec

#endif  // NUVEC_CUDA_MODULES_H_
