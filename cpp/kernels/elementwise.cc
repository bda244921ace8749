// Eager elementwise kernels: Eigen array expressions over contiguous segments (vectorized),
// split across the thread pool for large tensors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/broadcast.h"
#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_functors.h"
#include "kernels/half_convert.h"
#include "kernels/strings.h"

namespace jf {

void cast_every_dtype(const Tensor& x, Tensor& y);  // kernels/cast_ops.cc

namespace {

// The segment function for F on this host: its variant for the host's instruction set
// (kernels/simd/table.h) where it has one, else the baseline template.
// Half values are widened to float in blocks of this many elements.
constexpr int64_t kHalfBlock = 512;

template <class F, class In, class Out>
void (*unary_segment_for())(const In*, Out*, int64_t) {
  if constexpr (kUnarySlot<F> >= 0 && std::is_same_v<In, Out>) {
    if (const simd::Table* t = simd::active()) {
      if constexpr (std::is_same_v<In, float>) {
        if (auto fn = t->unary_f32[kUnarySlot<F>]) return fn;
      } else if constexpr (std::is_same_v<In, double>) {
        if (auto fn = t->unary_f64[kUnarySlot<F>]) return fn;
      }
    }
  }
  return &unary_segment<F, In, Out>;
}
template <class F, class T, class R>
void (*binary_segment_for())(const T*, const T*, R*, int64_t, bool, bool) {
  if constexpr (kBinarySlot<F> >= 0 && std::is_same_v<T, R>) {
    if (const simd::Table* t = simd::active()) {
      if constexpr (std::is_same_v<T, float>) {
        if (auto fn = t->binary_f32[kBinarySlot<F>]) return fn;
      } else if constexpr (std::is_same_v<T, double>) {
        if (auto fn = t->binary_f64[kBinarySlot<F>]) return fn;
      }
    }
  }
  return &binary_segment<F, T, R>;
}

template <class F, class In, class Out>
void unary_apply(const Tensor& x, Tensor& y, double cost) {
  const In* src = x.data<In>();
  Out* dst = y.data<Out>();
  if constexpr (kEigenHalf<In>) {  // computed in float, rounded on store (kernels/dispatch.h)
    using W = std::conditional_t<std::is_same_v<In, Out>, float, Out>;
    auto segment = unary_segment_for<F, float, W>();
    parallel_for(x.num_elements(), cost + 2, [&](int64_t b, int64_t e) {
      float wi[kHalfBlock];
      W wo[kHalfBlock];
      for (int64_t i = b; i < e; i += kHalfBlock) {
        const int64_t m = std::min(kHalfBlock, e - i);
        widen_block(src + i, wi, m);
        segment(wi, wo, m);
        if constexpr (std::is_same_v<W, float>)
          narrow_block(wo, dst + i, m);
        else
          for (int64_t k = 0; k < m; ++k) dst[i + k] = static_cast<Out>(wo[k]);
      }
    });
  } else {
    auto segment = unary_segment_for<F, In, Out>();
    parallel_for(x.num_elements(), cost, [&](int64_t b, int64_t e) { segment(src + b, dst + b, e - b); });
  }
}

// The families below are instantiated for the dtypes Op's record claims (kernels/dispatch.h).
template <OpId Op, class F>
void unary(OpCall& c, double cost) {
  Tensor& y = c.alloc(0);
  JF_SWITCH_CLAIMED(op_types(Op), c.in[0].dtype(), T, (unary_apply<F, T, T>(c.in[0], y, cost)));
}
// IsNan, IsInf, IsFinite: a bool result.
template <OpId Op, class F>
void unary_predicate(OpCall& c) {
  Tensor& y = c.alloc(0);
  JF_SWITCH_CLAIMED(op_types(Op), c.in[0].dtype(), T, (unary_apply<F, T, bool>(c.in[0], y, 1)));
}

// ---- binary --------------------------------------------------------------------------
// Each operand of a segment is either a contiguous run or one broadcast scalar.
template <class F, class T, class R>
void binary_apply(const Tensor& a, const Tensor& b, Tensor& out, double cost) {
  BroadcastPlan p = make_broadcast(out.shape(), {a.shape(), b.shape()});
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  R* po = out.data<R>();
  if constexpr (kEigenHalf<T>) {  // computed in float, rounded on store (kernels/dispatch.h)
    using W = std::conditional_t<std::is_same_v<T, R>, float, R>;
    auto segment = binary_segment_for<F, float, W>();
    for_each_segment(p, cost + 3, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
      float wa[kHalfBlock], wb[kHalfBlock];
      W wo[kHalfBlock];
      for (int64_t i = 0; i < n; i += kHalfBlock) {
        const int64_t m = std::min(kHalfBlock, n - i);
        const T* xa = pa + off[0] + (is[0] ? i : 0);
        const T* xb = pb + off[1] + (is[1] ? i : 0);
        // A broadcast operand is one value: the segment reads it as such.
        is[0] ? widen_block(xa, wa, m) : void(wa[0] = static_cast<float>(xa[0]));
        is[1] ? widen_block(xb, wb, m) : void(wb[0] = static_cast<float>(xb[0]));
        segment(wa, wb, wo, m, is[0] != 0, is[1] != 0);
        if constexpr (std::is_same_v<W, float>)
          narrow_block(wo, po + o + i, m);
        else
          for (int64_t k = 0; k < m; ++k) po[o + i + k] = static_cast<R>(wo[k]);
      }
    });
  } else {
    auto segment = binary_segment_for<F, T, R>();
    for_each_segment(p, cost, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
      segment(pa + off[0], pb + off[1], po + o, n, is[0] != 0, is[1] != 0);
    });
  }
}

