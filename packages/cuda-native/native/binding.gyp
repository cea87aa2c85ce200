# Here, not at the package root: a binding.gyp at the root of a published package makes npm and pnpm run
# `node-gyp rebuild` at install (pnpm then asks for approval). It is built only when asked for:
# scripts/build-from-source.mjs (the workspace's build, and `npx @nuvec/cuda-native build`) runs node-gyp here,
# so the addon lands in native/build/Release, where loadCudaBackend() looks. Linux only; no CUDA toolkit: the
# driver API is loaded at run time (dlopen, hence -ldl).
#
# The shared core, the N-API layer and the compiler settings come from native-core/native_core.gypi: a copy
# of @nuvec/native-core that scripts/build-from-source.mjs refreshes (git-ignored, published with this
# package). This file adds the entry point and the CUDA layer. gpu/run.sh compiles the same settings with
# g++ (the GPU machine has no node-gyp), read from here by native-core/build-settings.mjs.
{
  "targets": [
    {
      "target_name": "nuvec_cuda_native",
      "includes": ["native-core/native_core.gypi"],
      "sources": ["binding.cc", "cuda/cuda_driver.cc", "cuda/cuda_platform.cc", "cuda/cuda_spaces.cc", "cuda/cuda_streams.cc", "cuda/cuda_modules.cc", "cuda/cuda_staging.cc", "cuda/nvrtc.cc", "cuda/ptx_parameters.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "libraries": ["-ldl"]
    }
  ]
}
