// The arguments of a launch (stream_handles.h): buffers with their offsets, scalars by kind, the shape.
// Checked for memory safety only: the TypeScript layer has checked them for users already.
#include <cmath>
#include <cstring>
#include <string>

#include "stream_handles.h"

namespace nuvec {

const char* const kParameterKindNames[7] = {"buffer", "i32", "u32", "f32", "i64", "u64", "f64"};

namespace {

[[noreturn]] void Refuse(Napi::Env env, size_t index, ParameterKind kind, const std::string& what) {
  ThrowArgument(env, "args",
                "argument " + std::to_string(index) + " (" + kParameterKindNames[static_cast<size_t>(kind)] +
                    ") must be " + what);
}

double WholeNumber(Napi::Env env, const Napi::Value& value, size_t index, ParameterKind kind, double low,
                   double high) {
  double number = 0;
  if (napi_get_value_double(env, value, &number) != napi_ok || !std::isfinite(number) ||
      number != std::floor(number) || number < low || number > high) {
    Refuse(env, index, kind, "a whole number from " + std::to_string(static_cast<int64_t>(low)) + " to " +
                                 std::to_string(static_cast<int64_t>(high)));
  }
  return number;
}

}  // namespace

std::vector<KernelArgument> LaunchArguments(Napi::Env env, const Napi::Value& value, nuvec::Kernel* kernel,
                                            std::vector<uint64_t>* pinned) {
  const std::vector<ParameterKind>& kinds = kernel->parameters();
  if (!value.IsArray()) ThrowArgument(env, "args", "args must be an array");
  Napi::Array args = value.As<Napi::Array>();
  if (args.Length() != kinds.size()) {
    ThrowArgument(env, "args",
                  "the kernel " + kernel->name() + " takes " + std::to_string(kinds.size()) + " arguments, got " +
                      std::to_string(args.Length()));
  }
  AddonData& data = DataOf(env);
  std::vector<KernelArgument> converted(kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) {
    ParameterKind kind = kinds[i];
    Napi::Value arg = args.Get(static_cast<uint32_t>(i));
    KernelArgument& out = converted[i];
    out.kind = kind;
    switch (kind) {
      case ParameterKind::kBuffer: {
        Napi::Value handle = arg;
        Napi::Value offset = env.Undefined();
        if (arg.IsArray()) {
          Napi::Array pair = arg.As<Napi::Array>();
          if (pair.Length() != 2) Refuse(env, i, kind, "a buffer or [buffer, offset]");
          handle = pair.Get(0u);
          offset = pair.Get(1u);
        }
        AllocationHandle* allocation = UnwrapAllocation(env, handle);
        if (allocation == nullptr || allocation->state != data.state) {
          Refuse(env, i, kind, "a buffer or mapped file of this addon");
        }
        out.allocation = allocation->Live(env, "buffer");
        out.offset = offset.IsUndefined() ? 0 : CheckRange(env, offset, "args", out.allocation->length());
        pinned->push_back(allocation->id);
        break;
      }
      case ParameterKind::kI32:
        out.bits = static_cast<uint32_t>(static_cast<int32_t>(WholeNumber(env, arg, i, kind, -2147483648.0, 2147483647.0)));
        break;
      case ParameterKind::kU32:
        out.bits = static_cast<uint32_t>(WholeNumber(env, arg, i, kind, 0, 4294967295.0));
        break;
      case ParameterKind::kF32:
      case ParameterKind::kF64: {
        double number = 0;
        if (napi_get_value_double(env, arg, &number) != napi_ok) Refuse(env, i, kind, "a number");
        if (kind == ParameterKind::kF32) {
          float single = static_cast<float>(number);
          uint32_t bits = 0;
          std::memcpy(&bits, &single, 4);
          out.bits = bits;
        } else {
          std::memcpy(&out.bits, &number, 8);
        }
        break;
      }
      case ParameterKind::kI64:
      case ParameterKind::kU64: {
        if (!arg.IsBigInt()) Refuse(env, i, kind, "a bigint");
        bool lossless = false;
        if (kind == ParameterKind::kI64) {
          out.bits = static_cast<uint64_t>(arg.As<Napi::BigInt>().Int64Value(&lossless));
        } else {
          out.bits = arg.As<Napi::BigInt>().Uint64Value(&lossless);
        }
        if (!lossless) Refuse(env, i, kind, kind == ParameterKind::kI64 ? "a bigint of 64 bits, signed" : "a bigint from 0 to 2^64 - 1");
        break;
      }
    }
  }
  return converted;
}

LaunchShape LaunchShapeOf(Napi::Env env, const Napi::Value& grid, const Napi::Value& block,
                          const Napi::Value& sharedBytes) {
  LaunchShape shape;
  auto dimensions = [&](const Napi::Value& value, const char* name, uint32_t* out) {
    if (!value.IsArray()) ThrowArgument(env, name, std::string(name) + " must be an array of 1 to 3 dimensions");
    Napi::Array array = value.As<Napi::Array>();
    if (array.Length() < 1 || array.Length() > 3) {
      ThrowArgument(env, name, std::string(name) + " must have 1 to 3 dimensions, got " + std::to_string(array.Length()));
    }
    for (uint32_t axis = 0; axis < array.Length(); ++axis) {
      size_t size = CheckRange(env, array.Get(axis), name, 4294967295u);
      if (size == 0) ThrowArgument(env, name, std::string(name) + " dimensions must be positive");
      out[axis] = static_cast<uint32_t>(size);
    }
  };
  dimensions(grid, "grid", shape.grid);
  dimensions(block, "block", shape.block);
  shape.sharedBytes =
      sharedBytes.IsUndefined() ? 0 : static_cast<uint32_t>(CheckRange(env, sharedBytes, "sharedBytes", 4294967295u));
  return shape;
}

}  // namespace nuvec