template <class T>
T floor_div(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::floor(x / y);
  } else {
    if (y == 0) return 0;                 // guarded by a check before the kernel runs
    if constexpr (std::is_signed_v<T>) {  // lowest / -1 traps (SIGFPE); wrap like numpy
      if (y == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x));
    }
    T q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
  }
}
template <class T>
T floor_mod(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    T m = std::fmod(x, y);
    return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
  } else {
    if (y == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (y == -1) return 0;  // lowest % -1 traps (SIGFPE)
    }
    T m = x % y;
    return (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
  }
}
template <class T>
T trunc_div(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::trunc(x / y);
  } else {
    if (y == 0) return 0;  // guarded by a check before the kernel runs
    if constexpr (std::is_signed_v<T>) {
      if (y == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x));
    }
    return x / y;
  }
}
template <class T>
T trunc_mod(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(x, y);
  } else {
    if (y == 0 || y == -1) return 0;
    return x % y;
  }
}
template <class T>
T int_pow(T x, T y) {
  if constexpr (std::is_floating_point_v<T> || IsStdComplex<T>::value) {
    return std::pow(x, y);
  } else {
    T r = 1;
    while (y > 0) {
      if (y & 1) r *= x;
      x *= x;
      y >>= 1;
    }
    return r;
  }
}
JF_BINARY_FUNCTOR(FloorDivF, a.binaryExpr(b, [](T x, T y) { return floor_div(x, y); }))
// A half type's quotient is rounded to the type before its floor (trunc), as TF's eager
// kernels compute x / y in the type: float16 -125 // 0.1 is -1250 (the float32 quotient
// -1250.3 would floor to -1251).
template <class H, bool kFloor>
struct HalfQuotientF {
  template <class A, class B>
  auto operator()(const A& a, const B& b) {
    return a.binaryExpr(b, [](float x, float y) {
      const float q = static_cast<float>(static_cast<H>(x / y));
      return kFloor ? std::floor(q) : std::trunc(q);
    });
  }
};
// FloorDiv and TruncateDiv: half types through HalfQuotientF, the others through F.
template <OpId Op, class F, bool kFloor>
void division(OpCall& c) {
  Tensor& y = c.alloc(0);
  switch (c.in[0].dtype()) {
    case DType::kFloat16:
      return binary_apply<HalfQuotientF<Eigen::half, kFloor>, Eigen::half, Eigen::half>(c.in[0], c.in[1], y,
                                                                                        8);
    case DType::kBFloat16:
      return binary_apply<HalfQuotientF<Eigen::bfloat16, kFloor>, Eigen::bfloat16, Eigen::bfloat16>(
          c.in[0], c.in[1], y, 8);
    default:
      JF_SWITCH_CLAIMED(op_types(Op), c.in[0].dtype(), T, (binary_apply<F, T, T>(c.in[0], c.in[1], y, 8)));
  }
}
JF_BINARY_FUNCTOR(FloorModF, a.binaryExpr(b, [](T x, T y) { return floor_mod(x, y); }))
JF_BINARY_FUNCTOR(Atan2F, a.binaryExpr(b, [](T x, T y) { return std::atan2(x, y); }))
JF_BINARY_FUNCTOR(TruncateDivF, a.binaryExpr(b, [](T x, T y) { return trunc_div(x, y); }))
JF_BINARY_FUNCTOR(TruncateModF, a.binaryExpr(b, [](T x, T y) { return trunc_mod(x, y); }))
// TF's *NoNan ops: 0 where y == 0 (whatever x is); xlogy/xlog1py: 0 where x == 0.
JF_BINARY_FUNCTOR(DivNoNanF, a.binaryExpr(b, [](T x, T y) { return y == T(0) ? T(0) : x / y; }))
JF_BINARY_FUNCTOR(MulNoNanF, a.binaryExpr(b, [](T x, T y) { return y == T(0) ? T(0) : x * y; }))
JF_BINARY_FUNCTOR(XlogyF, a.binaryExpr(b, [](T x, T y) { return x == T(0) ? T(0) : x * std::log(y); }))
JF_BINARY_FUNCTOR(Xlog1pyF, a.binaryExpr(b, [](T x, T y) {
  if constexpr (IsStdComplex<T>::value) {
    return x == T(0) ? T(0) : x * std::log(T(1) + y);  // no complex log1p in <complex>
  } else {
    return x == T(0) ? T(0) : x * std::log1p(y);
  }
}))
JF_BINARY_FUNCTOR(NextAfterF, a.binaryExpr(b, [](T x, T y) { return std::nextafter(x, y); }))
JF_BINARY_FUNCTOR(PowF, a.binaryExpr(b, [](T x, T y) { return int_pow(x, y); }))
JF_BINARY_FUNCTOR(EqF, a == b)
JF_BINARY_FUNCTOR(NeF, a != b)
JF_BINARY_FUNCTOR(LtF, a < b)
JF_BINARY_FUNCTOR(LeF, a <= b)
JF_BINARY_FUNCTOR(GtF, a > b)
JF_BINARY_FUNCTOR(GeF, a >= b)
JF_BINARY_FUNCTOR(AndF, a&& b)
JF_BINARY_FUNCTOR(OrF, a || b)

