// A kernel's dtype switch, generated from the op's record: the kernel is instantiated for the
// dtypes the types column of ops.def claims and for no others, so kernels list no dtypes of
// their own. Shape inference has refused every other dtype before a kernel runs.
// The half floats are Eigen's (Eigen::half, Eigen::bfloat16: TF's types), whose arithmetic
// rounds every result to the type, as TF's eager kernels do; complex is std::complex.
#pragma once
#include <Eigen/Core>
#include <complex>
#include <type_traits>

#include "ir/op_registry.h"
#include "kernels/half_convert.h"

namespace jf {

template <class T>
struct DTypeTag {
  using type = T;
};

// Calls fn(DTypeTag<T>{}) with T the C++ type of d, if S claims d. The cases S leaves out are
// discarded, so fn need not compile for them (a transcendental functor on integers).
template <TypeSet S, class Fn>
void switch_claimed(DType d, Fn&& fn) {
  switch (d) {
    case DType::kFloat32:
      if constexpr ((S & type_bit(DType::kFloat32)) != 0) return fn(DTypeTag<float>{});
      break;
    case DType::kFloat64:
      if constexpr ((S & type_bit(DType::kFloat64)) != 0) return fn(DTypeTag<double>{});
      break;
    case DType::kInt32:
      if constexpr ((S & type_bit(DType::kInt32)) != 0) return fn(DTypeTag<int32_t>{});
      break;
    case DType::kInt64:
      if constexpr ((S & type_bit(DType::kInt64)) != 0) return fn(DTypeTag<int64_t>{});
      break;
    case DType::kBool:
      if constexpr ((S & type_bit(DType::kBool)) != 0) return fn(DTypeTag<bool>{});
      break;
    case DType::kFloat16:
      if constexpr ((S & type_bit(DType::kFloat16)) != 0) return fn(DTypeTag<Eigen::half>{});
      break;
    case DType::kBFloat16:
      if constexpr ((S & type_bit(DType::kBFloat16)) != 0) return fn(DTypeTag<Eigen::bfloat16>{});
      break;
    case DType::kInt8:
      if constexpr ((S & type_bit(DType::kInt8)) != 0) return fn(DTypeTag<int8_t>{});
      break;
    case DType::kUInt8:
      if constexpr ((S & type_bit(DType::kUInt8)) != 0) return fn(DTypeTag<uint8_t>{});
      break;
    case DType::kInt16:
      if constexpr ((S & type_bit(DType::kInt16)) != 0) return fn(DTypeTag<int16_t>{});
      break;
    case DType::kUInt16:
      if constexpr ((S & type_bit(DType::kUInt16)) != 0) return fn(DTypeTag<uint16_t>{});
      break;
    case DType::kUInt32:
      if constexpr ((S & type_bit(DType::kUInt32)) != 0) return fn(DTypeTag<uint32_t>{});
      break;
    case DType::kUInt64:
      if constexpr ((S & type_bit(DType::kUInt64)) != 0) return fn(DTypeTag<uint64_t>{});
      break;
    case DType::kComplex64:
      if constexpr ((S & type_bit(DType::kComplex64)) != 0) return fn(DTypeTag<std::complex<float>>{});
      break;
    case DType::kComplex128:
      if constexpr ((S & type_bit(DType::kComplex128)) != 0) return fn(DTypeTag<std::complex<double>>{});
      break;
    default:
      break;
  }
  JF_CHECK(false, "a kernel ran on a dtype its record does not claim: ", dtype_name(d));
}

// float16 and bfloat16 are computed in float and rounded to the type after each op, as TF's
// eager kernels (Eigen's half arithmetic) compute them.
template <class T>
constexpr bool kEigenHalf = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;
template <class T>
Tensor widen_to_float(const Tensor& x) {
  Tensor f = Tensor::empty(DType::kFloat32, x.shape());
  const T* s = x.data<T>();
  float* d = f.data<float>();
  widen_block(s, d, x.num_elements());
  return f;
}
template <class T>
void round_from_float(const Tensor& f, Tensor& y) {
  const float* s = f.data<float>();
  T* d = y.data<T>();
  narrow_block(s, d, y.num_elements());
}

// JF_SWITCH_CLAIMED(op_types(OpId::Exp), dt, T, body): runs `body` with T bound to dt's C++
// type, for the dtypes the record claims (the record-driven JF_SWITCH_DTYPE).
#define JF_SWITCH_CLAIMED(TYPES, dt, T, ...)                    \
  ::jf::switch_claimed<(TYPES)>((dt), [&](auto jf_dtype_tag_) { \
    using T = typename decltype(jf_dtype_tag_)::type;           \
    __VA_ARGS__;                                                \
  })

}  // namespace jf
