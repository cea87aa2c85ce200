// @nuvec/metal-native's platform core and N-API layer (its native/core/ and native/napi/), compiled into
// this addon: one copy of that code for both addons. They are included here rather than listed in
// binding.gyp because gyp's make generator cannot name objects for sources outside this folder (an absolute
// path has no make rule; a relative one may leave the build folder in a pnpm store). binding.gyp puts
// metal-native's native/ on the include path; gpu/run.sh does the same with g++. A file added to either
// folder of metal-native (its binding.gyp lists them) is added here too.
#include "core/addon_state.cc"
#include "core/posix.cc"
#include "core/wiring_residency_set.cc"
#include "napi/addon.cc"
#include "napi/allocation_handle.cc"
#include "napi/errors.cc"
#include "napi/residency_set_handle.cc"
