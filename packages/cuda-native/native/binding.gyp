# Here, not at the package root: a binding.gyp at the root of a published package makes npm and pnpm run
# `node-gyp rebuild` at install (pnpm then asks for approval). It is built only when asked for:
# scripts/build-from-source.mjs (the workspace's build, and `npx @nuvec/cuda-native build`) runs node-gyp here,
# so the addon lands in native/build/Release, where loadCudaBackend() looks. Linux only; no CUDA toolkit: the
# driver API is loaded at run time (dlopen, hence -ldl). gpu/run.sh compiles the same sources with the same
# defines by hand (the GPU machine has no node-gyp): keep the two in step.
{
  "targets": [
    {
      "target_name": "nuvec_cuda_native",
      "conditions": [
        [
          "OS=='linux'",
          {
            "sources": ["binding.cc", "posix.cc", "cuda_platform.cc"],
            "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
            "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS", "NODE_ADDON_API_CPP_EXCEPTIONS_ALL"],
            "cflags!": ["-fno-exceptions"],
            "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
            "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            "libraries": ["-ldl"]
          }
        ]
      ]
    }
  ]
}