// Bitwise ops on integers. Shifts clamp the amount to [0, bits - 1] as TF's kernels do (no
// undefined behaviour); a left shift shifts the unsigned bits.
template <class T>
T clamp_shift(T y) {
  constexpr T kMax = static_cast<T>(sizeof(T) * 8 - 1);
  if constexpr (std::is_signed_v<T>) {
    if (y < 0) return T(0);
  }
  return y > kMax ? kMax : y;
}
template <class T>
T left_shift(T x, T y) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(x) << static_cast<U>(clamp_shift(y)));
}
template <class T>
T right_shift(T x, T y) {
  return static_cast<T>(x >> clamp_shift(y));  // arithmetic for signed T
}
JF_UNARY_FUNCTOR(InvertF, a.unaryExpr([](T x) { return static_cast<T>(~x); }))
JF_BINARY_FUNCTOR(BitAndF, a.binaryExpr(b, [](T x, T y) { return static_cast<T>(x & y); }))
JF_BINARY_FUNCTOR(BitOrF, a.binaryExpr(b, [](T x, T y) { return static_cast<T>(x | y); }))
JF_BINARY_FUNCTOR(BitXorF, a.binaryExpr(b, [](T x, T y) { return static_cast<T>(x ^ y); }))
JF_BINARY_FUNCTOR(LeftShiftF, a.binaryExpr(b, [](T x, T y) { return left_shift(x, y); }))
JF_BINARY_FUNCTOR(RightShiftF, a.binaryExpr(b, [](T x, T y) { return right_shift(x, y); }))

