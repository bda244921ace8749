// Eager kernels of the scans (Cumsum, Cumprod, CumulativeLogsumexp with exclusive and reverse)
// and TopKV2. A scan runs as outer x n x inner blocks of the row-major input: each outer
// block walks its n rows in order (or backwards) carrying a row of inner accumulators, so the
// inner loop is contiguous; outer blocks are split over the thread pool. TopKV2 orders each
// row's indices by value, larger first and equal values by position (TF's order, which makes
// sort and argsort built on it stable).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/kernels.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

struct ScanGeom {
  int64_t outer = 1, n = 1, inner = 1;
};

ScanGeom scan_geom(const Shape& s, int axis) {
  ScanGeom g;
  for (int d = 0; d < s.rank(); ++d) (d < axis ? g.outer : d == axis ? g.n : g.inner) *= s[d];
  return g;
}

// out = scan of x along the axis with `combine` from `init`: inclusive or exclusive, forward
// or from the end.
template <class T, class F>
void scan(const T* x, T* out, const ScanGeom& g, bool exclusive, bool reverse, T init, F combine) {
  const int64_t row = g.n * g.inner;
  parallel_for(g.outer, static_cast<double>(row) * 2.0, [&](int64_t b, int64_t e) {
    std::vector<T> acc(static_cast<size_t>(g.inner));
    for (int64_t o = b; o < e; ++o) {
      std::fill(acc.begin(), acc.end(), init);
      for (int64_t t = 0; t < g.n; ++t) {
        const int64_t r = reverse ? g.n - 1 - t : t;
        const T* xr = x + o * row + r * g.inner;
        T* yr = out + o * row + r * g.inner;
        if (exclusive) {
          for (int64_t i = 0; i < g.inner; ++i) {
            yr[i] = acc[i];
            acc[i] = combine(acc[i], xr[i]);
          }
        } else {
          for (int64_t i = 0; i < g.inner; ++i) yr[i] = acc[i] = combine(acc[i], xr[i]);
        }
      }
    }
  });
}

int scan_axis(const OpCall& c) {
  int64_t a = c.in[1].get_int(0);
  return static_cast<int>(a < 0 ? a + c.in[0].rank() : a);
}

template <OpId Op, class Body>
void run_scan(OpCall& c, Body body) {
  const Tensor& x = c.in[0];
  Tensor& out = c.alloc(0);
  if (x.num_elements() == 0) return;
  ScanGeom g = scan_geom(x.shape(), scan_axis(c));
  const bool exclusive = c.attrs.get<bool>("exclusive", false);
  const bool reverse = c.attrs.get<bool>("reverse", false);
  JF_SWITCH_CLAIMED(op_types(Op), x.dtype(), T, body(x.data<T>(), out.data<T>(), g, exclusive, reverse));
}

}  // namespace

void k_Cumsum(OpCall& c) {
  run_scan<OpId::Cumsum>(c, [](auto* x, auto* y, const ScanGeom& g, bool ex, bool rev) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    scan<T>(x, y, g, ex, rev, T(0), [](T a, T b) { return a + b; });
  });
}

void k_Cumprod(OpCall& c) {
  run_scan<OpId::Cumprod>(c, [](auto* x, auto* y, const ScanGeom& g, bool ex, bool rev) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    scan<T>(x, y, g, ex, rev, T(1), [](T a, T b) { return a * b; });
  });
}

void k_CumulativeLogsumexp(OpCall& c) {
  run_scan<OpId::CumulativeLogsumexp>(c, [](auto* x, auto* y, const ScanGeom& g, bool ex, bool rev) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    // Half types: each step in float, rounded to the type (TF's eager rounding per op).
    using C = std::conditional_t<kEigenHalf<T>, float, T>;
    const C ninf = -std::numeric_limits<C>::infinity();
    // log(exp(a) + exp(b)) around the larger one; -inf + -inf stays -inf (not NaN).
    scan<T>(x, y, g, ex, rev, static_cast<T>(ninf), [ninf](T ta, T tb) {
      const C a = static_cast<C>(ta), b = static_cast<C>(tb);
      if (std::isnan(a) || std::isnan(b)) return static_cast<T>(a + b);
      C hi = std::max(a, b), lo = std::min(a, b);
      if (hi == ninf || hi == -ninf) return static_cast<T>(hi);  // inf - inf would be NaN
      return static_cast<T>(hi + std::log1p(std::exp(lo - hi)));
    });
  });
}

void k_TopKV2(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t k = c.in[1].get_int(0);
  Tensor& values = c.alloc(0);
  Tensor& indices = c.alloc(1);
  const int64_t n = x.shape()[x.rank() - 1];
  const int64_t rows = n ? x.num_elements() / n : values.num_elements() / std::max<int64_t>(k, 1);
  if (k == 0 || rows == 0) return;
  const bool idx64 = indices.dtype() == DType::kInt64;
  JF_SWITCH_CLAIMED(op_types(OpId::TopKV2), x.dtype(), T, {
    const T* src = x.data<T>();
    T* vals = values.data<T>();
    const double cost = static_cast<double>(n) * std::log2(static_cast<double>(n) + 2.0);
    parallel_for(rows, cost, [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t r = b; r < e; ++r) {
        const T* v = src + r * n;
        std::iota(order.begin(), order.end(), int64_t{0});
        // Larger first, ties by position; NaN above every number (TF's comparison sort gives
        // NaN no consistent place: a total order at least makes the result deterministic).
        auto before = [v](int64_t i, int64_t j) {
          const bool ni = v[i] != v[i], nj = v[j] != v[j];
          if (ni != nj) return ni;
          if (!ni && v[i] != v[j]) return v[i] > v[j];
          return i < j;
        };
        if (k < n)
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        else
          std::sort(order.begin(), order.end(), before);
        for (int64_t t = 0; t < k; ++t) {
          vals[r * k + t] = v[order[t]];
          if (idx64)
            indices.data<int64_t>()[r * k + t] = order[t];
          else
            indices.data<int32_t>()[r * k + t] = static_cast<int32_t>(order[t]);
        }
      }
    });
  });
}

}  // namespace jf
