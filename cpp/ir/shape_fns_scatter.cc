// Shape inference for GatherNd, the nd scatters (ScatterNd, TensorScatterUpdate/Add/Sub/Max/
// Min) and Slice. An index vector runs along the last dim of `indices`: its length C (known
// when tracing) says how many leading dims of the indexed tensor it addresses. TF's op
// definitions and error texts are the reference.
#include "ir/shape_fns.h"

namespace jf {

namespace {

void need_int(const OpCall& c, size_t i, const char* what) {
  if (!is_int(c.in[i].dtype()))
    c.fail_type(what, " must be int32 or int64, got ", dtype_name(c.in[i].dtype()));
}

// TF's type attr shared by two inputs (Tindices, Index): both int32 or both int64.
void need_same_int(const OpCall& c, size_t a, size_t b) {
  if (c.in[a].dtype() != c.in[b].dtype())
    c.fail("cannot compute ", c.name(), " as input #", b, "(zero-based) was expected to be a ",
           dtype_name(c.in[a].dtype()), " tensor but is a ", dtype_name(c.in[b].dtype()), " tensor");
}

bool dims_differ(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

// The index depth C: the last dim of indices (rank >= 1, known).
int64_t index_depth(const OpCall& c, const Shape& ix) {
  if (ix.rank() < 1) c.fail("Indices shape must have rank at least one. Found:", ix.str());
  int64_t depth = ix[ix.rank() - 1];
  if (depth < 0)
    c.fail("the last dim of indices (the index depth) must be known when tracing, got ", ix.str());
  return depth;
}

// A scatter of `updates` at `indices` into `out`: updates = indices[:-1] + out[C:] (TF's
// ScatterNd and TensorScatter* checks; `tensor_style` picks the TensorScatter* messages).
void check_scatter(const OpCall& c, const Shape& out, const Shape& ix, const Shape& up, bool tensor_style) {
  const int64_t depth = index_depth(c, ix);
  const int outer = ix.rank() - 1;
  bool outer_ok = up.rank() >= outer;
  for (int d = 0; outer_ok && d < outer; ++d) outer_ok = !dims_differ(ix[d], up[d]);
  if (!outer_ok) {
    if (tensor_style)
      c.fail("Outer dimensions of indices and update must match. Indices shape: ", ix.str(),
             ", updates shape:", up.str());
    c.fail("Dimensions [0,", outer, ") of indices[shape=", ix.str(), "] must match dimensions [0,", outer,
           ") of updates[shape=", up.str(), "]");
  }
  bool inner_ok = up.rank() - outer == out.rank() - depth;
  for (int d = 0; inner_ok && d < out.rank() - depth; ++d)
    inner_ok = !dims_differ(out[depth + d], up[outer + d]);
  if (!inner_ok) {
    if (tensor_style)
      c.fail("Inner dimensions of output shape must match inner dimensions of updates shape. Output: ",
             out.str(), " updates: ", up.str());
    c.fail("Dimensions [", depth, ",", out.rank(), ") of input[shape=", out.str(),
           "] must match dimensions [", outer, ",", up.rank(), ") of updates[shape=", up.str(), "]");
  }
  if (depth > out.rank())  // TF checks the dims first
    c.fail("Index innermost dimension length must be <= tensor rank; saw: ", depth, " vs. ", out.rank());
}

}  // namespace

// GatherNd(params, indices): indices[:-1] + params[C:].
void infer_gather_nd(OpCall& c) {
  const Shape& p = c.in[0].shape();
  const Shape& ix = c.in[1].shape();
  need_int(c, 1, "indices");
  if (ix.rank() < 1) c.fail("indices must be at least a vector");
  const int64_t depth = index_depth(c, ix);
  if (depth > p.rank())
    c.fail("index innermost dimension length must be <= params rank; saw: ", depth, " vs. ", p.rank());
  Shape out;
  for (int d = 0; d + 1 < ix.rank(); ++d) out.push_back(ix[d]);
  for (int d = static_cast<int>(depth); d < p.rank(); ++d) out.push_back(p[d]);
  c.add_output(c.in[0].dtype(), out);
}

// ScatterNd(indices, updates, shape): zeros of `shape` plus the updates (duplicates add).
void infer_scatter_nd(OpCall& c) {
  need_int(c, 0, "indices");
  need_int(c, 2, "shape");
  need_same_int(c, 0, 2);
  const Tensor& sh = c.in[2];
  if (sh.rank() != 1) c.fail("shape must be a vector, got shape ", sh.shape().str());
  if (sh.shape()[0] < 0) c.fail("the length of shape must be known when tracing");
  Shape out;
  if (c.has_value(2)) {
    for (int64_t d : sh.to_int64s()) {
      if (d < 0) c.fail("Dimension ", d, " must be >= 0");
      out.push_back(d);
    }
  } else {
    for (int64_t i = 0; i < sh.shape()[0]; ++i) out.push_back(-1);
  }
  check_scatter(c, out, c.in[0].shape(), c.in[1].shape(), false);
  c.add_output(c.in[1].dtype(), out);
}

// TensorScatterUpdate/Add/Sub/Max/Min(tensor, indices, updates): the tensor's spec.
void infer_tensor_scatter(OpCall& c) {
  const Tensor& t = c.in[0];
  need_int(c, 1, "indices");
  if (t.dtype() != c.in[2].dtype())
    c.fail_type("updates must have the tensor's dtype ", dtype_name(t.dtype()), ", got ",
                dtype_name(c.in[2].dtype()));
  if (!c.claims(t.dtype())) c.fail_type(c.name(), " takes numbers, got ", dtype_name(t.dtype()));
  check_scatter(c, t.shape(), c.in[1].shape(), c.in[2].shape(), true);
  c.add_output(t.dtype(), t.shape());
}

// Slice(input, begin, size): size[d] == -1 takes the rest of dim d.
void infer_slice(OpCall& c) {
  const Shape& in = c.in[0].shape();
  need_int(c, 1, "begin");
  need_int(c, 2, "size");
  need_same_int(c, 1, 2);
  const Shape& b = c.in[1].shape();
  const Shape& s = c.in[2].shape();
  if (b.rank() != 1 || s.rank() != 1 || dims_differ(b[0], in.rank()) || dims_differ(s[0], in.rank()))
    c.fail("Expected begin and size arguments to be 1-D tensors of size ", in.rank(), ", but got shapes ",
           b.str(), " and ", s.str(), " instead.");
  Shape out;
  if (!c.has_value(1) || !c.has_value(2)) {
    std::vector<int64_t> size = c.has_value(2) ? c.in[2].to_int64s() : std::vector<int64_t>(in.rank(), -1);
    for (int d = 0; d < in.rank(); ++d) out.push_back(size[d] >= 0 ? size[d] : -1);
    return c.add_output(c.in[0].dtype(), out);
  }
  std::vector<int64_t> begin = c.in[1].to_int64s(), size = c.in[2].to_int64s();
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t n = in[d];
    if (n >= 0 && (begin[d] < 0 || begin[d] > n))
      c.fail("Expected begin[", d, "] in [0, ", n, "], but got ", begin[d]);
    if (n < 0 && begin[d] < 0) c.fail("Expected begin[", d, "] >= 0, but got ", begin[d]);
    if (size[d] == -1) {
      out.push_back(n < 0 ? -1 : n - begin[d]);
      continue;
    }
    if (n >= 0 && (size[d] < 0 || size[d] > n - begin[d]))
      c.fail("Expected size[", d, "] in [0, ", n - begin[d], "], but got ", size[d]);
    if (size[d] < 0) c.fail("Expected size[", d, "] >= -1, but got ", size[d]);
    out.push_back(size[d]);
  }
  c.add_output(c.in[0].dtype(), out);
}

}  // namespace jf
