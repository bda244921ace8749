// Eager elementwise kernels: Eigen array expressions over contiguous segments (vectorized),
// split across the thread pool for large tensors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

#include "core/broadcast.h"
#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/strings.h"

namespace jf {
namespace {
// The IEEE (correctly rounded) square root, vectorized with the SQRTPS/SQRTPD instructions
// of whichever x86 packet size Eigen picked; Eigen's own packet sqrt is a fast-math estimate
// for floats (see SqrtF).
template <class T>
struct IeeeSqrtOp {
  T operator()(const T& x) const { return std::sqrt(x); }
#if defined(EIGEN_VECTORIZE_SSE2)
  Eigen::internal::Packet4f packetOp(const Eigen::internal::Packet4f& x) const { return _mm_sqrt_ps(x); }
  Eigen::internal::Packet2d packetOp(const Eigen::internal::Packet2d& x) const { return _mm_sqrt_pd(x); }
#endif
#if defined(EIGEN_VECTORIZE_AVX)
  Eigen::internal::Packet8f packetOp(const Eigen::internal::Packet8f& x) const { return _mm256_sqrt_ps(x); }
  Eigen::internal::Packet4d packetOp(const Eigen::internal::Packet4d& x) const { return _mm256_sqrt_pd(x); }
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
  Eigen::internal::Packet16f packetOp(const Eigen::internal::Packet16f& x) const { return _mm512_sqrt_ps(x); }
  Eigen::internal::Packet8d packetOp(const Eigen::internal::Packet8d& x) const { return _mm512_sqrt_pd(x); }
#endif
};
}  // namespace
}  // namespace jf

namespace Eigen::internal {
template <class T>
struct functor_traits<jf::IeeeSqrtOp<T>> {
#if defined(EIGEN_VECTORIZE_SSE2)
  enum {Cost = 5 * NumTraits<T>::MulCost, PacketAccess = std::is_floating_point_v<T>};
#else
  enum { Cost = 5 * NumTraits<T>::MulCost, PacketAccess = false };
#endif
};
}  // namespace Eigen::internal

