# Here, not at the package root: a binding.gyp at the root of a published package makes npm and pnpm run
# `node-gyp rebuild` at install (pnpm then asks for approval). It is built only when asked for:
# scripts/build-from-source.mjs (the workspace's build, and `npx @nuvec/metal-native build`) runs node-gyp here,
# so the addon lands in native/build/Release. The Linux prebuilds read the same settings (scripts/prebuild.mjs).
# The shared core, the N-API layer and the compiler settings come from native-core/native_core.gypi: a copy
# of @nuvec/native-core that scripts/build-from-source.mjs refreshes (git-ignored, published with this
# package). This file adds the entry point and this package's platform layer.
{
  "targets": [
    {
      "target_name": "nuvec_metal_native",
      "includes": ["native-core/native_core.gypi"],
      "sources": ["binding.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "conditions": [
        [
          "OS=='mac'",
          {
            "sources": ["metal/metal_platform.mm", "metal/metal_streams.mm"],
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
            "sources": ["host/host_platform.cc", "host/host_streams.cc", "host/host_system.cc", "host/host_wiring.cc"]
          }
        ]
      ]
    }
  ]
}
