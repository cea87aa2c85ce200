{
  "targets": [
    {
      "target_name": "nuvec_cuda_native",
      "conditions": [
        [
          "OS=='linux'",
          {
            "sources": ["native/binding.cc", "native/posix.cc", "native/cuda_platform.cc"],
            "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
            "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
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
