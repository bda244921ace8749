// Broadcast iteration: collapses an n-ary numpy broadcast into as few dims as possible and
// walks it as contiguous inner segments, so Eigen's vectorized array ops do the work. In core/
// because the eager kernels and the GPU runtime's batched cuBLAS calls both use it.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "core/shape.h"
#include "support/thread_pool.h"

namespace jf {

constexpr int kMaxOperands = 4;

struct BroadcastPlan {
  int rank = 0;  // collapsed rank (>= 1)
  int64_t dims[kMaxRank];
  int64_t strides[kMaxOperands][kMaxRank];  // elements; 0 where broadcast
  int nops = 0;
  int64_t inner() const { return dims[rank - 1]; }
  int64_t total() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  // The element offsets of operands 0 and 1 for output element i (row-major over dims):
  // batched matmuls find each batch's matrices this way.
  std::pair<int64_t, int64_t> offsets2(int64_t i) const {
    int64_t x0 = 0, x1 = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t idx = i % dims[d];
      i /= dims[d];
      x0 += idx * strides[0][d];
      x1 += idx * strides[1][d];
    }
    return {x0, x1};
  }
};

inline BroadcastPlan make_broadcast(const Shape& out, std::initializer_list<Shape> ins) {
  BroadcastPlan p;
  p.nops = static_cast<int>(ins.size());
  int r = out.rank();
  int64_t st[kMaxOperands][kMaxRank];
  int k = 0;
  for (const Shape& s : ins) {
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; --i) {
      int j = i - (r - s.rank());
      int64_t d = j >= 0 ? s[j] : 1;
      st[k][i] = (d == 1) ? 0 : acc;
      acc *= d;
    }
    ++k;
  }
  // Drop size-1 output dims, then merge neighbours that stay contiguous for every operand.
  for (int i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    bool merge = p.rank > 0;
    for (int o = 0; merge && o < p.nops; ++o) merge = p.strides[o][p.rank - 1] == st[o][i] * out[i];
    if (merge) {
      p.dims[p.rank - 1] *= out[i];
      for (int o = 0; o < p.nops; ++o) p.strides[o][p.rank - 1] = st[o][i];
    } else {
      p.dims[p.rank] = out[i];
      for (int o = 0; o < p.nops; ++o) p.strides[o][p.rank] = st[o][i];
      ++p.rank;
    }
  }
  if (p.rank == 0) {
    p.rank = 1;
    p.dims[0] = 1;
    for (int o = 0; o < p.nops; ++o) p.strides[o][0] = 0;
  }
  return p;
}

// Calls seg(out_offset, offsets[], len, inner_strides[]) for each contiguous inner run,
// spread over the thread pool. `cost` is cycles per element.
template <class Seg>
void for_each_segment(const BroadcastPlan& p, double cost, Seg seg) {
  int64_t inner = p.inner(), rows = p.total() / (inner ? inner : 1);
  if (p.total() == 0) return;
  int64_t is[kMaxOperands];
  for (int o = 0; o < p.nops; ++o) is[o] = p.strides[o][p.rank - 1];
  if (rows == 1) {
    parallel_for(inner, cost, [&](int64_t b, int64_t e) {
      int64_t off[kMaxOperands];
      for (int o = 0; o < p.nops; ++o) off[o] = b * is[o];
      seg(b, off, e - b, is);
    });
    return;
  }
  parallel_for(rows, cost * inner, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      int64_t off[kMaxOperands] = {0, 0, 0, 0}, rem = r;
      for (int d = p.rank - 2; d >= 0; --d) {
        int64_t idx = rem % p.dims[d];
        rem /= p.dims[d];
        for (int o = 0; o < p.nops; ++o) off[o] += idx * p.strides[o][d];
      }
      seg(r * inner, off, inner, is);
    }
  });
}

}  // namespace jf
