// Eager data-movement kernels. Reshape-like ops alias their input's buffer; transpose and
// slices share one strided gather; concat/split are block copies.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/broadcast.h"
#include "ir/shape_fns.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

namespace jf {
namespace {

// A batch of matrix transposes: the output's last dim strides through the input and its
// second-last dim is the input's contiguous one. Copied in square tiles, so the source lines a
// tile reads are reused by its next rows while still in cache (element by element, every read
// of a large transpose took a new cache line: 17 ms for 4096x1024 floats).
template <class E>
bool gather_transposed_tiles(const E* src, int rank, const int64_t* dims, const int64_t* strides, E* dst) {
  if (rank < 2 || strides[rank - 2] != 1 || strides[rank - 1] == 1) return false;
  constexpr int64_t kTile = 32;
  const int64_t n1 = dims[rank - 2], n2 = dims[rank - 1], s2 = strides[rank - 1];
  int64_t batches = 1;
  for (int d = 0; d < rank - 2; ++d) batches *= dims[d];
  const int64_t tiles = (n1 + kTile - 1) / kTile;
  parallel_for(batches * tiles, static_cast<double>(kTile * n2), [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      const int64_t batch = w / tiles, i0 = (w % tiles) * kTile, i1 = std::min(n1, i0 + kTile);
      int64_t off = 0, rem = batch;
      for (int d = rank - 3; d >= 0; --d) {
        off += (rem % dims[d]) * strides[d];
        rem /= dims[d];
      }
      const E* s = src + off;
      E* o = dst + batch * n1 * n2;
      for (int64_t j0 = 0; j0 < n2; j0 += kTile) {
        const int64_t j1 = std::min(n2, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) o[i * n2 + j] = s[i + j * s2];
      }
    }
  });
  return true;
}

// out (dense, row-major over dims) [i...] = base[sum i_d * strides[d]] for elements of size E.
template <class E>
void gather_typed(const char* base, int rank, const int64_t* dims, const int64_t* strides, char* out) {
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= dims[d];
  if (total == 0) return;
  const E* src = reinterpret_cast<const E*>(base);
  E* dst = reinterpret_cast<E*>(out);
  if (gather_transposed_tiles(src, rank, dims, strides, dst)) return;
  int64_t inner = rank ? dims[rank - 1] : 1, is = rank ? strides[rank - 1] : 0;
  int64_t rows = total / inner;
  parallel_for(rows, static_cast<double>(inner), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t off = 0, rem = r;
      for (int d = rank - 2; d >= 0; --d) {
        off += (rem % dims[d]) * strides[d];
        rem /= dims[d];
      }
      E* o = dst + r * inner;
      const E* s = src + off;
      if (is == 1)
        std::copy_n(s, inner, o);  // a memmove for numbers, assignments for strings
      else
        for (int64_t i = 0; i < inner; ++i) o[i] = s[i * is];
    }
  });
}

}  // namespace

Tensor& make_output(OpCall& c, size_t i, DType dt, const Shape& s) {
  if (c.results.size() < c.num_outputs()) c.results.resize(c.num_outputs());
  c.check_num_elements(s);
  try {
    c.results[i] = Tensor::empty(dt, s);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kResourceExhausted) throw;
    throw_resource_exhausted(c.name(), ": ", e.what(), " (inputs: ", c.input_desc(), ")");
  }
  return c.results[i];
}

void strided_copy(const char* base, size_t esize, int rank, const int64_t* dims, const int64_t* strides,
                  char* out) {
  struct Bytes16 {  // a complex128 element, moved as it is
    uint64_t lo, hi;
  };
  switch (esize) {
    case 1:
      gather_typed<uint8_t>(base, rank, dims, strides, out);
      break;
    case 2:
      gather_typed<uint16_t>(base, rank, dims, strides, out);
      break;
    case 16:
      gather_typed<Bytes16>(base, rank, dims, strides, out);
      break;
    case 4:
      gather_typed<uint32_t>(base, rank, dims, strides, out);
      break;
    case 8:
      gather_typed<uint64_t>(base, rank, dims, strides, out);
      break;
    default:
      JF_CHECK(false, "element size ", esize);
  }
}

void strided_copy(DType dt, const char* base, int rank, const int64_t* dims, const int64_t* strides,
                  char* out) {
  if (dt == DType::kString)
    gather_typed<std::string>(base, rank, dims, strides, out);
  else
    strided_copy(base, dtype_size(dt), rank, dims, strides, out);
}

namespace {

// Copies contiguous blocks: for each of `outer` rows, `parts` chunks of chunk_bytes[k] each.
void concat_blocks(bool strings, int64_t outer, const std::vector<const char*>& src,
                   const std::vector<int64_t>& chunk, char* dst) {
  int64_t row = 0;
  for (int64_t c : chunk) row += c;
  parallel_for(outer, static_cast<double>(row) / 8, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* d = dst + o * row;
      for (size_t k = 0; k < src.size(); ++k) {
        copy_elements(strings, d, src[k] + o * chunk[k], chunk[k]);
        d += chunk[k];
      }
    }
  });
}

