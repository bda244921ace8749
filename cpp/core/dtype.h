// Element types and the switch that instantiates a kernel per element type.
#pragma once
#include <cstdint>
#include <string>

#include "support/errors.h"

namespace jf {

// kString: each element a std::string (TF's tf.string). Only the ops whose record claims it
// (graph plumbing, comparisons, the string ops) take it; no compiled code and no numeric
// kernel ever sees it (see Tensor::empty for its buffers).
enum class DType : uint8_t { kFloat32 = 0, kFloat64, kInt32, kInt64, kBool, kString, kInvalid };
constexpr int kNumDTypes = 6;

inline size_t dtype_size(DType d) {
  switch (d) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat64:
      return 8;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kString:
      return sizeof(std::string);
    default:
      return 0;
  }
}
inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kString:
      return "string";
    default:
      return "invalid";
  }
}
inline bool is_float(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }
inline bool is_int(DType d) { return d == DType::kInt32 || d == DType::kInt64; }
inline bool is_numeric(DType d) { return is_float(d) || is_int(d); }

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};

}  // namespace jf

// JF_SWITCH_DTYPE(dt, T, body): runs `body` with T bound to dt's C++ type.
#define JF_CASE_DTYPE(E, TYPE, T, ...) \
  case ::jf::DType::E: {               \
    using T = TYPE;                    \
    __VA_ARGS__;                       \
    break;                             \
  }
#define JF_SWITCH_DTYPE(dt, T, ...)                 \
  switch (dt) {                                     \
    JF_CASE_DTYPE(kFloat32, float, T, __VA_ARGS__)  \
    JF_CASE_DTYPE(kFloat64, double, T, __VA_ARGS__) \
    JF_CASE_DTYPE(kInt32, int32_t, T, __VA_ARGS__)  \
    JF_CASE_DTYPE(kInt64, int64_t, T, __VA_ARGS__)  \
    JF_CASE_DTYPE(kBool, bool, T, __VA_ARGS__)      \
    default:                                        \
      JF_CHECK(false, "bad dtype");                 \
  }
#define JF_SWITCH_NUMERIC(dt, T, ...)               \
  switch (dt) {                                     \
    JF_CASE_DTYPE(kFloat32, float, T, __VA_ARGS__)  \
    JF_CASE_DTYPE(kFloat64, double, T, __VA_ARGS__) \
    JF_CASE_DTYPE(kInt32, int32_t, T, __VA_ARGS__)  \
    JF_CASE_DTYPE(kInt64, int64_t, T, __VA_ARGS__)  \
    default:                                        \
      JF_CHECK(false, "bad dtype");                 \
  }
#define JF_SWITCH_FLOAT(dt, T, ...)                 \
  switch (dt) {                                     \
    JF_CASE_DTYPE(kFloat32, float, T, __VA_ARGS__)  \
    JF_CASE_DTYPE(kFloat64, double, T, __VA_ARGS__) \
    default:                                        \
      JF_CHECK(false, "bad dtype");                 \
  }
