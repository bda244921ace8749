// Element types and the switch that instantiates a kernel per element type.
#pragma once
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "support/errors.h"

namespace jf {

// kString: each element a std::string (TF's tf.string). Only the ops whose record claims it
// (graph plumbing, comparisons, the string ops) take it; no compiled code and no numeric
// kernel ever sees it (see Tensor::empty for its buffers).
// The dtypes after kString (half floats, 8/16-bit and unsigned integers, complex) come after
// it so that the older values keep their numbers; the ops that take them say so in their
// record's types column, and is_float/is_int/JF_SWITCH_* still mean the original five only.
enum class DType : uint8_t {
  kFloat32 = 0,
  kFloat64,
  kInt32,
  kInt64,
  kBool,
  kString,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kUInt32,
  kUInt64,
  kComplex64,
  kComplex128,
  kInvalid
};
constexpr int kNumDTypes = 16;

// IEEE binary16 and bfloat16 as storage: arithmetic happens in float (the conversions are
// implicit), and a result stored back is rounded to nearest even, as Eigen's half types do.
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x47800000u)  // 65536 or more, inf or NaN (65520..65536 round up to inf below)
    return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (x < 0x38800000u) {  // below half's smallest normal: let float addition round the subnormal
    float r = bits_float(x) + 0.5f;
    return sign | static_cast<uint16_t>(float_bits(r) - 0x3f000000u);
  }
  uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias the exponent (-112 << 23) and round half to even
  return sign | static_cast<uint16_t>(x >> 13);
}
inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float m = static_cast<float>(mant) * 5.9604644775390625e-08f;  // 2^-24
    return bits_float(float_bits(m) | sign);
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}
inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) : bits(float_to_half_bits(f)) {}                       // NOLINT: as Eigen::half
  float16(double d) : bits(float_to_half_bits(static_cast<float>(d))) {}  // NOLINT: through float, as TF
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  float16(I i) : bits(float_to_half_bits(static_cast<float>(i))) {}  // NOLINT
  operator float() const { return half_bits_to_float(bits); }        // NOLINT
  static float16 from_bits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
};
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(float_to_bfloat16_bits(f)) {}                       // NOLINT
  bfloat16(double d) : bits(float_to_bfloat16_bits(static_cast<float>(d))) {}  // NOLINT
  template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
  bfloat16(I i) : bits(float_to_bfloat16_bits(static_cast<float>(i))) {}            // NOLINT
  operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }  // NOLINT
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};
using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

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
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16:
      return 2;
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kUInt32:
      return 4;
    case DType::kUInt64:
    case DType::kComplex64:
      return 8;
    case DType::kComplex128:
      return 16;
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
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt16:
      return "int16";
    case DType::kUInt16:
      return "uint16";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kComplex64:
      return "complex64";
    case DType::kComplex128:
      return "complex128";
    default:
      return "invalid";
  }
}
// The original five: what the kernels and compiled code written before the others handle.
inline bool is_float(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }
inline bool is_int(DType d) { return d == DType::kInt32 || d == DType::kInt64; }
inline bool is_numeric(DType d) { return is_float(d) || is_int(d); }
// TF's DType predicates over every dtype.
inline bool is_half(DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; }
inline bool is_floating_type(DType d) { return is_float(d) || is_half(d); }
inline bool is_unsigned_type(DType d) {
  return d == DType::kUInt8 || d == DType::kUInt16 || d == DType::kUInt32 || d == DType::kUInt64;
}
inline bool is_integer_type(DType d) {
  return is_int(d) || is_unsigned_type(d) || d == DType::kInt8 || d == DType::kInt16;
}
inline bool is_complex_type(DType d) { return d == DType::kComplex64 || d == DType::kComplex128; }

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
template <>
struct DTypeOf<float16> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<bfloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::kInt16;
};
template <>
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::kUInt16;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr DType value = DType::kUInt32;
};
template <>
struct DTypeOf<uint64_t> {
  static constexpr DType value = DType::kUInt64;
};
template <>
struct DTypeOf<complex64> {
  static constexpr DType value = DType::kComplex64;
};
template <>
struct DTypeOf<complex128> {
  static constexpr DType value = DType::kComplex128;
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
// Every dtype with a fixed-size element (all but kString), for the kernels that move or
// convert elements of any dtype (cast, bitcast, conversions).
#define JF_SWITCH_EVERY_DTYPE(dt, T, ...)                        \
  switch (dt) {                                                  \
    JF_CASE_DTYPE(kFloat32, float, T, __VA_ARGS__)               \
    JF_CASE_DTYPE(kFloat64, double, T, __VA_ARGS__)              \
    JF_CASE_DTYPE(kInt32, int32_t, T, __VA_ARGS__)               \
    JF_CASE_DTYPE(kInt64, int64_t, T, __VA_ARGS__)               \
    JF_CASE_DTYPE(kBool, bool, T, __VA_ARGS__)                   \
    JF_CASE_DTYPE(kFloat16, ::jf::float16, T, __VA_ARGS__)       \
    JF_CASE_DTYPE(kBFloat16, ::jf::bfloat16, T, __VA_ARGS__)     \
    JF_CASE_DTYPE(kInt8, int8_t, T, __VA_ARGS__)                 \
    JF_CASE_DTYPE(kUInt8, uint8_t, T, __VA_ARGS__)               \
    JF_CASE_DTYPE(kInt16, int16_t, T, __VA_ARGS__)               \
    JF_CASE_DTYPE(kUInt16, uint16_t, T, __VA_ARGS__)             \
    JF_CASE_DTYPE(kUInt32, uint32_t, T, __VA_ARGS__)             \
    JF_CASE_DTYPE(kUInt64, uint64_t, T, __VA_ARGS__)             \
    JF_CASE_DTYPE(kComplex64, ::jf::complex64, T, __VA_ARGS__)   \
    JF_CASE_DTYPE(kComplex128, ::jf::complex128, T, __VA_ARGS__) \
    default:                                                     \
      JF_CHECK(false, "bad dtype");                              \
  }
#define JF_SWITCH_FLOAT(dt, T, ...)                 \
  switch (dt) {                                     \
    JF_CASE_DTYPE(kFloat32, float, T, __VA_ARGS__)  \
    JF_CASE_DTYPE(kFloat64, double, T, __VA_ARGS__) \
    default:                                        \
      JF_CHECK(false, "bad dtype");                 \
  }
