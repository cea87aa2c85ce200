// The BackingStore mechanism of views.h. The only file of the addon that uses V8's C++ API: napi_value and
// v8::Local<v8::Value> are converted the way Node's own Node-API implementation does (a napi_value is the
// Local's slot pointer).
#include "views.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <utility>

#if defined(NUVEC_NODE_API_VIEWS_ONLY)
#define NUVEC_BACKING_STORE_VIEWS 0  // a build for every Node.js major: no V8 API (the prebuilt fallback)
#elif defined(__has_include)
#if __has_include(<v8.h>) && __has_include(<v8-version.h>) && __has_include(<node_version.h>)
#include <v8-version.h>
// V8 13 (Node.js 24) needs C++20, and the addon is C++17 (native_core.gypi).
#if V8_MAJOR_VERSION >= 13 && __cplusplus < 202002L
#define NUVEC_BACKING_STORE_VIEWS 0
#else
#define NUVEC_BACKING_STORE_VIEWS 1
#endif
#else
#define NUVEC_BACKING_STORE_VIEWS 0
#endif
#else
#define NUVEC_BACKING_STORE_VIEWS 0
#endif

#if NUVEC_BACKING_STORE_VIEWS
// node_version.h defines the newest NAPI_VERSION; the build's own stays.
#pragma push_macro("NAPI_VERSION")
#undef NAPI_VERSION
#include <node_version.h>
#pragma pop_macro("NAPI_VERSION")
#include <v8.h>
#if defined(__linux__) && defined(_LIBCPP_VERSION)
// libc++'s std::shared_ptr is not libstdc++'s, which Node's V8 takes: ArrayBuffer::New is called through a
// shared_ptr of libstdc++'s layout (the Zig prebuilds).
#define NUVEC_LIBSTDCXX_ARRAY_BUFFER 1
#include "libstdcxx_array_buffer.h"
#endif
#endif

namespace nuvec {

#if NUVEC_BACKING_STORE_VIEWS

namespace {

static_assert(sizeof(napi_value) == sizeof(v8::Local<v8::Value>), "a napi_value is a Local's slot pointer");

napi_value ToNapi(v8::Local<v8::Value> local) { return reinterpret_cast<napi_value>(*local); }

// What a backing store's deleter reports to: owned by the backing store once V8 has it.
struct ViewToken {
  std::shared_ptr<ViewLedger> ledger;
  uint64_t id;
  uint64_t viewId;
};

// Any thread: the backing store is gone, so no ArrayBuffer reaches the memory through this view.
void ViewDeleter(void*, size_t, void* data) noexcept {
  std::unique_ptr<ViewToken> token(static_cast<ViewToken*>(data));
  try {
    token->ledger->ViewGone(token->id, token->viewId);
  } catch (...) {
    // No room to queue the end (std::bad_alloc): the view stays on record, so its memory stays held and
    // counted (quarantined, or abandoned after a teardown), never freed under a view. V8 calls this from
    // code that must not see an exception.
  }
}

class BackingStoreViewRef final : public ViewRef {
 public:
  BackingStoreViewRef(v8::Isolate* isolate, v8::Local<v8::ArrayBuffer> buffer) : buffer_(isolate, buffer) {
    buffer_.SetWeak();  // a phantom handle: emptied when collected, nothing called
  }
  napi_value Attached(napi_env) override {
    v8::Local<v8::ArrayBuffer> buffer = Live();
    return buffer.IsEmpty() ? nullptr : ToNapi(buffer);
  }
  bool Detach(napi_env) override {
    v8::Local<v8::ArrayBuffer> buffer = Live();
    if (buffer.IsEmpty()) return false;
    // Refused only while the environment is being terminated: the view then dies with it, and its
    // backing store's deleter reports that.
    return buffer->Detach(v8::Local<v8::Value>()).FromMaybe(false);
  }

 private:
  v8::Local<v8::ArrayBuffer> Live() {
    if (buffer_.IsEmpty()) return {};
    v8::Isolate* isolate = v8::Isolate::GetCurrent();
    v8::Local<v8::ArrayBuffer> buffer = buffer_.Get(isolate);
    // Detached: no view has 0 bytes otherwise.
    if (buffer->ByteLength() == 0) return {};
    return buffer;
  }

  v8::Global<v8::ArrayBuffer> buffer_;
};

// A backing store's deleter is code of this shared object, and may run after the environment that loaded
// it is gone (a worker's isolate frees its ArrayBuffers after Node closed the worker's addons; a view moved
// to another thread outlives the worker). So the object stays loaded for the rest of the process: opened
// once more with RTLD_NODELETE. false when that fails (then Node-API's views are used).
bool StayLoaded() {
  static const bool loaded = [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&ViewDeleter), &info) == 0 || info.dli_fname == nullptr) return false;
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NODELETE) != nullptr;
  }();
  return loaded;
}

}  // namespace

int BackingStoreViewsBuiltFor() { return NODE_MAJOR_VERSION; }

const char* BackingStoreViewsRefused(napi_env env) {
  const char* chosen = std::getenv("NUVEC_VIEWS");
  if (chosen != nullptr && std::string(chosen) == "node-api") return "NUVEC_VIEWS=node-api";
  const napi_node_version* version = nullptr;
  if (napi_get_node_version(env, &version) != napi_ok || version == nullptr) return "no Node.js version";
  // V8's C++ API is stable within a Node major (one NODE_MODULE_VERSION), not across.
  if (version->major != NODE_MAJOR_VERSION) return "built for another Node.js major";
#if defined(NUVEC_LIBSTDCXX_ARRAY_BUFFER)
  if (!libstdcxx::Found()) return "this Node.js exports no ArrayBuffer::New taking libstdc++'s shared_ptr";
#endif
  if (!StayLoaded()) return "the addon cannot stay loaded for its views' deleters";
  return nullptr;
}

std::unique_ptr<ViewRef> MakeBackingStoreView(napi_env env, void* data, size_t length,
                                              const std::shared_ptr<ViewLedger>& ledger, uint64_t id,
                                              uint64_t viewId, napi_value* result) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  if (isolate == nullptr) return nullptr;
  auto token = std::make_unique<ViewToken>(ViewToken{ledger, id, viewId});
  // From here the backing store owns the token: its deleter runs when the store goes, whatever happens.
  std::unique_ptr<v8::BackingStore> store =
      v8::ArrayBuffer::NewBackingStore(data, length, ViewDeleter, token.release());
#if defined(NUVEC_LIBSTDCXX_ARRAY_BUFFER)
  v8::Local<v8::ArrayBuffer> buffer = libstdcxx::NewArrayBuffer(isolate, std::move(store));
#else
  v8::Local<v8::ArrayBuffer> buffer = v8::ArrayBuffer::New(isolate, std::move(store));
#endif
  if (buffer.IsEmpty()) return nullptr;
  *result = ToNapi(buffer);
  return std::make_unique<BackingStoreViewRef>(isolate, buffer);
}

#else  // !NUVEC_BACKING_STORE_VIEWS

int BackingStoreViewsBuiltFor() { return 0; }

const char* BackingStoreViewsRefused(napi_env) { return "not built in"; }

std::unique_ptr<ViewRef> MakeBackingStoreView(napi_env, void*, size_t, const std::shared_ptr<ViewLedger>&,
                                              uint64_t, uint64_t, napi_value*) {
  return nullptr;
}

#endif

}  // namespace nuvec
