// The elementwise functors and the segment loops of the eager kernels, shared by
// elementwise.cc (built for the baseline) and simd/variant.cc (built once per wider instruction
// set): one definition, so that a variant computes what the baseline computes. Everything is
// in an unnamed namespace (and the variants rename Eigen's), so no code compiled for one
// instruction set can stand in for another's at link time.
#pragma once
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

#include "kernels/simd/table.h"

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

// y[0, n) = F(x[0, n)), with F's fixup pass block by block.
template <class F, class In, class Out>
void unary_segment(const In* src, Out* dst, int64_t n) {
  if constexpr (HasFixup<F, In>::value && std::is_same_v<In, Out>) {
    constexpr int64_t kBlock = 4096;
    for (int64_t i = 0; i < n; i += kBlock) {
      int64_t m = std::min(kBlock, n - i);
      MMap<Out>(dst + i, m) = F{}(CMap<In>(src + i, m));
      F::fixup(src + i, dst + i, m);
    }
  } else {
    MMap<Out>(dst, n) = F{}(CMap<In>(src, n));
  }
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
  template <class T, class = std::enable_if_t<std::is_floating_point_v<T>>>  // none for complex
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
  template <class T, class = std::enable_if_t<std::is_floating_point_v<T>>>  // none for complex
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
  template <class T, class = std::enable_if_t<std::is_floating_point_v<T>>>  // none for complex
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
// TF's sign: NaN stays NaN, -0 gives +0; a complex value's is z / |z| (0 for 0).
template <class T>
struct IsStdComplex : std::false_type {};
template <class R>
struct IsStdComplex<std::complex<R>> : std::true_type {};
JF_UNARY_FUNCTOR(SignF, a.unaryExpr([](T x) {
  if constexpr (IsStdComplex<T>::value) {
    return x == T(0) ? T(0) : x / T(std::abs(x));
  } else {
    return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == x ? T(0) : x;
  }
}))
JF_UNARY_FUNCTOR(ReciprocalF, a.inverse())
JF_UNARY_FUNCTOR(IsNanF, a.isNaN())
JF_UNARY_FUNCTOR(IsInfF, a.isInf())
JF_UNARY_FUNCTOR(IsFiniteF, a.isFinite())
JF_UNARY_FUNCTOR(NotF, !a)

// ---- binary --------------------------------------------------------------------------
// out[0, n) = F(a, b): each operand a run of n values or one value broadcast.
template <class F, class T, class R>
void binary_segment(const T* xa, const T* xb, R* out, int64_t n, bool a_is_run, bool b_is_run) {
  MMap<R> dst(out, n);
  F f;
  if (a_is_run && b_is_run)
    dst = f(CMap<T>(xa, n), CMap<T>(xb, n));
  else if (a_is_run)
    dst = f(CMap<T>(xa, n), Arr<T>::Constant(n, *xb));
  else if (b_is_run)
    dst = f(Arr<T>::Constant(n, *xa), CMap<T>(xb, n));
  else
    dst = f(Arr<T>::Constant(n, *xa), Arr<T>::Constant(n, *xb));
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
JF_BINARY_FUNCTOR(AddF, a + b)
JF_BINARY_FUNCTOR(SubF, a - b)
JF_BINARY_FUNCTOR(MulF, a* b)
JF_BINARY_FUNCTOR(DivF, a / b)
JF_BINARY_FUNCTOR(MaxF, a.binaryExpr(b, (Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>())))
JF_BINARY_FUNCTOR(MinF, a.binaryExpr(b, (Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>())))
// A complex difference times its conjugate, as TF's kernel: |x - y|^2 + 0i.
struct SquaredDifferenceF {
  template <class A, class B>
  auto operator()(const A& a, const B& b) const {
    if constexpr (IsStdComplex<typename A::Scalar>::value) {
      return ((a - b) * (a - b).conjugate()).eval();
    } else {
      return (a - b).square();
    }
  }
};

// The functors with per-ISA variants, by their slot in simd::Table (-1: none).
template <class F>
constexpr int kUnarySlot = -1;
template <class F>
constexpr int kBinarySlot = -1;
#define JF_SIMD_SLOT(KIND, OP, F) \
  template <>                     \
  constexpr int k##KIND##Slot<F> = static_cast<int>(simd::KIND::OP);
JF_SIMD_SLOT(Unary, Neg, NegF)
JF_SIMD_SLOT(Unary, Abs, AbsF)
JF_SIMD_SLOT(Unary, Square, SquareF)
JF_SIMD_SLOT(Unary, Relu, ReluF)
JF_SIMD_SLOT(Unary, Exp, ExpF)
JF_SIMD_SLOT(Unary, Log, LogF)
JF_SIMD_SLOT(Unary, Log1p, Log1pF)
JF_SIMD_SLOT(Unary, Tanh, TanhF)
JF_SIMD_SLOT(Unary, Sigmoid, SigmoidF)
JF_SIMD_SLOT(Unary, Sqrt, SqrtF)
JF_SIMD_SLOT(Unary, Rsqrt, RsqrtF)
JF_SIMD_SLOT(Unary, Sin, SinF)
JF_SIMD_SLOT(Unary, Cos, CosF)
JF_SIMD_SLOT(Unary, Erf, ErfF)
JF_SIMD_SLOT(Unary, Expm1, Expm1F)
JF_SIMD_SLOT(Unary, Reciprocal, ReciprocalF)
JF_SIMD_SLOT(Binary, Add, AddF)
JF_SIMD_SLOT(Binary, Sub, SubF)
JF_SIMD_SLOT(Binary, Mul, MulF)
JF_SIMD_SLOT(Binary, Div, DivF)
JF_SIMD_SLOT(Binary, Max, MaxF)
JF_SIMD_SLOT(Binary, Min, MinF)
JF_SIMD_SLOT(Binary, SquaredDifference, SquaredDifferenceF)
#undef JF_SIMD_SLOT

}  // namespace
}  // namespace jf
