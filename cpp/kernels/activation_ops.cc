// Eager kernels of TF's activation ops (Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu):
// Eigen array expressions over contiguous segments, split across the thread pool.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

template <class T>
using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;

// y = f(x) segment by segment; f maps an Eigen array expression to one of the same size (of
// its own scalar type). float16 and bfloat16 are widened to float32 in blocks, computed there
// and rounded once per element (the activation is one op: TF's kernel rounds its result).
template <class T, class F>
void map_segments(OpCall& c, double cost, const F& f) {
  const Tensor& x = c.in[0];
  Tensor& y = c.alloc(0);
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  if constexpr (kEigenHalf<T>) {
    constexpr int64_t kBlock = 512;
    parallel_for(x.num_elements(), cost + 2, [&](int64_t b, int64_t e) {
      float wi[kBlock], wo[kBlock];
      for (int64_t i = b; i < e; i += kBlock) {
        const int64_t m = std::min(kBlock, e - i);
        widen_block(src + i, wi, m);
        Eigen::Map<Arr<float>>(wo, m) = f(Eigen::Map<const Arr<float>>(wi, m));
        narrow_block(wo, dst + i, m);
      }
    });
  } else {
    parallel_for(x.num_elements(), cost, [&](int64_t b, int64_t e) {
      Eigen::Map<const Arr<T>> a(src + b, e - b);
      Eigen::Map<Arr<T>>(dst + b, e - b) = f(a);
    });
  }
}
// The scalar type of the array expression a lambda of map_segments receives.
#define JF_SCALAR(a) typename std::decay_t<decltype(a)>::Scalar

template <class T>
using MaxNaN = Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>;
template <class T>
using MinNaN = Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>;

// SELU's constants (Klambauer et al.), as TF's kernel spells them.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluScaleAlpha = 1.7580993408473768599402175208123;

}  // namespace

// min(max(x, 0) + 0, 6); NaN stays NaN (TF 2.21: relu6(nan) = nan). The + 0 makes relu6(-0)
// TF's +0 on every host: which of two equal zeros a packet max keeps differs by instruction set.
void k_Relu6(OpCall& c) {
  JF_SWITCH_CLAIMED(op_types(OpId::Relu6), c.in[0].dtype(), T, (map_segments<T>(c, 2, [](const auto& a) {
                      using S = JF_SCALAR(a);
                      const auto n = a.size();
                      return (a.binaryExpr(Arr<S>::Constant(n, S(0)), MaxNaN<S>()) + S(0))
                          .binaryExpr(Arr<S>::Constant(n, S(6)), MinNaN<S>());
                    })));
}

// x < 0 ? expm1(x) : x. TF's kernel writes exp(x) - 1; expm1 keeps the digits near 0.
void k_Elu(OpCall& c) {
  JF_SWITCH_CLAIMED(
      op_types(OpId::Elu), c.in[0].dtype(), T,
      (map_segments<T>(c, 20, [](const auto& a) { return (a < JF_SCALAR(a)(0)).select(a.expm1(), a); })));
}

void k_Selu(OpCall& c) {
  JF_SWITCH_CLAIMED(op_types(OpId::Selu), c.in[0].dtype(), T, (map_segments<T>(c, 20, [](const auto& a) {
                      using S = JF_SCALAR(a);
                      return (a < S(0)).select(S(kSeluScaleAlpha) * a.expm1(), S(kSeluScale) * a);
                    })));
}

// TF's stable form: x above -threshold (softplus(x) == x within epsilon), exp(x) below
// threshold (log1p(exp(x)) == exp(x) within epsilon), else log1p(exp(x)); threshold is
// log(epsilon) + 2, so exp never overflows.
void k_Softplus(OpCall& c) {
  JF_SWITCH_CLAIMED(op_types(OpId::Softplus), c.in[0].dtype(), T, (map_segments<T>(c, 30, [](const auto& a) {
                      using S = JF_SCALAR(a);  // the threshold is the op dtype's (TF: half's for half)
                      const S th = std::log(static_cast<S>(Eigen::NumTraits<T>::epsilon())) + S(2);
                      return (a > -th).select(a, (a < th).select(a.exp(), a.exp().log1p()));
                    })));
}

// x / (1 + |x|): NaN at +-inf, as TF's kernel (inf / inf).
void k_Softsign(OpCall& c) {
  JF_SWITCH_CLAIMED(op_types(OpId::Softsign), c.in[0].dtype(), T,
                    (map_segments<T>(c, 4, [](const auto& a) { return a / (a.abs() + JF_SCALAR(a)(1)); })));
}

// x > 0 ? x : alpha * x, alpha the op's float attr (TF's default 0.2); any alpha, as TF 2.21
// (alpha > 1 is not clamped).
void k_LeakyRelu(OpCall& c) {
  const double alpha = c.attrs.get<double>("alpha", 0.2);
  JF_SWITCH_CLAIMED(op_types(OpId::LeakyRelu), c.in[0].dtype(), T,
                    (map_segments<T>(c, 2, [alpha](const auto& a) {
                      using S = JF_SCALAR(a);
                      return (a > S(0)).select(a, S(alpha) * a);
                    })));
}

#undef JF_SCALAR

}  // namespace jf