template <OpId Op, class F>
void binary(OpCall& c, double cost) {
  Tensor& y = c.alloc(0);
  JF_SWITCH_CLAIMED(op_types(Op), c.in[0].dtype(), T, (binary_apply<F, T, T>(c.in[0], c.in[1], y, cost)));
}
template <OpId Op, class F>
void compare(OpCall& c) {
  Tensor& y = c.alloc(0);
  JF_SWITCH_CLAIMED(op_types(Op), c.in[0].dtype(), T, (binary_apply<F, T, bool>(c.in[0], c.in[1], y, 1.0)));
}
// Integer division by zero is an error in TF (not a crash, not garbage).
void check_int_divisor(OpCall& c) {
  if (!is_integer_type(c.in[1].dtype())) return;
  const Tensor& d = c.in[1];
  for (int64_t i = 0; i < d.num_elements(); ++i)
    if (d.get_int(i) == 0) c.fail("Integer division by zero");
}
// Like TF (and numpy): an integer to a negative integer power is an error, not garbage.
void check_int_exponent(OpCall& c) {
  if (!is_integer_type(c.in[1].dtype()) || is_unsigned_type(c.in[1].dtype())) return;
  const Tensor& d = c.in[1];
  for (int64_t i = 0; i < d.num_elements(); ++i)
    if (d.get_int(i) < 0) c.fail("Integers to negative integer powers are not allowed");
}

template <class From, class To>
void cast_apply(const Tensor& x, Tensor& y) {
  const From* src = x.data<From>();
  To* dst = y.data<To>();
  parallel_for(x.num_elements(), 1.0, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<To, bool>) {
      MMap<To>(dst + b, e - b) = CMap<From>(src + b, e - b) != From(0);
    } else {
      MMap<To>(dst + b, e - b) = CMap<From>(src + b, e - b).template cast<To>();
    }
  });
}

}  // namespace

void k_Const(OpCall& c) { c.results[0] = std::get<Tensor>(*c.attrs.find("value")); }
void k_Placeholder(OpCall& c) { c.fail("a placeholder has no value outside a graph"); }
void k_Identity(OpCall& c) { c.results[0] = c.in[0]; }  // tensors are immutable: share

