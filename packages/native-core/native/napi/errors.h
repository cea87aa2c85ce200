// The typed JS errors of the N-API layer and the memory-safety checks of arguments (the TypeScript layer
// checks arguments for users; these only keep C++ from reading a bad value). Shared by both addons.
#ifndef NUVEC_NAPI_ERRORS_H_
#define NUVEC_NAPI_ERRORS_H_

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "../core/platform.h"

namespace nuvec {

// The `code` of each error, which the TypeScript layer maps to a class of its errors.ts.
constexpr const char* kInvalidArgument = "ERR_NUVEC_INVALID_ARGUMENT";
constexpr const char* kReleased = "ERR_NUVEC_RELEASED";
constexpr const char* kSystem = "ERR_NUVEC_SYSTEM";
constexpr const char* kAllocationFailed = "ERR_NUVEC_ALLOCATION_FAILED";
constexpr const char* kUnavailable = "ERR_NUVEC_NATIVE_UNAVAILABLE";
constexpr const char* kNotHostVisible = "ERR_NUVEC_NOT_HOST_VISIBLE";
constexpr const char* kModule = "ERR_NUVEC_MODULE";
constexpr const char* kKernelNotFound = "ERR_NUVEC_KERNEL_NOT_FOUND";

// A JS Error with the fields the TypeScript layer turns into the classes of errors.ts.
Napi::Error MakeError(Napi::Env env, const char* code, const std::string& message);

[[noreturn]] void ThrowArgument(Napi::Env env, const char* argument, const std::string& message);

// A platform's failure as a JS error. `argument`: the name of the argument the call was given, for a
// Failure::Kind::kArgument; `bytes`: what an allocation failure reports.
[[noreturn]] void ThrowFailure(Napi::Env env, const Failure& failure, const char* argument, double bytes);
// The same error, made rather than thrown (a promise's rejection). kFormat: ERR_NUVEC_MODULE with `log`.
Napi::Error FailureError(Napi::Env env, const Failure& failure, const char* argument, double bytes);

// Throws unless value is a whole number of bytes in (0, limit].
size_t CheckBytes(Napi::Env env, const Napi::Value& value, uint64_t limit);
// Throws unless value is a whole number in [0, limit] (offsets, lengths, counts).
size_t CheckRange(Napi::Env env, const Napi::Value& value, const char* name, size_t limit);
// Throws unless value is a non-empty string without NUL characters (the C API would cut it short there).
std::string CheckPath(Napi::Env env, const Napi::Value& value);
// A pointer given as a BigInt: a non-zero value that fits 64 bits (0 when optional and undefined).
uint64_t PointerArgument(Napi::Env env, const Napi::Value& value, const char* name, bool optional);

}  // namespace nuvec

#endif  // NUVEC_NAPI_ERRORS_H_
