// Eager kernels of the statistics ops: Any and All over bool tensors, EuclideanNorm, the
// sorted segment reductions (SegmentSum/Mean/Max/Min/Prod) and the unsorted segment max, min
// and product, with TF's CPU rules for empty segments, NaN, id order and out-of-range ids.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/shape_fns.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

int64_t elements(const Shape& s, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= s[i];
  return n;
}

// A reduction as outer x reduced x inner blocks of a row-major tensor (x's reduced axes made
// contiguous, by a transpose when they are not): out[o, i] = acc(out[o, i], x[o, r, i]) for
// r in order, so each output folds its elements in x's order. The inner loops run along
// contiguous memory; output elements are split over the thread pool.
template <class T, class Acc>
void reduce_blocks(const Tensor& x, const std::vector<int>& axes, T* out, int64_t n_out, Acc acc) {
  const Shape& sh = x.shape();
  int64_t outer = 1, red = 1, inner = 1;
  int phase = 0;  // 0: kept dims before the reduced ones, 1: reduced, 2: kept after
  bool contiguous = true;
  for (int d = 0; d < x.rank(); ++d) {
    if (sh[d] == 1) continue;
    const bool r = std::binary_search(axes.begin(), axes.end(), d);
    if (r && phase == 2) contiguous = false;
    if (r) phase = 1;
    if (!r && phase == 1) phase = 2;
    (r ? red : phase == 0 ? outer : inner) *= sh[d];
  }
  const T* in = x.data<T>();
  Tensor moved;
  if (!contiguous) {  // kept axes first, then the reduced ones: [n_out, red]
    std::vector<int> perm;
    Shape ts;
    for (int d = 0; d < x.rank(); ++d)
      if (!std::binary_search(axes.begin(), axes.end(), d)) perm.push_back(d), ts.push_back(sh[d]);
    for (int a : axes) perm.push_back(a), ts.push_back(sh[a]);
    moved = Tensor::empty(x.dtype(), ts);
    transpose_into(x, perm, moved);
    in = moved.data<T>();
    outer = n_out, inner = 1;
  }
  if (n_out == 0 || red == 0 || x.num_elements() == 0) return;
  if (inner == 1) {  // rows: one accumulator per output, along its contiguous row
    parallel_for(n_out, static_cast<double>(red), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* pi = in + o * red;
        T a = out[o];
        for (int64_t r = 0; r < red; ++r) a = acc(a, pi[r]);
        out[o] = a;
      }
    });
    return;
  }
  parallel_for(n_out, static_cast<double>(red), [&](int64_t b, int64_t e) {
    while (b < e) {  // runs of outputs within one outer index
      const int64_t o = b / inner, i0 = b % inner, i1 = std::min(inner, i0 + (e - b));
      T* po = out + o * inner;
      for (int64_t r = 0; r < red; ++r) {
        const T* pi = in + (o * red + r) * inner;
        for (int64_t i = i0; i < i1; ++i) po[i] = acc(po[i], pi[i]);
      }
      b += i1 - i0;
    }
  });
}

// Any / All: out = OR / AND of the elements folding into it (empty: false / true).
void bool_reduce(OpCall& c, bool any) {
  std::vector<int> axes;
  reduce_axes(c, &axes);
  Tensor& y = c.alloc(0);
  bool* out = y.data<bool>();
  std::fill(out, out + y.num_elements(), !any);
  if (any)
    reduce_blocks<bool>(c.in[0], axes, out, y.num_elements(), [](bool a, bool v) { return a | v; });
  else
    reduce_blocks<bool>(c.in[0], axes, out, y.num_elements(), [](bool a, bool v) { return a & v; });
}

// Integer sums and products wrap around as TF's (two's complement, computed unsigned: no
// undefined signed overflow).
template <class T>
T wrapping(bool mul, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // at least unsigned int: narrower types would promote to (overflowing) int
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    const U x = static_cast<U>(a), y = static_cast<U>(b);
    return static_cast<T>(mul ? static_cast<U>(x * y) : static_cast<U>(x + y));
  } else {
    return mul ? a * b : a + b;
  }
}

// TF's CPU max/min (Eigen's cwiseMax/cwiseMin of the element and the accumulator): an
// element wins unless it compares below (above) the accumulator, so a NaN replaces the
// accumulator and a later number replaces the NaN.
enum class Fold { kSum, kProd, kMax, kMin };
template <class T>
T fold(Fold f, T acc, T v) {
  if (f == Fold::kSum || f == Fold::kProd) return wrapping(f == Fold::kProd, acc, v);
  if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>) {
    return acc;  // complex numbers have no order: their records claim no max/min
  } else {
    if (f == Fold::kMax) return v < acc ? acc : v;
    return acc < v ? acc : v;
  }
}

