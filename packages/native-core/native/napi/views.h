// How a view (an ArrayBuffer over memory the addon owns) is made and held, by one of two mechanisms:
// - V8's BackingStore API (v8::ArrayBuffer::NewBackingStore with a deleter): the ArrayBuffer owns a backing
//   store whose deleter runs exactly when no ArrayBuffer reaches the memory any more, synchronously when we
//   detach the last one, and on whatever thread drops it after a transfer. The deleter reports to the
//   state's ViewLedger (core/addon_state.h). No Node Buffer, no finalizer, no SetImmediate, no cleanup
//   hook per view. Compiled against one Node major's V8 headers, so used only on that major.
// - Node-API's external ArrayBuffer (napi_create_external_arraybuffer): every Node version; a finalizer the
//   binding forwards to the state, and the teardown sentinel of addon.cc.
#ifndef NUVEC_NAPI_VIEWS_H_
#define NUVEC_NAPI_VIEWS_H_

#include <node_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "../core/addon_state.h"

namespace nuvec {

// A view handed out, held weakly (it may be collected).
class ViewRef {
 public:
  virtual ~ViewRef() = default;
  // The ArrayBuffer while it exists and is still attached, else nullptr.
  virtual napi_value Attached(napi_env env) = 0;
  // Detaches it when it exists and is attached; true when it was.
  virtual bool Detach(napi_env env) = 0;
};

// Why the BackingStore mechanism is not used in this environment, or nullptr when it is: not compiled in
// (a build against libc++ on Linux, whose std::shared_ptr is not the one Node's V8 takes), another Node
// major than the headers it was compiled with, or NUVEC_VIEWS=node-api in the environment.
const char* BackingStoreViewsRefused(napi_env env);

// The Node.js major whose V8 headers the BackingStore mechanism was compiled against, 0 when it was not.
int BackingStoreViewsBuiltFor();

// A view of `length` bytes at `data` whose backing store reports (id, viewId) to `ledger` when it goes.
// Only where BackingStoreViewsRefused() is nullptr. nullptr and no view when V8 refuses.
std::unique_ptr<ViewRef> MakeBackingStoreView(napi_env env, void* data, size_t length,
                                              const std::shared_ptr<ViewLedger>& ledger, uint64_t id,
                                              uint64_t viewId, napi_value* result);

}  // namespace nuvec

#endif  // NUVEC_NAPI_VIEWS_H_
