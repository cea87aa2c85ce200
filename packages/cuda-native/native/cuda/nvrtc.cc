// See nvrtc.h. The types and values are NVRTC's (nvrtc.h, stable since CUDA 7; the CUBIN calls since 11.1).
#include "nvrtc.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace nuvec {
namespace cuda {
namespace {

using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;
constexpr nvrtcResult NVRTC_ERROR_INVALID_OPTION = 5;

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult result);
  nvrtcResult (*nvrtcVersion)(int* major, int* minor);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name, int headers,
                                    const char* const* headerSources, const char* const* headerNames);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int count, const char* const* options);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram program, char* ptx);
  // Optional (NVRTC 11.1+): CUBIN for a real architecture.
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program);
};

// Binds every entry point of an opened library; false (and what it lacks) when one is missing.
bool Bind(void* library, NvrtcApi* api, std::string* missing) {
  bool complete = true;
  auto bind = [&](auto& slot, const char* name, bool required) {
    void* symbol = dlsym(library, name);
    if (symbol == nullptr && required) {
      complete = false;
      *missing += missing->empty() ? name : std::string(", ") + name;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(symbol);
  };
  bind(api->nvrtcGetErrorString, "nvrtcGetErrorString", true);
  bind(api->nvrtcVersion, "nvrtcVersion", true);
  bind(api->nvrtcCreateProgram, "nvrtcCreateProgram", true);
  bind(api->nvrtcCompileProgram, "nvrtcCompileProgram", true);
  bind(api->nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", true);
  bind(api->nvrtcGetProgramLog, "nvrtcGetProgramLog", true);
  bind(api->nvrtcGetPTXSize, "nvrtcGetPTXSize", true);
  bind(api->nvrtcGetPTX, "nvrtcGetPTX", true);
  bind(api->nvrtcGetCUBINSize, "nvrtcGetCUBINSize", false);
  bind(api->nvrtcGetCUBIN, "nvrtcGetCUBIN", false);
  bind(api->nvrtcDestroyProgram, "nvrtcDestroyProgram", true);
  return complete;
}

// Files matching a glob pattern, sorted (glob's order), newest version names last.
std::vector<std::string> Matches(const std::string& pattern) {
  std::vector<std::string> found;
  glob_t matches{};
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (size_t index = 0; index < matches.gl_pathc; index += 1) found.emplace_back(matches.gl_pathv[index]);
  }
  globfree(&matches);
  return found;
}

// The candidates after the loader's own search path: the toolkit's, then the pip wheels' of each Python
// environment on PATH (a venv's bin/ → its lib/python3.*/site-packages/nvidia/*/lib/).
std::vector<std::string> Candidates() {
  std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
    candidates.push_back(std::string("/usr/local/cuda/lib64/") + name);
  }
  std::vector<std::string> prefixes;
  const char* path = std::getenv("PATH");
  if (path != nullptr) {
    std::stringstream entries(path);
    std::string entry;
    while (std::getline(entries, entry, ':')) {
      if (entry.size() > 4 && entry.compare(entry.size() - 4, 4, "/bin") == 0) prefixes.push_back(entry.substr(0, entry.size() - 4));
    }
  }
  prefixes.push_back("/usr/local");
  prefixes.push_back("/usr");
  for (const std::string& prefix : prefixes) {
    for (const char* packages : {"site-packages", "dist-packages"}) {
      std::string base = prefix + "/lib/python3*/" + packages + "/nvidia/";
      for (const char* pattern : {"cu13/lib/libnvrtc.so.13", "cuda_nvrtc/lib/libnvrtc.so.12", "*/lib/libnvrtc.so*"}) {
        for (std::string& match : Matches(base + pattern)) {
          if (match.find("builtins") == std::string::npos && match.find("alt") == std::string::npos) {
            candidates.push_back(std::move(match));
          }
        }
      }
    }
  }
  return candidates;
}

struct Loaded {
  NvrtcApi api{};
  bool ok = false;
  std::string why;
};