// EuclideanNorm: each element's square (a complex one times its conjugate) added (wrapping
// for integers) into its output element, then the root (integers: truncated, of the float64
// value), as TF's kernel. Half types sum in float32 and round once, as Sum does.
void euclidean_norm(OpCall& c) {
  std::vector<int> axes;
  reduce_axes(c, &axes);
  Tensor& y = c.alloc(0);
  JF_SWITCH_CLAIMED(op_types(OpId::EuclideanNorm), y.dtype(), H, {
    using T = std::conditional_t<kEigenHalf<H>, float, H>;
    Tensor x = c.in[0], yt = y;
    if constexpr (kEigenHalf<H>) {
      x = widen_to_float<H>(c.in[0]);
      yt = Tensor::empty(DType::kFloat32, y.shape());
    }
    T* out = yt.data<T>();
    std::fill(out, out + yt.num_elements(), T(0));
    reduce_blocks<T>(x, axes, out, yt.num_elements(), [](T a, T v) {
      if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>)
        return a + v * std::conj(v);
      else
        return wrapping(false, a, wrapping(true, v, v));
    });
    for (int64_t i = 0, n = yt.num_elements(); i < n; ++i) {
      if constexpr (std::is_integral_v<T>) {
        bool wrapped = false;  // a signed sum that wrapped negative: TF's x86 value
        if constexpr (std::is_signed_v<T>) wrapped = out[i] < 0;
        out[i] =
            wrapped ? std::numeric_limits<T>::min() : static_cast<T>(std::sqrt(static_cast<double>(out[i])));
      } else {
        out[i] = std::sqrt(out[i]);
      }
    }
    if constexpr (kEigenHalf<H>) round_from_float<H>(yt, y);
  });
}

// Segment{Sum,Mean,Max,Min,Prod}: runs of equal ids, increasing; an empty segment is 0 (1
// for Prod).
template <TypeSet kTypes>
void sorted_segment(OpCall& c, Fold f, bool mean) {
  const Tensor& data = c.in[0];
  const std::vector<int64_t> ids = c.in[1].to_int64s();
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n && ids.back() < 0) c.fail("segment ids must be >= 0");
  const int64_t rows = n ? ids.back() + 1 : 0;
  Shape shape = data.shape();
  shape[0] = rows;
  Tensor& out = make_output(c, 0, data.dtype(), shape);
  const int64_t inner = elements(data.shape(), 1, data.rank());
  JF_SWITCH_CLAIMED(kTypes, data.dtype(), T, {
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    std::fill(dst, dst + out.num_elements(), T(f == Fold::kProd ? 1 : 0));
    for (int64_t i = 0; i < n;) {
      const int64_t id = ids[i];
      if (id < 0 || id >= rows)
        c.fail("Segment id ", id, " out of range [0, ", rows,
               "), possibly because 'segment_ids' input is not sorted.");
      int64_t j = i + 1;
      while (j < n && ids[j] == id) ++j;
      if (j < n && ids[j] < id) c.fail("segment ids are not increasing");
      T* o = dst + id * inner;
      std::copy(src + i * inner, src + (i + 1) * inner, o);
      for (int64_t r = i + 1; r < j; ++r)
        for (int64_t k = 0; k < inner; ++k) o[k] = fold(f, o[k], src[r * inner + k]);
      if (mean)
        for (int64_t k = 0; k < inner; ++k) o[k] = static_cast<T>(o[k] / static_cast<T>(j - i));
      i = j;
    }
  });
}

// UnsortedSegment{Max,Min,Prod}: every id in [0, num_segments) folds its row into that
// segment; negative ids are dropped (TF's CPU kernels); an empty segment keeps the dtype's
// lowest (highest) finite value, or 1.
template <TypeSet kTypes>
void unsorted_segment(OpCall& c, Fold f) {
  const Tensor& data = c.in[0];
  Tensor& out = c.alloc(0);
  const int64_t n = out.shape()[0];
  const std::vector<int64_t> ids = c.in[1].to_int64s();
  for (size_t r = 0; r < ids.size(); ++r)
    if (ids[r] >= n) c.fail("segment_ids[", r, "] = ", ids[r], " is out of range [0, ", n, ")");
  const int64_t inner = elements(data.shape(), c.in[1].rank(), data.rank());
  JF_SWITCH_CLAIMED(kTypes, data.dtype(), T, {
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    T init = T(1);
    if constexpr (!std::is_same_v<T, complex64> && !std::is_same_v<T, complex128>)
      if (f != Fold::kProd)
        init = f == Fold::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    std::fill(dst, dst + out.num_elements(), init);
    for (size_t r = 0; r < ids.size(); ++r) {
      if (ids[r] < 0) continue;
      T* o = dst + ids[r] * inner;
      for (int64_t k = 0; k < inner; ++k) o[k] = fold(f, o[k], src[r * inner + k]);
    }
  });
}

}  // namespace

void k_Any(OpCall& c) { bool_reduce(c, true); }
void k_All(OpCall& c) { bool_reduce(c, false); }
void k_EuclideanNorm(OpCall& c) { euclidean_norm(c); }
void k_SegmentSum(OpCall& c) { sorted_segment<op_types(OpId::SegmentSum)>(c, Fold::kSum, false); }
void k_SegmentMean(OpCall& c) { sorted_segment<op_types(OpId::SegmentMean)>(c, Fold::kSum, true); }
void k_SegmentMax(OpCall& c) { sorted_segment<op_types(OpId::SegmentMax)>(c, Fold::kMax, false); }
void k_SegmentMin(OpCall& c) { sorted_segment<op_types(OpId::SegmentMin)>(c, Fold::kMin, false); }
void k_UnsortedSegmentMax(OpCall& c) { unsorted_segment<op_types(OpId::UnsortedSegmentMax)>(c, Fold::kMax); }
void k_UnsortedSegmentMin(OpCall& c) { unsorted_segment<op_types(OpId::UnsortedSegmentMin)>(c, Fold::kMin); }
void k_SegmentProd(OpCall& c) { sorted_segment<op_types(OpId::SegmentProd)>(c, Fold::kProd, false); }
void k_UnsortedSegmentProd(OpCall& c) {
  unsorted_segment<op_types(OpId::UnsortedSegmentProd)>(c, Fold::kProd);
}

}  // namespace jf