namespace jf {
namespace {

template <class T>
using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using CMap = Eigen::Map<const Arr<T>>;
template <class T>
using MMap = Eigen::Map<Arr<T>>;

// ---- unary ---------------------------------------------------------------------------
// A functor may have `static void fixup(const T* x, T* y, int64_t n)`: a scalar pass that
// repairs the (rare) lanes where Eigen's fast packet math is wrong, run block by block while
// the block is still in cache.
template <class F, class T, class = void>
struct HasFixup : std::false_type {};
template <class F, class T>
struct HasFixup<F, T,
                std::void_t<decltype(F::fixup(std::declval<const T*>(), std::declval<T*>(), int64_t()))>>
    : std::true_type {};

template <class F, class In, class Out>
void unary_apply(const Tensor& x, Tensor& y, double cost) {
  const In* src = x.data<In>();
  Out* dst = y.data<Out>();
  parallel_for(x.num_elements(), cost, [&](int64_t b, int64_t e) {
    if constexpr (HasFixup<F, In>::value && std::is_same_v<In, Out>) {
      constexpr int64_t kBlock = 4096;
      for (int64_t i = b; i < e; i += kBlock) {
        int64_t m = std::min(kBlock, e - i);
        MMap<Out>(dst + i, m) = F{}(CMap<In>(src + i, m));
        F::fixup(src + i, dst + i, m);
      }
    } else {
      MMap<Out>(dst + b, e - b) = F{}(CMap<In>(src + b, e - b));
    }
  });
}

#define JF_UNARY_FUNCTOR(NAME, EXPR)    \
  struct NAME {                         \
    template <class A>                  \
    auto operator()(const A& a) const { \
      using T = typename A::Scalar;     \
      (void)sizeof(T);                  \
      return EXPR;                      \
    }                                   \
  };
// Floats are multiplied by -1: Eigen 3.4's AVX and AVX-512 packet negation is 0 - x, which
// gives +0 for +0 (its SSE negation flips the sign bit), so -x of +0 depended on the host.
struct NegF {
  template <class A>
  auto operator()(const A& a) const {
    using T = typename A::Scalar;
    if constexpr (std::is_floating_point_v<T>) {
      return a * T(-1);
    } else {
      return -a;
    }
  }
};
JF_UNARY_FUNCTOR(AbsF, a.abs())
JF_UNARY_FUNCTOR(SquareF, a.square())
// max(x, 0) + 0: which of two equal zeros a packet max keeps differs by instruction set
// (relu(-0) was -0 in part of an AVX-512 vector); adding +0 makes it TF's +0 (x + 0 is x
// for every other x, NaN included).
JF_UNARY_FUNCTOR(ReluF, a.binaryExpr(Arr<T>::Constant(a.size(), T(0)),
                                     Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>()) +
                            T(0))
// Eigen 3.4's packet exp for double clamps its input at -709.4: exp(-inf) and every result
// below the smallest normal came out as 5.6e-309 instead of 0 (or the subnormal value).
struct ExpF {
  template <class A>
  auto operator()(const A& a) const {
    return a.exp();
  }
  template <class T>
  static void fixup(const T* x, T* y, int64_t n) {
    const T lo = std::log(std::numeric_limits<T>::min());
    for (int64_t i = 0; i < n; ++i)
      if (x[i] < lo) y[i] = std::exp(x[i]);
  }
};
// Eigen 3.4's packet log flushes subnormal inputs (log(1e-39f) = -87.3, not -89.8).
struct LogF {
  template <class A>
  auto operator()(const A& a) const {
    return a.log();
  }
  template <class T>
  static void fixup(const T* x, T* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (x[i] > T(0) && x[i] < std::numeric_limits<T>::min()) y[i] = std::log(x[i]);
  }
};
JF_UNARY_FUNCTOR(Log1pF, a.log1p())
JF_UNARY_FUNCTOR(TanhF, a.tanh())
// Not Eigen's logistic(): for float it is only ~1e-7 absolute (2e-4 relative near x = -8).
// 1 / (1 + exp(-x)) is accurate to a few ulps; where exp(-x) overflows the result is exp(x).
struct SigmoidF {
  template <class A>
  auto operator()(const A& a) const {
    using T = typename A::Scalar;
    return (T(1) + (-a).exp()).inverse();
  }
  template <class T>
  static void fixup(const T* x, T* y, int64_t n) {
    const T lo = std::is_same_v<T, float> ? T(-80) : T(-700);
    for (int64_t i = 0; i < n; ++i)
      if (x[i] < lo) y[i] = std::exp(x[i]);
  }
};
// Sqrt and Rsqrt take the IEEE square root on every host (ieee_sqrt below): Eigen 3.4's
// fast-math packet sqrt and rsqrt are a Newton step from the rsqrt estimate, 1 ulp off, and
// per host wrong for special inputs (AVX-512: NaN for +inf and 0 for subnormals; AVX and SSE:
// rsqrt of a negative subnormal -inf, as the estimate instruction flushes it to -0).
struct SqrtF {
  template <class A>
  auto operator()(const A& a) const {
    return a.unaryExpr(IeeeSqrtOp<typename A::Scalar>());
  }
};
// 1 / sqrt(x), both IEEE: rsqrt(-0) = -inf and NaN for every negative input, as numpy's
// 1 / np.sqrt(x) and TF.
struct RsqrtF {
  template <class A>
  auto operator()(const A& a) const {
    return a.unaryExpr(IeeeSqrtOp<typename A::Scalar>()).inverse();
  }
};
JF_UNARY_FUNCTOR(SinF, a.sin())
JF_UNARY_FUNCTOR(CosF, a.cos())
JF_UNARY_FUNCTOR(ErfF, a.erf())
JF_UNARY_FUNCTOR(Expm1F, a.expm1())
JF_UNARY_FUNCTOR(TanF, a.tan())
JF_UNARY_FUNCTOR(AtanF, a.atan())
JF_UNARY_FUNCTOR(AsinF, a.asin())
JF_UNARY_FUNCTOR(AcosF, a.acos())
JF_UNARY_FUNCTOR(SinhF, a.sinh())
JF_UNARY_FUNCTOR(CoshF, a.cosh())
JF_UNARY_FUNCTOR(AsinhF, a.asinh())
JF_UNARY_FUNCTOR(AcoshF, a.acosh())
JF_UNARY_FUNCTOR(AtanhF, a.atanh())
JF_UNARY_FUNCTOR(ErfcF, a.erfc())
JF_UNARY_FUNCTOR(LgammaF, a.lgamma())
JF_UNARY_FUNCTOR(DigammaF, a.digamma())
// TF's erfinv: ndtri((x + 1) / 2) / sqrt(2); NaN beyond [-1, 1] (TF 2.21's values; Eigen 3.4's
// ndtri saturates to +-inf there).
struct ErfinvF {
  template <class A>
  auto operator()(const A& a) const {
    using T = typename A::Scalar;
    return (a * T(0.5) + T(0.5)).ndtri() * T(M_SQRT1_2);
  }
  template <class T>
  static void fixup(const T* x, T* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (std::abs(x[i]) > T(1)) y[i] = std::numeric_limits<T>::quiet_NaN();
  }
};
// Eigen 3.4's packet floor and ceil without SSE4.1 (an x86-64 baseline build) round through
// integers and lose the sign of a zero result: floor(-0) and ceil(-0.5) came out +0. A zero
// result takes the sign of its input, as IEEE's floor and ceil give it.
template <class T>
void signed_zero_fixup(const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (y[i] == T(0)) y[i] = std::copysign(T(0), x[i]);
}
struct FloorF {
  template <class A>
  auto operator()(const A& a) const {
    return a.floor();
  }
  template <class T>
  static void fixup(const T* x, T* y, int64_t n) {
    signed_zero_fixup(x, y, n);
  }
};
struct CeilF {
  template <class A>
  auto operator()(const A& a) const {
    return a.ceil();
  }
  template <class T>
  static void fixup(const T* x, T* y, int64_t n) {
    signed_zero_fixup(x, y, n);
  }
};
// Half to even (TF's Round); integers are their own rounding.
struct RoundF {
  template <class A>
  auto operator()(const A& a) const {
    using T = typename A::Scalar;
    return a.unaryExpr([](T x) {
      if constexpr (std::is_floating_point_v<T>) {
        return std::nearbyint(x);
      } else {
        return x;
      }
    });
  }
};
// TF's sign: NaN stays NaN, -0 gives +0.
JF_UNARY_FUNCTOR(SignF, a.unaryExpr([](T x) {
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == x ? T(0) : x;
}))
JF_UNARY_FUNCTOR(ReciprocalF, a.inverse())
JF_UNARY_FUNCTOR(IsNanF, a.isNaN())
JF_UNARY_FUNCTOR(IsInfF, a.isInf())
JF_UNARY_FUNCTOR(IsFiniteF, a.isFinite())
JF_UNARY_FUNCTOR(NotF, !a)

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
  F f;
  for_each_segment(p, cost, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
    MMap<R> dst(po + o, n);
    const T* xa = pa + off[0];
    const T* xb = pb + off[1];
    if (is[0] && is[1])
      dst = f(CMap<T>(xa, n), CMap<T>(xb, n));
    else if (is[0])
      dst = f(CMap<T>(xa, n), Arr<T>::Constant(n, *xb));
    else if (is[1])
      dst = f(Arr<T>::Constant(n, *xa), CMap<T>(xb, n));
    else
      dst = f(Arr<T>::Constant(n, *xa), Arr<T>::Constant(n, *xb));
  });
}

