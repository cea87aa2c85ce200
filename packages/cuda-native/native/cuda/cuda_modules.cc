// Modules and kernels on CUDA (cuda_streams.h): cuModuleLoadData of PTX, CUBIN or what NVRTC made of CUDA C
// source; kernels by name (cuModuleGetFunction), their declared parameter kinds checked against the
// parameter sizes the driver reports (cuFuncGetParamInfo, CUDA 12.4+; older drivers trust the declaration).
#include <memory>
#include <string>
#include <vector>

#include "cuda_modules.h"
#include "nvrtc.h"

namespace nuvec {

using namespace cuda;

namespace {

const char* KindName(ParameterKind kind) {
  static const char* const kNames[] = {"buffer", "i32", "u32", "f32", "i64", "u64", "f64"};
  return kNames[static_cast<size_t>(kind)];
}

const char* PtxTypeName(char type) {
  switch (type) {
    case 'f':
      return "a 32-bit float";
    case 'd':
      return "a 64-bit float";
    case 'i':
      return "a 32-bit integer";
    default:
      return "a 64-bit integer or pointer";
  }
}

}  // namespace

CudaModule::~CudaModule() {
  // Launches of its kernels may still be queued: the module goes once the device has run them.
  context_.bind();
  context_.api->cuCtxSynchronize();
  context_.api->cuModuleUnload(module_);
}

Kernel* CudaModule::kernel(const std::string& name, const std::vector<ParameterKind>* declared, Failure* failure) {
  // The same name and declaration give the same kernel (no declaration: the kernel of no parameters).
  for (const auto& known : kernels_) {
    if (known->name() == name && (declared != nullptr ? known->parameters() == *declared : known->parameters().empty())) {
      return known.get();
    }
  }
  if (name.empty() || name.find('\0') != std::string::npos) {
    *failure = Failure::Argument("a kernel name is a non-empty string without NUL characters");
    return nullptr;
  }
  if (!context_.bound(failure)) return nullptr;
  const DriverApi& api = *context_.api;
  CUfunction function = nullptr;
  CUresult result = api.cuModuleGetFunction(&function, module_, name.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) {
    *failure = Failure::Format("the CUDA module has no kernel \"" + name +
                                   "\" (a kernel of CUDA C source is found by its extern \"C\" name)",
                               "");
    return nullptr;
  }
  if (result != CUDA_SUCCESS) {
    context_.refused("cuModuleGetFunction", result, failure);
    return nullptr;
  }
  // The sizes of its parameters, where the driver says them.
  std::vector<size_t> sizes;
  bool known = api.cuFuncGetParamInfo != nullptr;
  if (known) {
    for (size_t index = 0;; index += 1) {
      size_t offset = 0;
      size_t size = 0;
      result = api.cuFuncGetParamInfo(function, index, &offset, &size);
      if (result == CUDA_ERROR_INVALID_VALUE) break;
      if (result != CUDA_SUCCESS) {
        known = false;  // the driver cannot say: the declaration stands
        sizes.clear();
        break;
      }
      sizes.push_back(size);
    }
  }
  // Where the driver cannot say the sizes, the PTX's declarations can (a size per class).
  auto entry = ptxEntries_.find(name);
  const PtxParameterClasses* classes = entry != ptxEntries_.end() ? &entry->second : nullptr;
  if (!known && classes != nullptr && classes->find('?') == std::string::npos) {
    sizes.clear();
    for (char type : *classes) sizes.push_back(type == 'f' || type == 'i' ? 4 : 8);
    known = true;
  }
  std::vector<ParameterKind> parameters;
  if (declared != nullptr) {
    parameters = *declared;
    if (known) {
      std::string mismatch;
      if (sizes.size() != parameters.size()) {
        mismatch = "it takes " + std::to_string(sizes.size()) + " parameters, the declaration names " +
                   std::to_string(parameters.size());
      } else {
        for (size_t index = 0; index < sizes.size(); index += 1) {
          if (sizes[index] != ParameterBytes(parameters[index])) {
            mismatch = "parameter " + std::to_string(index) + " is " + std::to_string(sizes[index]) +
                       " bytes, a " + KindName(parameters[index]) + " " +
                       std::to_string(ParameterBytes(parameters[index]));
            break;
          }
        }
      }
      // Same sizes: the PTX's types tell an f32 from a u32 and an f64 from a u64 (not a buffer from a u64).
      if (mismatch.empty() && classes != nullptr && classes->size() == parameters.size()) {
        for (size_t index = 0; index < parameters.size(); index += 1) {
          char type = (*classes)[index];
          if (type != '?' && type != PtxClassOf(parameters[index])) {
            mismatch = "parameter " + std::to_string(index) + " is " + PtxTypeName(type) + " in the PTX, declared " +
                       KindName(parameters[index]);
            break;
          }
        }
      }
      if (!mismatch.empty()) {
        *failure = Failure::Argument("kernel \"" + name + "\" does not match its declared parameters: " + mismatch);
        return nullptr;
      }
    }
  } else if (!known || !sizes.empty()) {
    *failure = Failure::Argument("kernel \"" + name + "\" " +
                                 (known ? "takes " + std::to_string(sizes.size()) + " parameters: "
                                        : std::string("may take parameters: ")) +
                                 "declare their kinds (a CUDA module cannot say them)");
    return nullptr;
  }
  kernels_.push_back(std::make_unique<CudaKernel>(name, std::move(parameters), function));
  return kernels_.back().get();
}

bool CudaModule::listsKernels() const {
  const DriverApi& api = *context_.api;
  return api.cuModuleGetFunctionCount != nullptr && api.cuModuleEnumerateFunctions != nullptr &&
         api.cuFuncGetName != nullptr;
}

std::vector<std::string> CudaModule::kernelNames() const {
  std::vector<std::string> names;
  if (!listsKernels() || context_.bind() != CUDA_SUCCESS) return names;
  const DriverApi& api = *context_.api;
  unsigned int count = 0;
  if (api.cuModuleGetFunctionCount(&count, module_) != CUDA_SUCCESS || count == 0) return names;
  std::vector<CUfunction> functions(count);
  if (api.cuModuleEnumerateFunctions(functions.data(), count, module_) != CUDA_SUCCESS) return names;
  for (CUfunction function : functions) {
    const char* name = nullptr;
    if (api.cuFuncGetName(&name, function) == CUDA_SUCCESS && name != nullptr) names.emplace_back(name);
  }
  return names;
}

std::unique_ptr<Module> LoadCudaModule(const CudaDeviceContext& context, const ModuleSource& source,
                                       Failure* failure) {
  std::string image;
  bool cubin = false;
  switch (source.kind) {
    case ModuleSource::Kind::kPtx:
      image = source.text;
      break;
    case ModuleSource::Kind::kCudaSource:
      if (!CompileCuda(source.text, source.options, context.major, context.minor, &image, &cubin, failure)) {
        if (failure->kind == Failure::Kind::kNone) {
          // No NVRTC here: the module cannot be loaded; the log says every place looked in.
          std::string looked = failure->message;
          *failure = Failure::Format(looked, looked);
        }
        return nullptr;
      }
      break;
    default:
      *failure = Failure::Format("the CUDA backend loads modules from CUDA C source or PTX only", "");
      return nullptr;
  }
  if (!cubin) {
    // PTX is text, handed to the driver NUL-terminated: one NUL at its end (NVRTC's PTX has it) is dropped.
    while (!image.empty() && image.back() == '\0') image.pop_back();
    if (image.empty() || image.find('\0') != std::string::npos) {
      *failure = Failure::Format("PTX text must be non-empty and hold no NUL character before its end", "");
      return nullptr;
    }
    image.push_back('\0');
  }
  if (!context.bound(failure)) return nullptr;
  CUmodule module = nullptr;
  CUresult result = context.api->cuModuleLoadData(&module, image.data());
  if (result != CUDA_SUCCESS) {
    std::string why = ResultText(*context.api, result);
    *failure = Failure::Format("the CUDA driver does not load the module (cuModuleLoadData: " + why + ")" +
                                   (result == 222 ? ": the PTX is newer than this driver; compile for its CUDA version"
                                                  : ""),
                               why);
    return nullptr;
  }
  return std::make_unique<CudaModule>(context, module, cubin ? std::map<std::string, PtxParameterClasses>()
                                                             : ParsePtxEntries(image));
}

}  // namespace nuvec
