// V8's `ArrayBuffer::New(Isolate*, std::shared_ptr<BackingStore>)` called from an addon built with libc++
// (the Zig prebuilds) inside a Node.js built with libstdc++ (every official Linux build). The two libraries'
// `std::shared_ptr` differ in name (`std::__1::` is mangled into the symbol) and in layout, so the call goes
// to the libstdc++ symbol, found at run time with dlsym, with a `shared_ptr` laid out as libstdc++'s: the
// object pointer and a pointer to a control block of `_Sp_counted_base<_S_atomic>`'s layout (a vtable of
// its virtual destructor, `_M_dispose`, `_M_destroy` and `_M_get_deleter`, then the atomic use and weak
// counts, both starting at 1). V8 takes the pointer over and releases it with libstdc++'s inline code on
// whatever thread; the control block's functions are ours. This is libstdc++'s ABI since GCC 4, which
// libstdc++ keeps stable; a Node.js that does not export the symbol (built with libc++, or another V8)
// is told by `Found()` returning false, and then the addon uses Node-API's views.
// Included only by views.cc, only in a libc++ build on Linux.
#ifndef NUVEC_NAPI_LIBSTDCXX_ARRAY_BUFFER_H_
#define NUVEC_NAPI_LIBSTDCXX_ARRAY_BUFFER_H_

#include <dlfcn.h>
#include <v8.h>

#include <atomic>
#include <memory>
#include <typeinfo>

// V8's NewBackingStore returns a std::unique_ptr, which libstdc++ returns through memory: so must libc++'s.
#if defined(_LIBCPP_ABI_ENABLE_UNIQUE_PTR_TRIVIAL_ABI)
#error "libc++'s unique_ptr is returned in registers in this ABI, libstdc++'s is not"
#endif

namespace nuvec::libstdcxx {

// libstdc++'s std::_Sp_counted_base<_S_atomic>: the same virtual functions in the same order, then the counts.
class CountedBase {
 public:
  virtual ~CountedBase() noexcept = default;
  virtual void Dispose() noexcept = 0;  // _M_dispose: the last shared owner is gone
  virtual void Destroy() noexcept { delete this; }  // _M_destroy: the last weak owner is gone
  virtual void* GetDeleter(const std::type_info&) noexcept { return nullptr; }  // _M_get_deleter

  // _M_release, as libstdc++'s inline code does it (the combined fast path is only a shortcut of this).
  void Release() noexcept {
    if (use_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    Dispose();
    if (weak_.fetch_sub(1, std::memory_order_acq_rel) == 1) Destroy();
  }

 private:
  std::atomic<int> use_{1};   // _M_use_count
  std::atomic<int> weak_{1};  // _M_weak_count
};

static_assert(sizeof(std::atomic<int>) == sizeof(int), "libstdc++'s _Atomic_word is an int");

// The control block std::shared_ptr<v8::BackingStore>(std::unique_ptr<v8::BackingStore>) makes.
class BackingStoreOwner final : public CountedBase {
 public:
  explicit BackingStoreOwner(v8::BackingStore* store) : store_(store) {}
  void Dispose() noexcept override { std::default_delete<v8::BackingStore>()(store_); }

 private:
  v8::BackingStore* store_;
};

// libstdc++'s std::shared_ptr<v8::BackingStore>: the object, then the control block.
struct SharedPtr {
  v8::BackingStore* pointer;
  CountedBase* counts;
};

// The parameter is a class with a non-trivial destructor, so both Itanium C++ ABIs we build for (x86-64 and
// AArch64) pass it by invisible reference: a pointer to the caller's object, which the caller destroys after
// the call. V8 moves it out (leaving it empty).
using ArrayBufferNew = v8::Local<v8::ArrayBuffer> (*)(v8::Isolate*, SharedPtr*);

inline ArrayBufferNew Function() {
  static const ArrayBufferNew function = reinterpret_cast<ArrayBufferNew>(
      dlsym(RTLD_DEFAULT, "_ZN2v811ArrayBuffer3NewEPNS_7IsolateESt10shared_ptrINS_12BackingStoreEE"));
  return function;
}

// Whether this Node.js exports V8's ArrayBuffer::New taking libstdc++'s shared_ptr.
inline bool Found() { return Function() != nullptr; }

// v8::ArrayBuffer::New(isolate, std::move(store)), through libstdc++'s shared_ptr. Found() must hold.
inline v8::Local<v8::ArrayBuffer> NewArrayBuffer(v8::Isolate* isolate, std::unique_ptr<v8::BackingStore> store) {
  v8::BackingStore* pointer = store.get();
  SharedPtr shared{pointer, new BackingStoreOwner(pointer)};
  store.release();  // owned by the control block from here on
  v8::Local<v8::ArrayBuffer> buffer = Function()(isolate, &shared);
  if (shared.counts != nullptr) shared.counts->Release();  // the caller's destruction of the argument
  return buffer;
}

}  // namespace nuvec::libstdcxx

#endif  // NUVEC_NAPI_LIBSTDCXX_ARRAY_BUFFER_H_