#define JF_BINARY_FUNCTOR(NAME, EXPR)         \
  struct NAME {                               \
    template <class A, class B>               \
    auto operator()(const A& a, const B& b) { \
      using T = typename A::Scalar;           \
      (void)sizeof(T);                        \
      return EXPR;                            \
    }                                         \
  };
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
  if constexpr (std::is_floating_point_v<T>) {
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
JF_BINARY_FUNCTOR(AddF, a + b)
JF_BINARY_FUNCTOR(SubF, a - b)
JF_BINARY_FUNCTOR(MulF, a* b)
JF_BINARY_FUNCTOR(DivF, a / b)
JF_BINARY_FUNCTOR(MaxF, a.binaryExpr(b, (Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>())))
JF_BINARY_FUNCTOR(MinF, a.binaryExpr(b, (Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>())))
JF_BINARY_FUNCTOR(FloorDivF, a.binaryExpr(b, [](T x, T y) { return floor_div(x, y); }))
JF_BINARY_FUNCTOR(FloorModF, a.binaryExpr(b, [](T x, T y) { return floor_mod(x, y); }))
JF_BINARY_FUNCTOR(Atan2F, a.binaryExpr(b, [](T x, T y) { return std::atan2(x, y); }))
JF_BINARY_FUNCTOR(SquaredDifferenceF, (a - b).square())
JF_BINARY_FUNCTOR(TruncateDivF, a.binaryExpr(b, [](T x, T y) { return trunc_div(x, y); }))
JF_BINARY_FUNCTOR(TruncateModF, a.binaryExpr(b, [](T x, T y) { return trunc_mod(x, y); }))
// TF's *NoNan ops: 0 where y == 0 (whatever x is); xlogy/xlog1py: 0 where x == 0.
JF_BINARY_FUNCTOR(DivNoNanF, a.binaryExpr(b, [](T x, T y) { return y == T(0) ? T(0) : x / y; }))
JF_BINARY_FUNCTOR(MulNoNanF, a.binaryExpr(b, [](T x, T y) { return y == T(0) ? T(0) : x * y; }))
JF_BINARY_FUNCTOR(XlogyF, a.binaryExpr(b, [](T x, T y) { return x == T(0) ? T(0) : x * std::log(y); }))
JF_BINARY_FUNCTOR(Xlog1pyF, a.binaryExpr(b, [](T x, T y) { return x == T(0) ? T(0) : x * std::log1p(y); }))
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
  return y < 0 ? T(0) : y > kMax ? kMax : y;
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
  if (!is_int(c.in[1].dtype())) return;
  const Tensor& d = c.in[1];
  for (int64_t i = 0; i < d.num_elements(); ++i)
    if (d.get_int(i) == 0) c.fail("Integer division by zero");
}
// Like TF (and numpy): an integer to a negative integer power is an error, not garbage.
void check_int_exponent(OpCall& c) {
  if (!is_int(c.in[1].dtype())) return;
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
  Tensor& y = c.alloc(0);
  DType to = c.spec(0).dtype;
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
  binary<OpId::TruncateDiv, TruncateDivF>(c, 8);
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
  binary<OpId::FloorDiv, FloorDivF>(c, 8);
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

void k_SelectV2(OpCall& c) {
  Tensor& y = c.alloc(0);
  BroadcastPlan p = make_broadcast(y.shape(), {c.in[0].shape(), c.in[1].shape(), c.in[2].shape()});
  const bool* pc = c.in[0].data<bool>();
  JF_SWITCH_CLAIMED(op_types(OpId::SelectV2), y.dtype(), T, {
    const T* pa = c.in[1].data<T>();
    const T* pb = c.in[2].data<T>();
    T* po = y.data<T>();
    for_each_segment(p, 1.0, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
      for (int64_t i = 0; i < n; ++i)
        po[o + i] = pc[off[0] + i * is[0]] ? pa[off[1] + i * is[1]] : pb[off[2] + i * is[2]];
    });
  });
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
