// NVRTC, CUDA's run-time compiler, loaded with dlopen where present (never linked, never downloaded): the
// CUDA backend compiles a module's CUDA C source with it to PTX (or CUBIN for a real `-arch=sm_XY`), which
// the driver then loads (cuModuleLoadData).
#ifndef NUVEC_CUDA_NVRTC_H_
#define NUVEC_CUDA_NVRTC_H_

#include <string>
#include <vector>

#include "core/platform.h"

namespace nuvec {
namespace cuda {

// The environment variable that names the NVRTC library to load (a file), before any search.
constexpr const char* kNvrtcLibraryVariable = "NUVEC_NVRTC_LIBRARY";

// Loads NVRTC once per process. Where it looks, in order: the file $NUVEC_NVRTC_LIBRARY names (only that
// when it is set); libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so on the loader's search path; the CUDA
// toolkit's lib64 (/usr/local/cuda); the NVIDIA pip wheels' nvidia/*/lib of the Python environments whose
// bin/ is on PATH. false and *why (naming every place it looked) where none loads.
bool NvrtcAvailable(std::string* why);

// Compiles `source` with `options` to an image for cuModuleLoadData: PTX for a virtual architecture
// (`-arch=compute_XY`, added for the device's compute capability `major`.`minor` unless the options name
// one), CUBIN for a real one (`-arch=sm_XY`). `*cubin` says which. false and a failure: kFormat with the
// compiler's log for source that does not compile, kArgument for bad options (the log too), kNone with
// the places looked for NVRTC where it is absent.
bool CompileCuda(const std::string& source, const std::vector<std::string>& options, int major, int minor,
                 std::string* image, bool* cubin, Failure* failure);

}  // namespace cuda
}  // namespace nuvec

#endif  // NUVEC_CUDA_NVRTC_H_