void split_blocks(bool strings, const char* src, int64_t outer, const std::vector<char*>& dst,
                  const std::vector<int64_t>& chunk) {
  int64_t row = 0;
  for (int64_t c : chunk) row += c;
  parallel_for(outer, static_cast<double>(row) / 8, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const char* s = src + o * row;
      for (size_t k = 0; k < dst.size(); ++k) {
        copy_elements(strings, dst[k] + o * chunk[k], s, chunk[k]);
        s += chunk[k];
      }
    }
  });
}

void concat_along(OpCall& c, size_t n, int axis) {
  Tensor& y = c.alloc(0);
  size_t es = dtype_size(y.dtype());
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= y.shape()[i];
  std::vector<const char*> src;
  std::vector<int64_t> chunk;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& t = c.in[k];
    int64_t inner = 1;
    for (int i = axis; i < t.rank(); ++i) inner *= t.shape()[i];
    src.push_back(static_cast<const char*>(t.raw()));
    chunk.push_back(inner * es);
  }
  if (y.num_elements()) concat_blocks(is_string(y), outer, src, chunk, static_cast<char*>(y.raw()));
}

void split_along(OpCall& c, const Tensor& x, int axis) {
  size_t es = dtype_size(x.dtype());
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape()[i];
  std::vector<char*> dst;
  std::vector<int64_t> chunk;
  for (size_t k = 0; k < c.num_outputs(); ++k) {
    Tensor& t = c.alloc(k);
    int64_t inner = 1;
    for (int i = axis; i < t.rank(); ++i) inner *= t.shape()[i];
    dst.push_back(static_cast<char*>(t.raw()));
    chunk.push_back(inner * es);
  }
  if (x.num_elements()) split_blocks(is_string(x), static_cast<const char*>(x.raw()), outer, dst, chunk);
}

}  // namespace

void transpose_into(const Tensor& in, const std::vector<int>& perm, Tensor& out) {
  int64_t st[kMaxRank], pst[kMaxRank], dims[kMaxRank];
  row_major_strides(in.shape(), st);
  for (size_t i = 0; i < perm.size(); ++i) pst[i] = st[perm[i]], dims[i] = in.shape()[perm[i]];
  strided_copy(in.dtype(), static_cast<const char*>(in.raw()), in.rank(), dims, pst,
               static_cast<char*>(out.raw()));
}

void k_Reshape(OpCall& c) { c.results[0] = c.in[0].reshaped(c.spec(0).shape); }
void k_Squeeze(OpCall& c) { c.results[0] = c.in[0].reshaped(c.spec(0).shape); }
void k_ExpandDims(OpCall& c) { c.results[0] = c.in[0].reshaped(c.spec(0).shape); }

void k_Transpose(OpCall& c) {
  std::vector<int> perm;
  for (int64_t p : c.in[1].to_int64s()) perm.push_back(static_cast<int>(p < 0 ? p + c.in[0].rank() : p));
  // A permutation that keeps the dims of size > 1 in order (it moves only size-1 dims) leaves
  // the elements where they are: the input's buffer under the new shape, as Reshape gives.
  // Tensors are immutable, so sharing is safe; kernels that write in place check first that
  // no one else holds the buffer.
  const Tensor& x = c.in[0];
  int last = -1;
  bool in_order = x.on_host();
  for (int p : perm) {
    if (p < 0 || p >= x.rank()) in_order = false;
    if (!in_order) break;
    if (x.shape()[p] == 1) continue;
    in_order = p > last;
    last = p;
  }
  if (in_order && static_cast<int>(perm.size()) == x.rank()) {
    if (c.results.size() < c.num_outputs()) c.results.resize(c.num_outputs());
    c.results[0] = x.reshaped(c.spec(0).shape);
    return;
  }
  transpose_into(x, perm, c.alloc(0));
}

void k_ConcatV2(OpCall& c) {
  size_t n = c.in.size() - 1;
  concat_along(c, n, normalize_axis(c.in[n].get_int(0), c.in[0].rank(), c.name()));
}
void k_Pack(OpCall& c) {
  concat_along(c, c.in.size(), normalize_axis(c.attrs.get<int64_t>("axis", 0), c.in[0].rank() + 1, c.name()));
}
void k_Split(OpCall& c) {
  split_along(c, c.in[1], normalize_axis(c.in[0].get_int(0), c.in[1].rank(), c.name()));
}
void k_SplitV(OpCall& c) {
  split_along(c, c.in[0], normalize_axis(c.in[2].get_int(0), c.in[0].rank(), c.name()));
}

