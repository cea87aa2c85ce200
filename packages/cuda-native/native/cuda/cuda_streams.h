// Streams, events and modules of kernels on CUDA (core/streams.h): the driver's own streams (non-blocking,
// so they never wait on the legacy default stream), events without timing, modules loaded from PTX, CUBIN
// or CUDA C source compiled with NVRTC (nvrtc.h), launches with cuLaunchKernel, copies on the stream, and
// pinned staging for the bytes of writes and reads.
#ifndef NUVEC_CUDA_STREAMS_H_
#define NUVEC_CUDA_STREAMS_H_

#include <memory>

#include "core/streams.h"
#include "cuda_driver.h"

namespace nuvec {

// What the streams of one device need of its platform: the driver, the device and its primary context
// (made current on the calling thread before every driver call), and its compute capability (NVRTC's
// default architecture).
struct CudaDeviceContext {
  const cuda::DriverApi* api = nullptr;
  cuda::CUdevice device = 0;
  cuda::CUcontext context = nullptr;
  int major = 0;
  int minor = 0;

  // Makes the context current when it is not; CUDA_SUCCESS or the driver's refusal.
  cuda::CUresult bind() const;
  // bind(), its refusal as a failure.
  bool bound(Failure* failure) const;
  // The driver's refusal of `call` as a failure (kSystem, the code's name as errno); always false.
  bool refused(const char* call, cuda::CUresult result, Failure* failure) const;
};

// The StreamPlatform of a CUDA device, or nullptr and a failure where the driver lacks streams (a driver
// older than CUDA 10) or does not say the compute capability.
std::unique_ptr<StreamPlatform> CreateCudaStreamPlatform(const cuda::DriverApi* api, cuda::CUdevice device,
                                                         cuda::CUcontext context, Failure* failure);

}  // namespace nuvec

#endif  // NUVEC_CUDA_STREAMS_H_
