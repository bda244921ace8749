// Eager reductions: the reduced axes are canonicalised to row-wise, column-wise or
// outer×column-wise passes over an Eigen matrix view; anything else is transposed first.
#include <algorithm>
#include <limits>

#include "ir/shape_fns.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <class T>
using RowVec = Eigen::Matrix<T, 1, Eigen::Dynamic>;

struct SumR {
  template <class T>
  static T init() {
    return T(0);
  }
  template <class T>
  static T comb(T a, T b) {
    return a + b;
  }
  template <class X>
  static auto rows(const X& m) {
    return m.rowwise().sum();
  }
  template <class X>
  static auto cols(const X& m) {
    return m.colwise().sum();
  }
};
struct ProdR {
  template <class T>
  static T init() {
    return T(1);
  }
  template <class T>
  static T comb(T a, T b) {
    return a * b;
  }
  template <class X>
  static auto rows(const X& m) {
    return m.rowwise().prod();
  }
  template <class X>
  static auto cols(const X& m) {
    return m.colwise().prod();
  }
};
struct MaxR {
  template <class T>
  static T init() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  template <class T>
  static T comb(T a, T b) {
    return (a != a || a > b) ? a : b;
  }
  template <class X>
  static auto rows(const X& m) {
    using T = typename X::Scalar;
    return m.rowwise().redux(Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>());
  }
  template <class X>
  static auto cols(const X& m) {
    using T = typename X::Scalar;
    return m.colwise().redux(Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>());
  }
};
struct MinR {
  template <class T>
  static T init() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  }
  template <class T>
  static T comb(T a, T b) {
    return (a != a || a < b) ? a : b;
  }
  template <class X>
  static auto rows(const X& m) {
    using T = typename X::Scalar;
    return m.rowwise().redux(Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>());
  }
  template <class X>
  static auto cols(const X& m) {
    using T = typename X::Scalar;
    return m.colwise().redux(Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>());
  }
};

// out[k] = reduce(in[k, 0..R)) for a K×R row-major block.
template <class R, class T>
void reduce_rows(const T* in, int64_t K, int64_t Rn, T* out) {
  if (K == 1 && Rn >= (1 << 16) && num_threads() > 1) {
    // One long row: reduce P equal pieces in parallel, then combine the partial results.
    int64_t P = 4 * num_threads(), piece = Rn / P;
    std::vector<T> part(P);
    reduce_rows<R>(in, P, piece, part.data());
    T acc = R::template init<T>();
    for (T v : part) acc = R::comb(acc, v);
    for (int64_t i = P * piece; i < Rn; ++i) acc = R::comb(acc, in[i]);
    *out = acc;
    return;
  }
  parallel_for(K, static_cast<double>(Rn), [&](int64_t b, int64_t e) {
    Eigen::Map<const RowMat<T>> m(in + b * Rn, e - b, Rn);
    Eigen::Map<Vec<T>>(out + b, e - b) = R::rows(m);
  });
}

// out[j] = reduce(in[0..R), j) for an R×K row-major block.
template <class R, class T>
void reduce_cols(const T* in, int64_t Rn, int64_t K, T* out) {
  parallel_for(K, static_cast<double>(Rn), [&](int64_t b, int64_t e) {
    Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>> m(in + b, Rn, e - b, Eigen::OuterStride<>(K));
    Eigen::Map<RowVec<T>>(out + b, e - b) = R::cols(m);
  });
}

struct Group {
  int64_t size;
  bool red;
};

template <class R, class T>
void reduce_impl(const Tensor& x, const std::vector<int>& axes, Tensor& y) {
  const Shape& s = x.shape();
  T* out = y.data<T>();
  int64_t n_out = y.num_elements();
  if (n_out == 0) return;
  int64_t n_red = n_out ? x.num_elements() / n_out : 0;
  if (n_red == 0 || x.num_elements() == 0) {
    std::fill(out, out + n_out, R::template init<T>());
    return;
  }
  std::vector<Group> g;
  for (int i = 0; i < s.rank(); ++i) {
    if (s[i] == 1) continue;
    bool red = std::binary_search(axes.begin(), axes.end(), i);
    if (!g.empty() && g.back().red == red)
      g.back().size *= s[i];
    else
      g.push_back({s[i], red});
  }
  const T* in = x.data<T>();
  if (g.empty() || (g.size() == 1 && !g[0].red)) {
    std::copy(in, in + n_out, out);
  } else if (g.size() == 1) {
    reduce_rows<R>(in, 1, g[0].size, out);
  } else if (g.size() == 2 && !g[0].red) {
    reduce_rows<R>(in, g[0].size, g[1].size, out);
  } else if (g.size() == 2) {
    reduce_cols<R>(in, g[0].size, g[1].size, out);
  } else if (g.size() == 3 && !g[0].red) {
    int64_t block = g[1].size * g[2].size;
    for (int64_t k = 0; k < g[0].size; ++k)
      reduce_cols<R>(in + k * block, g[1].size, g[2].size, out + k * g[2].size);
  } else {
    // Interleaved axes: move reduced axes last, then reduce rows.
    std::vector<int> perm;
    Shape ts;
    for (int i = 0; i < s.rank(); ++i)
      if (!std::binary_search(axes.begin(), axes.end(), i)) perm.push_back(i), ts.push_back(s[i]);
    for (int a : axes) perm.push_back(a), ts.push_back(s[a]);
    Tensor t = Tensor::empty(x.dtype(), ts);
    transpose_into(x, perm, t);
    reduce_rows<R>(t.data<T>(), n_out, n_red, out);
  }
}

