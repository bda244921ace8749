// Eager kernels of the index-map ops: each output element copies one input element chosen
// by its index (gathers read the choice from an index tensor, the per-dim maps compute it),
// so they move bytes of the element size whatever the dtype (strings: their objects are
// assigned). UnsortedSegmentSum adds.
#include <cstring>

#include "core/broadcast.h"
#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"

namespace jf {
namespace {

std::vector<int64_t> dims_of(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

int64_t prod(const Shape& s, int from, int to) {
  int64_t n = 1;
  for (int d = from; d < to; ++d) n *= s[d];
  return n;
}

// The indices as int64, each checked against [0, n) with TF's message.
std::vector<int64_t> checked_indices(const OpCall& c, const Tensor& ix, int64_t n, const char* what) {
  std::vector<int64_t> v = ix.to_int64s();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < 0 || v[i] >= n) c.fail(what, "[", i, "] = ", v[i], " is not in [0, ", n, ")");
  return v;
}

// How one output dim reads its input dim (the per-dim maps; Pad's out-of-range reads are
// the constant).
struct DimMap {
  enum Kind { kSame, kReverse, kTile, kPad, kReflect, kSymmetric, kRoll } kind = kSame;
  int64_t n = 0;      // input dim size
  int64_t param = 0;  // pad before, roll shift (in [0, n))
};

// The input index of output index i along one dim; -1 for a pad.
inline int64_t map_index(const DimMap& m, int64_t i) {
  switch (m.kind) {
    case DimMap::kSame:
      return i;
    case DimMap::kReverse:
      return m.n - 1 - i;
    case DimMap::kTile:
      return i % m.n;
    case DimMap::kPad: {
      int64_t j = i - m.param;
      return j >= 0 && j < m.n ? j : -1;
    }
    case DimMap::kReflect: {
      int64_t j = i - m.param;
      if (j < 0) j = -j;
      if (j >= m.n) j = 2 * m.n - 2 - j;
      return j;
    }
    case DimMap::kSymmetric: {
      int64_t j = i - m.param;
      if (j < 0) j = -j - 1;
      if (j >= m.n) j = 2 * m.n - 1 - j;
      return j;
    }
    case DimMap::kRoll: {
      int64_t j = i - m.param;
      return j < 0 ? j + m.n : j;
    }
  }
  return i;
}

// out[i...] = in[map_d(i_d)...], or *fill where a dim maps outside (Pad).
void apply_maps(const Tensor& in, const std::vector<DimMap>& maps, const void* fill, Tensor& out) {
  const int r = out.rank();
  const size_t es = dtype_size(out.dtype());
  const int64_t total = out.num_elements();
  if (total == 0) return;
  const Shape& os = out.shape();
  const Shape& is = in.shape();
  std::vector<int64_t> in_stride(r, 1);
  for (int d = r - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * is[d + 1];
  const char* src = static_cast<const char*>(in.raw());
  char* dst = static_cast<char*>(out.raw());
  const bool strings = is_string(out);
  const int64_t inner = r ? os[r - 1] : 1;
  parallel_for(total / inner, static_cast<double>(inner), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t off = 0, rem = row;
      bool padded = false;
      for (int d = r - 2; d >= 0; --d) {
        int64_t j = map_index(maps[d], rem % os[d]);
        rem /= os[d];
        if (j < 0) padded = true;
        off += j * in_stride[d];
      }
      char* o = dst + row * inner * es;
      for (int64_t i = 0; i < inner; ++i) {
        int64_t j = r ? map_index(maps[r - 1], i) : 0;
        const void* from = padded || j < 0 ? fill : src + (off + j) * es;
        copy_elements(strings, o + i * es, from, es);
      }
    }
  });
}

std::vector<int> axes_of(const OpCall& c, const Tensor& t, int rank) {
  std::vector<int> a;
  for (int64_t v : t.to_int64s()) a.push_back(static_cast<int>(v < 0 ? v + rank : v));
  return a;
}

}  // namespace

void k_GatherV2(OpCall& c) {
  const Tensor& p = c.in[0];
  const Tensor& ix = c.in[1];
  Tensor& out = c.alloc(0);
  int rank = p.rank();
  int axis = static_cast<int>(c.in[2].get_int(0));
  if (axis < 0) axis += rank;
  int bd = static_cast<int>(c.attrs.get<int64_t>("batch_dims", 0));
  if (bd < 0) bd += ix.rank();
  const int64_t n = p.shape()[axis];
  std::vector<int64_t> idx = checked_indices(c, ix, n, "indices");
  const int64_t batch = prod(p.shape(), 0, bd), outer = prod(p.shape(), bd, axis);
  const int64_t inner = prod(p.shape(), axis + 1, rank), per_batch = prod(ix.shape(), bd, ix.rank());
  const size_t row = inner * dtype_size(p.dtype());
  const char* src = static_cast<const char*>(p.raw());
  char* dst = static_cast<char*>(out.raw());
  const bool strings = is_string(p);
  // Output rows [b, o, j]: params rows [b, o, idx[b, j]].
  parallel_for(batch * outer * per_batch, static_cast<double>(inner), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      int64_t j = r % per_batch, o = (r / per_batch) % outer, b = r / (per_batch * outer);
      int64_t k = idx[b * per_batch + j];
      copy_elements(strings, dst + r * row, src + ((b * outer + o) * n + k) * row, row);
    }
  });
}

