// A kernel's dtype switch, generated from the op's record: the kernel is instantiated for the
// dtypes the types column of ops.def claims and for no others, so kernels list no dtypes of
// their own. Shape inference has refused every other dtype before a kernel runs.
#pragma once
#include "ir/op_registry.h"

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
    default:
      break;
  }
  JF_CHECK(false, "a kernel ran on a dtype its record does not claim: ", dtype_name(d));
}

// JF_SWITCH_CLAIMED(op_types(OpId::Exp), dt, T, body): runs `body` with T bound to dt's C++
// type, for the dtypes the record claims (the record-driven JF_SWITCH_DTYPE).
#define JF_SWITCH_CLAIMED(TYPES, dt, T, ...)                    \
  ::jf::switch_claimed<(TYPES)>((dt), [&](auto jf_dtype_tag_) { \
    using T = typename decltype(jf_dtype_tag_)::type;           \
    __VA_ARGS__;                                                \
  })

}  // namespace jf