const Loaded& Load() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* named = std::getenv(kNvrtcLibraryVariable);
    std::vector<std::string> candidates;
    if (named != nullptr && named[0] != '\0') {
      candidates.push_back(named);
    } else {
      candidates = Candidates();
    }
    std::string tried;
    for (const std::string& candidate : candidates) {
      void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library == nullptr) {
        const char* error = dlerror();
        // A bare name the loader did not find says only that; a file that exists but does not load says why.
        tried += "\n  " + candidate + (candidate.find('/') != std::string::npos && error != nullptr
                                           ? std::string(": ") + error
                                           : std::string(": not found"));
        continue;
      }
      std::string missing;
      if (!Bind(library, &loaded.api, &missing)) {
        tried += "\n  " + candidate + ": lacks " + missing;
        dlclose(library);
        continue;
      }
      loaded.ok = true;  // kept loaded for the process
      return;
    }
    loaded.why = std::string("NVRTC (CUDA's run-time compiler) cannot be loaded, so CUDA C source cannot be ") +
                 "compiled here (load PTX instead, or install NVRTC: the CUDA toolkit, or the nvidia-cuda-nvrtc " +
                 "wheel; " + kNvrtcLibraryVariable + " names a file to load). Looked for:" + tried;
  });
  return loaded;
}

// The architecture option among `options`, or "" when none names one.
std::string ArchitectureOf(const std::vector<std::string>& options) {
  for (size_t index = 0; index < options.size(); index += 1) {
    const std::string& option = options[index];
    for (const char* prefix : {"-arch=", "--gpu-architecture="}) {
      size_t length = std::strlen(prefix);
      if (option.compare(0, length, prefix) == 0) return option.substr(length);
    }
    if ((option == "-arch" || option == "--gpu-architecture") && index + 1 < options.size()) return options[index + 1];
  }
  return "";
}

}  // namespace

bool NvrtcAvailable(std::string* why) {
  const Loaded& loaded = Load();
  if (!loaded.ok) *why = loaded.why;
  return loaded.ok;
}

bool CompileCuda(const std::string& source, const std::vector<std::string>& options, int major, int minor,
                 std::string* image, bool* cubin, Failure* failure) {
  const Loaded& loaded = Load();
  if (!loaded.ok) {
    failure->kind = Failure::Kind::kNone;
    failure->message = loaded.why;
    return false;
  }
  const NvrtcApi& api = loaded.api;
  std::vector<std::string> all = options;
  std::string architecture = ArchitectureOf(options);
  if (architecture.empty()) {
    architecture = "compute_" + std::to_string(major) + std::to_string(minor);
    all.push_back("-arch=" + architecture);
  }
  *cubin = architecture.compare(0, 3, "sm_") == 0;
  if (*cubin && (api.nvrtcGetCUBINSize == nullptr || api.nvrtcGetCUBIN == nullptr)) {
    *failure = Failure::Argument("this NVRTC has no CUBIN output (nvrtcGetCUBIN): use -arch=compute_XY for PTX");
    return false;
  }
  auto text = [&](nvrtcResult result) {
    const char* message = api.nvrtcGetErrorString(result);
    return std::string(message != nullptr ? message : "NVRTC error ") + " (" + std::to_string(result) + ")";
  };
  nvrtcProgram program = nullptr;
  nvrtcResult result = api.nvrtcCreateProgram(&program, source.c_str(), "nuvec_module.cu", 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    *failure = Failure::Format("nvrtcCreateProgram failed: " + text(result), "");
    return false;
  }
  std::vector<const char*> pointers;
  for (const std::string& option : all) pointers.push_back(option.c_str());
  result = api.nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data());
  std::string log;
  size_t logSize = 0;
  if (api.nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    log.resize(logSize);
    if (api.nvrtcGetProgramLog(program, &log[0]) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  if (result != NVRTC_SUCCESS) {
    api.nvrtcDestroyProgram(&program);
    std::string message = "the CUDA module does not compile (NVRTC: " + text(result) + ")" +
                          (log.empty() ? std::string("") : ":\n" + log);
    if (result == NVRTC_ERROR_INVALID_OPTION) {
      *failure = Failure::Argument(message);
      failure->log = log;
    } else {
      *failure = Failure::Format(message, log);
    }
    return false;
  }
  size_t size = 0;
  result = *cubin ? api.nvrtcGetCUBINSize(program, &size) : api.nvrtcGetPTXSize(program, &size);
  if (result == NVRTC_SUCCESS) {
    image->assign(size, '\0');
    result = *cubin ? api.nvrtcGetCUBIN(program, &(*image)[0]) : api.nvrtcGetPTX(program, &(*image)[0]);
  }
  api.nvrtcDestroyProgram(&program);
  if (result != NVRTC_SUCCESS) {
    *failure = Failure::Format(std::string("NVRTC compiled the module but gave no ") + (*cubin ? "CUBIN" : "PTX") +
                                   ": " + text(result),
                               log);
    return false;
  }
  return true;
}

}  // namespace cuda
}  // namespace nuvec