void k_Neg(OpCall& c) { unary<OpId::Neg, NegF>(c, 1); }
void k_Abs(OpCall& c) { unary<OpId::Abs, AbsF>(c, 1); }
void k_Square(OpCall& c) { unary<OpId::Square, SquareF>(c, 1); }
void k_Relu(OpCall& c) { unary<OpId::Relu, ReluF>(c, 1); }
void k_Exp(OpCall& c) { unary<OpId::Exp, ExpF>(c, 10); }
void k_Log(OpCall& c) { unary<OpId::Log, LogF>(c, 10); }
void k_Log1p(OpCall& c) { unary<OpId::Log1p, Log1pF>(c, 10); }
void k_Tanh(OpCall& c) { unary<OpId::Tanh, TanhF>(c, 10); }
void k_Sigmoid(OpCall& c) { unary<OpId::Sigmoid, SigmoidF>(c, 10); }
void k_Sqrt(OpCall& c) { unary<OpId::Sqrt, SqrtF>(c, 5); }
void k_Rsqrt(OpCall& c) { unary<OpId::Rsqrt, RsqrtF>(c, 5); }
void k_Sin(OpCall& c) { unary<OpId::Sin, SinF>(c, 10); }
void k_Cos(OpCall& c) { unary<OpId::Cos, CosF>(c, 10); }
void k_Erf(OpCall& c) { unary<OpId::Erf, ErfF>(c, 10); }
void k_Expm1(OpCall& c) { unary<OpId::Expm1, Expm1F>(c, 10); }
void k_Tan(OpCall& c) { unary<OpId::Tan, TanF>(c, 10); }
void k_Atan(OpCall& c) { unary<OpId::Atan, AtanF>(c, 10); }
void k_Asin(OpCall& c) { unary<OpId::Asin, AsinF>(c, 10); }
void k_Acos(OpCall& c) { unary<OpId::Acos, AcosF>(c, 10); }
void k_Sinh(OpCall& c) { unary<OpId::Sinh, SinhF>(c, 10); }
void k_Cosh(OpCall& c) { unary<OpId::Cosh, CoshF>(c, 10); }
void k_Asinh(OpCall& c) { unary<OpId::Asinh, AsinhF>(c, 10); }
void k_Acosh(OpCall& c) { unary<OpId::Acosh, AcoshF>(c, 10); }
void k_Atanh(OpCall& c) { unary<OpId::Atanh, AtanhF>(c, 10); }
void k_Erfc(OpCall& c) { unary<OpId::Erfc, ErfcF>(c, 10); }
void k_Lgamma(OpCall& c) { unary<OpId::Lgamma, LgammaF>(c, 10); }
void k_Digamma(OpCall& c) { unary<OpId::Digamma, DigammaF>(c, 40); }
void k_Erfinv(OpCall& c) { unary<OpId::Erfinv, ErfinvF>(c, 40); }
void k_Floor(OpCall& c) { unary<OpId::Floor, FloorF>(c, 1); }
void k_Ceil(OpCall& c) { unary<OpId::Ceil, CeilF>(c, 1); }
void k_Round(OpCall& c) { unary<OpId::Round, RoundF>(c, 1); }
void k_Sign(OpCall& c) { unary<OpId::Sign, SignF>(c, 1); }
void k_Reciprocal(OpCall& c) { unary<OpId::Reciprocal, ReciprocalF>(c, 4); }
void k_IsNan(OpCall& c) { unary_predicate<OpId::IsNan, IsNanF>(c); }
void k_IsInf(OpCall& c) { unary_predicate<OpId::IsInf, IsInfF>(c); }
void k_IsFinite(OpCall& c) { unary_predicate<OpId::IsFinite, IsFiniteF>(c); }
void k_LogicalNot(OpCall& c) { unary<OpId::LogicalNot, NotF>(c, 1); }

void k_Cast(OpCall& c) {
  if (c.in[0].dtype() == DType::kString) {  // string -> string: the same value (tensors are immutable)
    c.results.resize(1);
    c.results[0] = c.in[0];
    return;
  }
  Tensor& y = c.alloc(0);
  DType to = c.spec(0).dtype;
  if (!is_numeric(c.in[0].dtype()) && c.in[0].dtype() != DType::kBool) return cast_every_dtype(c.in[0], y);
  if (!is_numeric(to) && to != DType::kBool) return cast_every_dtype(c.in[0], y);
  JF_SWITCH_DTYPE(c.in[0].dtype(), From, JF_SWITCH_DTYPE(to, To, (cast_apply<From, To>(c.in[0], y))));
}

