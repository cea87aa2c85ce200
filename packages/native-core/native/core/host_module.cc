// See host_module.h.
#include "host_module.h"

#include <dlfcn.h>

#include <cstring>
#include <unordered_set>

namespace nuvec {

namespace {
const char* const kKindNames[] = {"buffer", "i32", "u32", "f32", "i64", "u64", "f64"};
constexpr size_t kErrorLength = 512;
}  // namespace

HostLibrary::~HostLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

bool ParseHostParameters(const char* letters, std::vector<ParameterKind>* kinds, std::string* fault) {
  kinds->clear();
  if (letters == nullptr) {
    *fault = "its parameters are NULL";
    return false;
  }
  for (const char* letter = letters; *letter != '\0'; ++letter) {
    switch (*letter) {
      case ' ': break;
      case 'b': kinds->push_back(ParameterKind::kBuffer); break;
      case 'i': kinds->push_back(ParameterKind::kI32); break;
      case 'u': kinds->push_back(ParameterKind::kU32); break;
      case 'f': kinds->push_back(ParameterKind::kF32); break;
      case 'I': kinds->push_back(ParameterKind::kI64); break;
      case 'U': kinds->push_back(ParameterKind::kU64); break;
      case 'd': kinds->push_back(ParameterKind::kF64); break;
      default:
        *fault = std::string("its parameters \"") + letters + "\" have '" + *letter +
                 "', which is none of b i u f I U d";
        return false;
    }
  }
  return true;
}

std::string ParameterList(const std::vector<ParameterKind>& kinds) {
  std::string list;
  for (ParameterKind kind : kinds) {
    if (!list.empty()) list += ", ";
    list += kKindNames[static_cast<size_t>(kind)];
  }
  return list.empty() ? "none" : list;
}

bool PreparedLaunch::Run(Failure* failure) const {
  char error[kErrorLength];
  std::memset(error, 0, sizeof error);
  int result = entry->run(&launch, buffers.data(), scalars.data(), error, sizeof error);
  if (result == 0) return true;
  error[sizeof error - 1] = '\0';
  std::string text = error[0] != '\0' ? error : "no message";
  *failure = Failure::Driver(std::string("kernel ") + entry->name, result, "NUVEC_HOST_KERNEL_FAILED",
                             std::string("the host kernel ") + entry->name + " failed (" + std::to_string(result) +
                                 "): " + text);
  return false;
}

bool HostKernel::Prepare(const LaunchShape& shape, const std::vector<KernelArgument>& args,
                         std::function<bool(Failure*)>* run, Failure* failure) const {
  PreparedLaunch launch;
  if (!PrepareLaunch(shape, args, &launch, failure)) return false;
  auto prepared = std::make_shared<PreparedLaunch>(std::move(launch));
  *run = [prepared](Failure* failed) { return prepared->Run(failed); };
  return true;
}

bool HostKernel::PrepareLaunch(const LaunchShape& shape, const std::vector<KernelArgument>& args,
                               PreparedLaunch* launch, Failure* failure) const {
  if (args.size() != parameters_.size()) {
    *failure = Failure::Argument("the kernel " + name_ + " takes " + std::to_string(parameters_.size()) +
                                 " arguments, got " + std::to_string(args.size()));
    return false;
  }
  launch->library = library_;
  launch->entry = entry_;
  for (int axis = 0; axis < 3; ++axis) {
    launch->launch.grid[axis] = shape.grid[axis];
    launch->launch.block[axis] = shape.block[axis];
  }
  launch->launch.shared_bytes = shape.sharedBytes;
  launch->launch.argument_count = static_cast<uint32_t>(args.size());
  launch->buffers.assign(args.size(), nullptr);
  launch->scalars.assign(args.size(), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArgument& arg = args[i];
    if (arg.kind != parameters_[i]) {
      *failure = Failure::Argument("argument " + std::to_string(i) + " of " + name_ + " must be " +
                                   kKindNames[static_cast<size_t>(parameters_[i])]);
      return false;
    }
    if (arg.kind != ParameterKind::kBuffer) {
      launch->scalars[i] = arg.bits;
      continue;
    }
    char* base = arg.allocation == nullptr ? nullptr : static_cast<char*>(arg.allocation->data());
    if (base == nullptr) {
      *failure = Failure::Argument("argument " + std::to_string(i) + " of " + name_ + " has no CPU address");
      return false;
    }
    launch->buffers[i] = base + arg.offset;
  }
  return true;
}

Kernel* HostModule::kernel(const std::string& name, const std::vector<ParameterKind>* declared, Failure* failure) {
  for (const auto& kernel : kernels_) {
    if (kernel->name() != name) continue;
    if (declared != nullptr && *declared != kernel->parameters()) {
      *failure = Failure::Argument("the kernel " + name + " takes (" + ParameterList(kernel->parameters()) +
                                   "), declared (" + ParameterList(*declared) + ")");
      return nullptr;
    }
    return kernel.get();
  }
  std::string names;
  for (const std::string& known : kernelNames()) names += (names.empty() ? "" : ", ") + known;
  *failure = Failure::Format("the module has no kernel named \"" + name + "\" (it has: " +
                                 (names.empty() ? "none" : names) + ")",
                             "");
  return nullptr;
}

std::vector<std::string> HostModule::kernelNames() const {
  std::vector<std::string> names;
  for (const auto& kernel : kernels_) names.push_back(kernel->name());
  return names;
}

std::unique_ptr<Module> LoadHostModule(const ModuleSource& source, Failure* failure) {
  auto refuse = [&](const std::string& log) {
    *failure = Failure::Format("the host module " + source.text + " cannot be loaded: " + log, log);
    return nullptr;
  };
  if (source.kind != ModuleSource::Kind::kHostLibrary) return refuse("it is not a host library");
  dlerror();
  void* handle = dlopen(source.text.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return refuse(why != nullptr ? why : "dlopen failed");
  }
  auto library = std::make_shared<HostLibrary>(handle, source.text);
  dlerror();
  const auto* table = static_cast<const nuvec_host_kernel_table*>(dlsym(handle, "nuvec_host_kernels"));
  if (table == nullptr) {
    const char* why = dlerror();
    return refuse(why != nullptr ? why : "the symbol nuvec_host_kernels is NULL");
  }
  if (table->version != NUVEC_HOST_KERNELS_VERSION) {
    return refuse("its nuvec_host_kernels has version " + std::to_string(table->version) + ", this nuvec reads " +
                  std::to_string(NUVEC_HOST_KERNELS_VERSION));
  }
  if (table->count > 0 && table->kernels == nullptr) return refuse("its nuvec_host_kernels has no kernels array");
  std::vector<std::unique_ptr<HostKernel>> kernels;
  std::unordered_set<std::string> names;
  for (uint32_t i = 0; i < table->count; ++i) {
    const nuvec_host_kernel* entry = &table->kernels[i];
    std::string which = "kernel " + std::to_string(i);
    if (entry->name == nullptr || entry->name[0] == '\0') return refuse(which + " has no name");
    which += " (" + std::string(entry->name) + ")";
    if (entry->run == nullptr) return refuse(which + " has no run function");
    if (!names.insert(entry->name).second) return refuse(which + " has the name of an earlier kernel");
    std::vector<ParameterKind> kinds;
    std::string fault;
    if (!ParseHostParameters(entry->parameters, &kinds, &fault)) return refuse(which + ": " + fault);
    kernels.push_back(std::make_unique<HostKernel>(library, entry, std::move(kinds)));
  }
  return std::make_unique<HostModule>(std::move(kernels));
}

}  // namespace nuvec
