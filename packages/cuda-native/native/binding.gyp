# Here, not at the package root: a binding.gyp at the root of a published package makes npm and pnpm run
# `node-gyp rebuild` at install (pnpm then asks for approval). It is built only when asked for:
# scripts/build-from-source.mjs (the workspace's build, and `npx @nuvec/cuda-native build`) runs node-gyp here,
# so the addon lands in native/build/Release, where loadCudaBackend() looks. Linux only; no CUDA toolkit: the
# driver API is loaded at run time (dlopen, hence -ldl).
#
# The platform interface and the N-API layer are @nuvec/metal-native's (its native/core/ and native/napi/,
# shipped in its package), found through the dependency: shared_layers.cc includes their sources, so they
# are compiled here beside this addon's own files: one copy of that code for both addons. gpu/run.sh compiles the same sources with the same defines by hand
# (the GPU machine has no node-gyp): keep the two in step.
{
  "variables": {
    "metal_native": "<!(node -p \"require('path').dirname(require.resolve('@nuvec/metal-native/package.json'))\")"
  },
  "targets": [
    {
      "target_name": "nuvec_cuda_native",
      "conditions": [
        [
          "OS=='linux'",
          {
            "sources": ["binding.cc", "cuda_driver.cc", "cuda_platform.cc", "shared_layers.cc"],
            "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "<(metal_native)/native"],
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
