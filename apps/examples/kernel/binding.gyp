{
  "targets": [
    {
      "target_name": "nuvec_example_kernel",
      "sources": ["kernel.cc", "host_kernels.cc"],
      "include_dirs": ["<!(node ../scripts/node-addon-api-dir.mjs)"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS", "NODE_ADDON_API_CPP_EXCEPTIONS_ALL"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter", "-O2", "-ffp-contract=off"],
      "conditions": [
        [
          "OS=='mac'",
          {
            "sources": ["metal/kernel_metal.mm"],
            "defines": ["NUVEC_EXAMPLE_METAL"],
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
        ]
      ]
    }
  ]
}
