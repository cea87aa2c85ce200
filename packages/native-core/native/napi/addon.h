// What both addons' entry files call: the instance data, the shared classes and the common exports. An
// entry file (metal-native's native/binding.cc, cuda-native's native/binding.cc) makes its platform or not,
// sets its BindingFeatures, calls InitCommon, then adds its own exports and NODE_API_MODULE.
#ifndef NUVEC_NAPI_ADDON_H_
#define NUVEC_NAPI_ADDON_H_

#include <napi.h>

#include "handles.h"

namespace nuvec {

// Registers `data` as this environment's instance data (it owns it from then on), defines the handle
// classes, arranges the teardown at the environment's cleanup and the V8 accounting of buffers, and sets
// the common exports: NativeBufferHandle, NativeMappedFileHandle, NativeResidencySetHandle, facts, counters,
// lastWiringError, attachResidencySet, noop.
void InitCommon(Napi::Env env, Napi::Object exports, AddonData* data);

// facts() as both addons report them (cuda-native's adds its own fields to this object).
Napi::Object FactsObject(Napi::Env env, const DeviceFacts& facts);

}  // namespace nuvec

#endif  // NUVEC_NAPI_ADDON_H_