template <TypeSet kTypes, class R>
void reduce_kernel(OpCall& c, bool mean) {
  std::vector<int> axes;
  reduce_axes(c, &axes);
  Tensor& y = c.alloc(0);
  JF_SWITCH_CLAIMED(kTypes, y.dtype(), T, {
    if constexpr (kEigenHalf<T>) {  // accumulated in float, rounded once
      Tensor yf = Tensor::empty(DType::kFloat32, y.shape());
      reduce_impl<R, float>(widen_to_float<T>(c.in[0]), axes, yf);
      int64_t n_out = y.num_elements(), n_red = n_out ? c.in[0].num_elements() / n_out : 0;
      float* o = yf.data<float>();
      if (mean)
        for (int64_t i = 0; i < n_out; ++i)
          o[i] = n_red ? o[i] / static_cast<float>(n_red) : std::numeric_limits<float>::quiet_NaN();
      round_from_float<T>(yf, y);
    } else {
      reduce_impl<R, T>(c.in[0], axes, y);
      if (mean) {
        int64_t n_out = y.num_elements(), n_red = n_out ? c.in[0].num_elements() / n_out : 0;
        T* o = y.data<T>();
        for (int64_t i = 0; i < n_out; ++i)
          o[i] = n_red ? static_cast<T>(o[i] / static_cast<T>(n_red))
                       : static_cast<T>(std::numeric_limits<T>::quiet_NaN());
      }
    }
  });
}

template <OpId Op>
void argreduce(OpCall& c) {
  constexpr bool kMax = Op == OpId::ArgMax;
  const Tensor& x = c.in[0];
  int ax = normalize_axis(c.in[1].get_int(0), x.rank(), c.name());
  Tensor& y = c.alloc(0);
  int64_t outer = 1, inner = 1, n = x.shape()[ax];
  for (int i = 0; i < ax; ++i) outer *= x.shape()[i];
  for (int i = ax + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  bool i64 = y.dtype() == DType::kInt64;
  JF_SWITCH_CLAIMED(op_types(Op), x.dtype(), T, {
    const T* in = x.data<T>();
    parallel_for(outer * inner, static_cast<double>(n), [&](int64_t b, int64_t e) {
      for (int64_t oi = b; oi < e; ++oi) {
        const T* p = in + (oi / inner) * n * inner + oi % inner;
        // TF's eager rule (Eigen's ArgMax reducer): start from index 0 holding the lowest
        // (highest) finite value and move to each element strictly greater (less). NaN
        // compares false, so NaNs are skipped, and an all-NaN (or all -inf for argmax) slice
        // gives 0: argmax([4, 5.5, nan]) = 1, argmax([nan, -inf]) = 0.
        int64_t best = 0;
        T bv = kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        for (int64_t k = 0; k < n; ++k) {
          T v = p[k * inner];
          if (kMax ? v > bv : v < bv) bv = v, best = k;
        }
        if (i64)
          y.data<int64_t>()[oi] = best;
        else
          y.data<int32_t>()[oi] = static_cast<int32_t>(best);
      }
    });
  });
}

template <bool kLog, class T>
void softmax_rows(const T* in, T* out, int64_t K, int64_t R) {
  parallel_for(K, 20.0 * R, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> row(in + k * R, R);
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> o(out + k * R, R);
      T m = row.maxCoeff();
      o = (row - m).exp();
      T s = o.sum();
      if (kLog)
        o = row - m - std::log(s);
      else
        o /= s;
    }
  });
}

template <OpId Op>
void softmax(OpCall& c) {
  constexpr bool kLog = Op == OpId::LogSoftmax;
  const Tensor& x = c.in[0];
  Tensor& y = c.alloc(0);
  int64_t R = x.shape()[x.rank() - 1], K = R ? x.num_elements() / R : 0;
  JF_SWITCH_CLAIMED(op_types(Op), x.dtype(), T, {
    if constexpr (kEigenHalf<T>) {  // in float32 and rounded once, as the reductions accumulate
      Tensor xf = widen_to_float<T>(x);
      Tensor yf = Tensor::empty(DType::kFloat32, y.shape());
      softmax_rows<kLog, float>(xf.data<float>(), yf.data<float>(), K, R);
      round_from_float<T>(yf, y);
    } else {
      softmax_rows<kLog, T>(x.data<T>(), y.data<T>(), K, R);
    }
  });
}

}  // namespace

void k_Sum(OpCall& c) { reduce_kernel<op_types(OpId::Sum), SumR>(c, false); }
void k_Mean(OpCall& c) { reduce_kernel<op_types(OpId::Mean), SumR>(c, true); }
void k_Prod(OpCall& c) { reduce_kernel<op_types(OpId::Prod), ProdR>(c, false); }
void k_Max(OpCall& c) { reduce_kernel<op_types(OpId::Max), MaxR>(c, false); }
void k_Min(OpCall& c) { reduce_kernel<op_types(OpId::Min), MinR>(c, false); }
void k_ArgMax(OpCall& c) { argreduce<OpId::ArgMax>(c); }
void k_ArgMin(OpCall& c) { argreduce<OpId::ArgMin>(c); }
void k_Softmax(OpCall& c) { softmax<OpId::Softmax>(c); }
void k_LogSoftmax(OpCall& c) { softmax<OpId::LogSoftmax>(c); }

}  // namespace jf