void k_AddV2(OpCall& c) { binary<OpId::AddV2, AddF>(c, 1); }
void k_Sub(OpCall& c) { binary<OpId::Sub, SubF>(c, 1); }
void k_Mul(OpCall& c) { binary<OpId::Mul, MulF>(c, 1); }
void k_RealDiv(OpCall& c) { binary<OpId::RealDiv, DivF>(c, 4); }
void k_Atan2(OpCall& c) { binary<OpId::Atan2, Atan2F>(c, 20); }
void k_SquaredDifference(OpCall& c) { binary<OpId::SquaredDifference, SquaredDifferenceF>(c, 2); }
void k_TruncateDiv(OpCall& c) {
  check_int_divisor(c);
  division<OpId::TruncateDiv, TruncateDivF, false>(c);
}
void k_TruncateMod(OpCall& c) {
  check_int_divisor(c);
  binary<OpId::TruncateMod, TruncateModF>(c, 8);
}
void k_DivNoNan(OpCall& c) { binary<OpId::DivNoNan, DivNoNanF>(c, 4); }
void k_MulNoNan(OpCall& c) { binary<OpId::MulNoNan, MulNoNanF>(c, 2); }
void k_Xlogy(OpCall& c) { binary<OpId::Xlogy, XlogyF>(c, 20); }
void k_Xlog1py(OpCall& c) { binary<OpId::Xlog1py, Xlog1pyF>(c, 20); }
void k_NextAfter(OpCall& c) { binary<OpId::NextAfter, NextAfterF>(c, 10); }
void k_FloorDiv(OpCall& c) {
  check_int_divisor(c);
  division<OpId::FloorDiv, FloorDivF, true>(c);
}
void k_FloorMod(OpCall& c) {
  check_int_divisor(c);
  binary<OpId::FloorMod, FloorModF>(c, 8);
}
void k_Maximum(OpCall& c) { binary<OpId::Maximum, MaxF>(c, 1); }
void k_Minimum(OpCall& c) { binary<OpId::Minimum, MinF>(c, 1); }
void k_Pow(OpCall& c) {
  check_int_exponent(c);
  binary<OpId::Pow, PowF>(c, 20);
}
void k_Equal(OpCall& c) {
  if (c.in[0].dtype() == DType::kString) return compare_strings(c, false);
  compare<OpId::Equal, EqF>(c);
}
void k_NotEqual(OpCall& c) {
  if (c.in[0].dtype() == DType::kString) return compare_strings(c, true);
  compare<OpId::NotEqual, NeF>(c);
}
void k_Less(OpCall& c) { compare<OpId::Less, LtF>(c); }
void k_LessEqual(OpCall& c) { compare<OpId::LessEqual, LeF>(c); }
void k_Greater(OpCall& c) { compare<OpId::Greater, GtF>(c); }
void k_GreaterEqual(OpCall& c) { compare<OpId::GreaterEqual, GeF>(c); }
void k_LogicalAnd(OpCall& c) { binary<OpId::LogicalAnd, AndF>(c, 1); }
void k_LogicalOr(OpCall& c) { binary<OpId::LogicalOr, OrF>(c, 1); }

void k_BitwiseAnd(OpCall& c) { binary<OpId::BitwiseAnd, BitAndF>(c, 1); }
void k_BitwiseOr(OpCall& c) { binary<OpId::BitwiseOr, BitOrF>(c, 1); }
void k_BitwiseXor(OpCall& c) { binary<OpId::BitwiseXor, BitXorF>(c, 1); }
void k_LeftShift(OpCall& c) { binary<OpId::LeftShift, LeftShiftF>(c, 1); }
void k_RightShift(OpCall& c) { binary<OpId::RightShift, RightShiftF>(c, 1); }
void k_Invert(OpCall& c) { unary<OpId::Invert, InvertF>(c, 1); }

template <class T>
static void select_typed(OpCall& c, Tensor& y) {
  BroadcastPlan p = make_broadcast(y.shape(), {c.in[0].shape(), c.in[1].shape(), c.in[2].shape()});
  const bool* pc = c.in[0].data<bool>();
  const T* pa = c.in[1].data<T>();
  const T* pb = c.in[2].data<T>();
  T* po = y.data<T>();
  for_each_segment(p, 1.0, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
    for (int64_t i = 0; i < n; ++i)
      po[o + i] = pc[off[0] + i * is[0]] ? pa[off[1] + i * is[1]] : pb[off[2] + i * is[2]];
  });
}
void k_SelectV2(OpCall& c) {
  Tensor& y = c.alloc(0);
  if (y.dtype() == DType::kString) return select_typed<std::string>(c, y);
  JF_SWITCH_CLAIMED(op_types(OpId::SelectV2), y.dtype(), T, select_typed<T>(c, y));
}

void k_AddN(OpCall& c) {
  Tensor& y = c.alloc(0);
  int64_t n = y.num_elements();
  JF_SWITCH_CLAIMED(op_types(OpId::AddN), y.dtype(), T, {
    T* dst = y.data<T>();
    parallel_for(n, static_cast<double>(c.in.size()), [&](int64_t b, int64_t e) {
      MMap<T> o(dst + b, e - b);
      o = CMap<T>(c.in[0].data<T>() + b, e - b);
      for (size_t k = 1; k < c.in.size(); ++k) o += CMap<T>(c.in[k].data<T>() + b, e - b);
    });
  });
}

}  // namespace jf
