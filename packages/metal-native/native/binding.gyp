# Here, not at the package root: a binding.gyp at the root of a published package makes npm and pnpm run
# `node-gyp rebuild` at install (pnpm then asks for approval). It is built only when asked for:
# scripts/build-from-source.mjs (the workspace's build, and `npx @nuvec/metal-native build`) runs node-gyp here,
# so the addon lands in native/build/Release. The Linux prebuilds use the same lists (scripts/prebuild.mjs).
# core/ and napi/ are shared with @nuvec/cuda-native, whose binding.gyp compiles them from here: a file
# added to either folder goes into its list too.
{
  "targets": [
    {
      "target_name": "nuvec_metal_native",
      "sources": [
        "binding.cc",
        "core/addon_state.cc",
        "core/posix.cc",
        "core/wiring_residency_set.cc",
        "napi/addon.cc",
        "napi/allocation_handle.cc",
        "napi/errors.cc",
        "napi/residency_set_handle.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS", "NODE_ADDON_API_CPP_EXCEPTIONS_ALL"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "conditions": [
        [
          "OS=='mac'",
          {
            "sources": ["metal/metal_platform.mm"],
            "link_settings": {
              "libraries": ["-framework Metal", "-framework Foundation"]
            },
            "xcode_settings": {
              "CLANG_ENABLE_OBJC_ARC": "YES",
              "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
              "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
              "MACOSX_DEPLOYMENT_TARGET": "14.0",
              "OTHER_CFLAGS": ["-fobjc-arc"]
            }
          }
        ],
        [
          "OS!='mac' and OS!='win'",
          {
            "sources": ["host/host_platform.cc", "host/host_system.cc"]
          }
        ]
      ]
    }
  ]
}
