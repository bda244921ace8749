// Eager kernels of GatherNd, the nd scatters and Slice. An index row (the last dim of
// `indices`) addresses a slice of the indexed tensor: its leading C dims pick the slice,
// the rest is copied whole. Scatters apply their rows in order, one thread, so duplicates
// combine deterministically (ScatterNd and TensorScatterAdd add them, Update keeps the last).
#include <algorithm>
#include <cstring>

#include "core/broadcast.h"
#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

namespace jf {
namespace {

// Where each index row of `ix` points into `into`, in slices of prod(into[C:]) elements,
// each component checked against its dim with TF's message.
struct NdRows {
  int64_t rows = 0, slice = 1;
  std::vector<int64_t> at;  // per row: the slice number
};

NdRows nd_rows(const OpCall& c, const Tensor& ix, const Shape& into, const char* into_what) {
  NdRows r;
  const int64_t depth = ix.shape()[ix.rank() - 1];
  r.rows = 1;
  for (int d = 0; d + 1 < ix.rank(); ++d) r.rows *= ix.shape()[d];
  for (int d = static_cast<int>(depth); d < into.rank(); ++d) r.slice *= into[d];
  const std::vector<int64_t> v = ix.to_int64s();
  r.at.assign(r.rows, 0);
  for (int64_t i = 0; i < r.rows; ++i) {
    int64_t at = 0;
    bool ok = true;
    for (int64_t k = 0; k < depth; ++k) {
      const int64_t j = v[i * depth + k];
      ok = ok && j >= 0 && j < into[static_cast<int>(k)];
      at = at * into[static_cast<int>(k)] + j;
    }
    if (!ok) {
      std::string s = "[";
      for (int64_t k = 0; k < depth; ++k) s += (k ? ", " : "") + std::to_string(v[i * depth + k]);
      c.fail("indices[", i, "] = ", s, "] does not index into ", into_what, " ", into.str());
    }
    r.at[i] = at;
  }
  return r;
}

enum class Combine { kAssign, kAdd, kSub, kMax, kMin };

// The combinations each element type has (the records claim no others for an op).
template <class T>
constexpr bool kArithmetic = !std::is_same_v<T, bool> && !std::is_same_v<T, std::string>;
template <class T>
constexpr bool kOrdered = kArithmetic<T> && !std::is_same_v<T, complex64> && !std::is_same_v<T, complex128>;

// out (holding its initial values) combined with each update row, in order.
template <class T>
void scatter_rows(const NdRows& r, const T* up, T* out, Combine how) {
  for (int64_t i = 0; i < r.rows; ++i) {
    T* o = out + r.at[i] * r.slice;
    const T* u = up + i * r.slice;
    for (int64_t k = 0; k < r.slice; ++k) {
      switch (how) {
        case Combine::kAssign:
          o[k] = u[k];
          break;
        case Combine::kAdd:
          if constexpr (std::is_same_v<T, bool>)
            o[k] = o[k] || u[k];  // TF's bool ScatterNd: true + true is true
          else
            o[k] = o[k] + u[k];  // strings: TF's ScatterNd concatenates duplicates
          break;
        case Combine::kSub:
          if constexpr (kArithmetic<T>) o[k] = o[k] - u[k];
          break;
        case Combine::kMax:  // Eigen's cwiseMax, as TF: a NaN update never wins, a NaN kept stays
          if constexpr (kOrdered<T>) o[k] = o[k] < u[k] ? u[k] : o[k];
          break;
        case Combine::kMin:
          if constexpr (kOrdered<T>) o[k] = u[k] < o[k] ? u[k] : o[k];
          break;
      }
    }
  }
}

template <TypeSet kTypes>
void scatter(OpCall& c, const Tensor& ix, const Tensor& up, Tensor& out, Combine how) {
  NdRows r = nd_rows(c, ix, out.shape(), "shape");
  if (r.rows > 0 && out.num_elements() == 0) c.fail("Indices and updates specified for empty output shape");
  if (is_string(out)) {
    if constexpr ((kTypes & kStringTypes) != 0)
      scatter_rows<std::string>(r, up.data<std::string>(), out.data<std::string>(), how);
    return;
  }
  JF_SWITCH_CLAIMED(kTypes, out.dtype(), T, scatter_rows<T>(r, up.data<T>(), out.data<T>(), how));
}

template <OpId kOp>
void tensor_scatter(OpCall& c, Combine how) {
  const Tensor& t = c.in[0];
  Tensor& out = c.alloc(0);
  copy_elements(is_string(out), out.raw(), t.raw(), out.num_elements() * dtype_size(out.dtype()));
  scatter<op_types(kOp)>(c, c.in[1], c.in[2], out, how);
}

}  // namespace

void k_GatherNd(OpCall& c) {
  const Tensor& p = c.in[0];
  const Tensor& ix = c.in[1];
  Tensor& out = c.alloc(0);
  NdRows r = nd_rows(c, ix, p.shape(), "param shape");
  if (r.rows > 0 && p.num_elements() == 0)
    c.fail("Requested more than 0 entries, but params is empty.  Params shape: ", p.shape().str());
  const size_t row = r.slice * dtype_size(p.dtype());
  const char* src = static_cast<const char*>(p.raw());
  char* dst = static_cast<char*>(out.raw());
  const bool strings = is_string(p);
  if (row == 0) return;
  parallel_for(r.rows, static_cast<double>(r.slice), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) copy_elements(strings, dst + i * row, src + r.at[i] * row, row);
  });
}

void k_ScatterNd(OpCall& c) {
  Tensor& out = c.alloc(0);
  // zero bytes are zero for every numeric dtype; a fresh string tensor holds empty strings
  if (out.num_elements() && !is_string(out))
    std::memset(out.raw(), 0, out.num_elements() * dtype_size(out.dtype()));
  scatter<op_types(OpId::ScatterNd)>(c, c.in[0], c.in[1], out, Combine::kAdd);
}

void k_TensorScatterUpdate(OpCall& c) { tensor_scatter<OpId::TensorScatterUpdate>(c, Combine::kAssign); }
void k_TensorScatterAdd(OpCall& c) { tensor_scatter<OpId::TensorScatterAdd>(c, Combine::kAdd); }
void k_TensorScatterSub(OpCall& c) { tensor_scatter<OpId::TensorScatterSub>(c, Combine::kSub); }
void k_TensorScatterMax(OpCall& c) { tensor_scatter<OpId::TensorScatterMax>(c, Combine::kMax); }
void k_TensorScatterMin(OpCall& c) { tensor_scatter<OpId::TensorScatterMin>(c, Combine::kMin); }

// Slice: the strided copy of StridedSlice with unit strides.
void k_Slice(OpCall& c) {
  const Tensor& x = c.in[0];
  Tensor& y = c.alloc(0);
  if (!y.num_elements()) return;
  const std::vector<int64_t> begin = c.in[1].to_int64s();
  int64_t st[kMaxRank], dims[kMaxRank], base = 0;
  row_major_strides(x.shape(), st);
  for (int d = 0; d < x.rank(); ++d) {
    base += begin[d] * st[d];
    dims[d] = y.shape()[d];
  }
  const size_t es = dtype_size(x.dtype());
  strided_copy(x.dtype(), static_cast<const char*>(x.raw()) + base * es, x.rank(), dims, st,
               static_cast<char*>(y.raw()));
}

}  // namespace jf
