// See errors.h.
#include "errors.h"

#include <cmath>

namespace nuvec {

Napi::Error MakeError(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

void ThrowArgument(Napi::Env env, const char* argument, const std::string& message) {
  Napi::Error error = MakeError(env, kInvalidArgument, message);
  error.Set("argument", Napi::String::New(env, argument));
  throw error;
}

Napi::Error FailureError(Napi::Env env, const Failure& failure, const char* argument, double bytes) {
  switch (failure.kind) {
    case Failure::Kind::kSystem: {
      Napi::Error error = MakeError(env, kSystem, failure.message);
      error.Set("syscall", Napi::String::New(env, failure.syscall));
      // A driver's refusal carries its own code's name; a system call's, errno's.
      error.Set("errno", Napi::String::New(env, failure.errname.empty() ? ErrnoName(failure.errnum) : failure.errname));
      error.Set("errnoNumber", Napi::Number::New(env, failure.errnum));
      if (!failure.path.empty()) error.Set("path", Napi::String::New(env, failure.path));
      return error;
    }
    case Failure::Kind::kArgument: {
      Napi::Error error = MakeError(env, kInvalidArgument, failure.message);
      error.Set("argument", Napi::String::New(env, argument));
      return error;
    }
    case Failure::Kind::kFormat: {
      Napi::Error error = MakeError(env, kModule, failure.message);
      error.Set("log", Napi::String::New(env, failure.log));
      return error;
    }
    case Failure::Kind::kAllocation:
    case Failure::Kind::kNone:
    default: {
      Napi::Error error = MakeError(env, kAllocationFailed, failure.message);
      error.Set("bytes", Napi::Number::New(env, bytes));
      return error;
    }
  }
}

void ThrowFailure(Napi::Env env, const Failure& failure, const char* argument, double bytes) {
  throw FailureError(env, failure, argument, bytes);
}

size_t CheckBytes(Napi::Env env, const Napi::Value& value, uint64_t limit) {
  if (!value.IsNumber()) ThrowArgument(env, "bytes", "bytes must be a number");
  double bytes = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(bytes) || bytes != std::floor(bytes) || bytes <= 0) {
    ThrowArgument(env, "bytes", "bytes must be a positive whole number, got " + value.ToString().Utf8Value());
  }
  if (bytes > static_cast<double>(limit)) {
    ThrowArgument(env, "bytes",
                  "bytes (" + value.ToString().Utf8Value() + ") is above maxBufferLength (" + std::to_string(limit) + ")");
  }
  return static_cast<size_t>(bytes);
}

size_t CheckRange(Napi::Env env, const Napi::Value& value, const char* name, size_t limit) {
  double number = 0;
  // One call for the type check and the value (napi_number_expected for anything but a number).
  if (napi_get_value_double(env, value, &number) != napi_ok) ThrowArgument(env, name, std::string(name) + " must be a number");
  if (!std::isfinite(number) || number != std::floor(number) || number < 0 || number > static_cast<double>(limit)) {
    ThrowArgument(env, name,
                  std::string(name) + " must be a whole number from 0 to " + std::to_string(limit) + ", got " +
                      value.ToString().Utf8Value());
  }
  return static_cast<size_t>(number);
}

std::string CheckPath(Napi::Env env, const Napi::Value& value) {
  if (!value.IsString()) ThrowArgument(env, "path", "path must be a string");
  std::string path = value.As<Napi::String>().Utf8Value();
  if (path.empty()) ThrowArgument(env, "path", "path must not be empty");
  if (path.find('\0') != std::string::npos) ThrowArgument(env, "path", "path must not contain a NUL character");
  return path;
}

uint64_t PointerArgument(Napi::Env env, const Napi::Value& value, const char* name, bool optional) {
  if (optional && value.IsUndefined()) return 0;
  if (!value.IsBigInt()) ThrowArgument(env, name, std::string(name) + " must be a pointer given as a bigint");
  bool lossless = false;
  uint64_t pointer = value.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless || pointer == 0) {
    ThrowArgument(env, name, std::string(name) + " must be a non-zero 64-bit pointer");
  }
  return pointer;
}

}  // namespace nuvec
