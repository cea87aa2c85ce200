# The one list of the shared native core's sources and the compiler settings every nuvec addon uses. A
# backend's binding.gyp includes this file inside its target ("includes": ["native-core/native_core.gypi"]);
# gyp reads the paths here relative to this file. The backends' other builds read it too: metal-native's
# scripts/prebuild.mjs (Zig) and cuda-native's gpu/run.sh (g++), through scripts/build-settings.mjs.
# Every .cc of core/ and napi/ but the *_test.cc is listed here (scripts/check-sources.mjs checks it). Host
# modules are loaded with dlopen and streams run worker threads: -ldl and -pthread on Linux.
{
  "sources": [
    "core/addon_state.cc",
    "core/host_module.cc",
    "core/posix.cc",
    "core/stream_registry.cc",
    "core/wiring_residency_set.cc",
    "core/worker_stream.cc",
    "napi/addon.cc",
    "napi/allocation_handle.cc",
    "napi/errors.cc",
    "napi/event_module_handles.cc",
    "napi/residency_set_handle.cc",
    "napi/stream_arguments.cc",
    "napi/stream_handles.cc",
    "napi/views.cc"
  ],
  "include_dirs": ["."],
  "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS", "NODE_ADDON_API_CPP_EXCEPTIONS_ALL"],
  "cflags!": ["-fno-exceptions"],
  "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
  "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
  "conditions": [["OS=='linux'", {"libraries": ["-ldl", "-pthread"]}]]
}