void k_OneHot(OpCall& c) {
  const Tensor& ix = c.in[0];
  Tensor& out = c.alloc(0);
  const int64_t depth = c.in[1].get_int(0);
  int64_t axis = c.attrs.get<int64_t>("axis", -1);
  if (axis == -1) axis = ix.rank();
  const std::vector<int64_t> idx = ix.to_int64s();
  const int64_t outer = prod(ix.shape(), 0, static_cast<int>(axis)),
                inner = prod(ix.shape(), static_cast<int>(axis), ix.rank());
  const size_t es = dtype_size(out.dtype());
  const char* on = static_cast<const char*>(c.in[2].raw());
  const char* off = static_cast<const char*>(c.in[3].raw());
  char* dst = static_cast<char*>(out.raw());
  // Out of range indices give a row of off_value (TF's rule), not an error.
  parallel_for(outer * depth, static_cast<double>(inner), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      int64_t d = r % depth, o = r / depth;
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(dst + (r * inner + i) * es, idx[o * inner + i] == d ? on : off, es);
    }
  });
}

void k_ReverseV2(OpCall& c) {
  const Tensor& x = c.in[0];
  std::vector<DimMap> maps(x.rank());
  for (int d = 0; d < x.rank(); ++d) maps[d].n = x.shape()[d];
  for (int a : axes_of(c, c.in[1], x.rank())) maps[a].kind = DimMap::kReverse;
  apply_maps(x, maps, nullptr, c.alloc(0));
}

void k_Tile(OpCall& c) {
  const Tensor& x = c.in[0];
  std::vector<DimMap> maps(x.rank());
  for (int d = 0; d < x.rank(); ++d) maps[d] = {DimMap::kTile, x.shape()[d], 0};
  apply_maps(x, maps, nullptr, c.alloc(0));
}

static void pad(OpCall& c, DimMap::Kind kind, const void* fill) {
  const Tensor& x = c.in[0];
  std::vector<int64_t> p = c.in[1].to_int64s();
  std::vector<DimMap> maps(x.rank());
  for (int d = 0; d < x.rank(); ++d) maps[d] = {kind, x.shape()[d], p[2 * d]};
  apply_maps(x, maps, fill, c.alloc(0));
}
void k_PadV2(OpCall& c) { pad(c, DimMap::kPad, c.in[2].raw()); }
void k_MirrorPad(OpCall& c) {
  bool sym = c.attrs.get<std::string>("mode", "REFLECT") == "SYMMETRIC";
  pad(c, sym ? DimMap::kSymmetric : DimMap::kReflect, nullptr);
}

void k_Roll(OpCall& c) {
  const Tensor& x = c.in[0];
  std::vector<DimMap> maps(x.rank());
  for (int d = 0; d < x.rank(); ++d) maps[d] = {DimMap::kRoll, x.shape()[d], 0};
  std::vector<int64_t> shift = c.in[1].to_int64s();
  std::vector<int> axes = axes_of(c, c.in[2], x.rank());
  for (size_t k = 0; k < axes.size(); ++k) maps[axes[k]].param += shift[k];  // shifts of one axis add up
  for (DimMap& m : maps) m.param = m.n ? ((m.param % m.n) + m.n) % m.n : 0;
  apply_maps(x, maps, nullptr, c.alloc(0));
}

void k_UnsortedSegmentSum(OpCall& c) {
  const Tensor& data = c.in[0];
  Tensor& out = c.alloc(0);
  const int64_t n = out.shape()[0];
  const int64_t inner = prod(data.shape(), c.in[1].rank(), data.rank());
  // TF's CPU kernel: ids >= num_segments are an error, negative ids are dropped.
  std::vector<int64_t> ids = c.in[1].to_int64s();
  for (size_t r = 0; r < ids.size(); ++r)
    if (ids[r] >= n) c.fail("segment_ids[", r, "] = ", ids[r], " is out of range [0, ", n, ")");
  JF_SWITCH_CLAIMED(op_types(OpId::UnsortedSegmentSum), data.dtype(), T, {
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    std::fill(dst, dst + out.num_elements(), T(0));
    // Rows in order: each output row sums its segment's rows deterministically.
    for (size_t r = 0; r < ids.size(); ++r)
      if (ids[r] >= 0)
        for (int64_t i = 0; i < inner; ++i) dst[ids[r] * inner + i] += src[r * inner + i];
  });
}

}  // namespace jf