template <class T>
static void broadcast_typed(const Tensor& x, Tensor& y) {
  BroadcastPlan p = make_broadcast(y.shape(), {x.shape()});
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  for_each_segment(p, 1.0, [&](int64_t o, const int64_t* off, int64_t n, const int64_t* is) {
    if (is[0])
      std::copy_n(src + off[0], n, dst + o);
    else
      std::fill(dst + o, dst + o + n, src[off[0]]);
  });
}
void k_BroadcastTo(OpCall& c) {
  Tensor& y = c.alloc(0);
  if (is_string(y)) return broadcast_typed<std::string>(c.in[0], y);
  JF_SWITCH_EVERY_DTYPE(y.dtype(), T, broadcast_typed<T>(c.in[0], y));
}

void strided_slice_into(const Tensor& x, const SlicePlan& p, const Shape& out, OpCall* c, Tensor* result) {
  int64_t st[kMaxRank], dims[kMaxRank], steps[kMaxRank], base = 0, n = 1;
  row_major_strides(x.shape(), st);
  for (int d = 0; d < x.rank(); ++d) {
    base += p.dims[d].start * st[d];
    dims[d] = p.dims[d].len;
    steps[d] = p.dims[d].stride * st[d];
    n *= dims[d];
  }
  size_t es = dtype_size(x.dtype());
  // A region that is one contiguous run of x (each dim's step the extent of the dims after
  // it: unit steps, and past the first dim taken partly every dim whole) is a view of x's
  // buffer, as Reshape's result is: no copy. Tensors are immutable; kernels that write in
  // place first check that no one else holds the buffer.
  bool contiguous = x.on_host() && n > 0;
  for (int64_t d = x.rank() - 1, inner = 1; contiguous && d >= 0; --d) {
    if (dims[d] == 1) continue;
    contiguous = steps[d] == inner;
    inner *= dims[d];
  }
  if (contiguous) {
    const size_t offset =
        static_cast<size_t>(static_cast<char*>(x.raw()) - static_cast<char*>(x.buffer()->data));
    *result = Tensor(x.dtype(), out, x.buffer(), offset + static_cast<size_t>(base) * es);
    return;
  }
  if (c)
    c->alloc(0);
  else
    *result = Tensor::empty(x.dtype(), out);
  Tensor& y = *result;
  if (y.num_elements())
    strided_copy(x.dtype(), static_cast<const char*>(x.raw()) + base * es, x.rank(), dims, steps,
                 static_cast<char*>(y.raw()));
}

void k_StridedSlice(OpCall& c) {
  const Tensor& x = c.in[0];
  SlicePlan p =
      strided_slice_plan(c, x.shape(), c.in[1].to_int64s(), c.in[2].to_int64s(), c.in[3].to_int64s());
  if (c.results.size() < c.num_outputs()) c.results.resize(c.num_outputs());
  strided_slice_into(x, p, c.spec(0).shape, &c, &c.results[0]);
}

void k_Shape(OpCall& c) {
  Tensor& y = c.alloc(0);
  for (int i = 0; i < c.in[0].rank(); ++i) {
    if (y.dtype() == DType::kInt32)
      y.data<int32_t>()[i] = static_cast<int32_t>(c.in[0].shape()[i]);
    else
      y.data<int64_t>()[i] = c.in[0].shape()[i];
  }
}

template <class T>
static void fill_value(Tensor& y, T v) {
  T* d = y.data<T>();
  parallel_for(y.num_elements(), 0.5, [&](int64_t b, int64_t e) { std::fill(d + b, d + e, v); });
}

void k_Fill(OpCall& c) {
  Tensor& y = c.alloc(0);
  if (is_string(y)) return fill_value<std::string>(y, *c.in[1].data<std::string>());
  JF_SWITCH_EVERY_DTYPE(y.dtype(), T, fill_value<T>(y, *c.in[1].data<T>()));
}
void k_ZerosLike(OpCall& c) {
  Tensor& y = c.alloc(0);
  if (is_string(y)) return;  // a fresh string tensor holds empty strings: TF's zeros
  JF_SWITCH_EVERY_DTYPE(y.dtype(), T, fill_value<T>(y, T(0)));
}
void k_OnesLike(OpCall& c) {
  Tensor& y = c.alloc(0);
  JF_SWITCH_EVERY_DTYPE(y.dtype(), T, fill_value<T>(y, T(1)));
}

void k_Range(OpCall& c) {
  Tensor& y = c.alloc(0);
  JF_SWITCH_CLAIMED(op_types(OpId::Range), y.dtype(), T, {
    T s = *c.in[0].data<T>(), d = *c.in[2].data<T>();
    T* o = y.data<T>();
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      if constexpr (std::is_integral_v<T>)  // start + i * delta fits T; i * delta alone may not
        o[i] = static_cast<T>(static_cast<uint64_t>(s) + static_cast<uint64_t>(i) * static_cast<uint64_t>(d));
      else
        o[i] = static_cast<T>(s + static_cast<T>(i) * d);
    }
  });
}

}  // namespace jf
