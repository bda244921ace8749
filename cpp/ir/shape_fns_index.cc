// Shape inference for the index-map ops: gathers (GatherV2, OneHot), the per-dim maps
// (ReverseV2, Tile, PadV2, MirrorPad, Roll) and the scatter that is gather's gradient
// (UnsortedSegmentSum). TF's op definitions and error texts are the reference.
#include "ir/shape_fns.h"

namespace jf {

namespace {

void need_int(const OpCall& c, size_t i, const char* what) {
  if (!is_int(c.in[i].dtype()))
    c.fail_type(what, " must be int32 or int64, got ", dtype_name(c.in[i].dtype()));
}

// A scalar axis input resolved against `rank` (TF: [-rank, rank)); -1 when not known.
int64_t axis_value(const OpCall& c, size_t i, int rank, const char* what) {
  need_int(c, i, what);
  if (c.in[i].rank() != 0) c.fail(what, " must be a scalar, got shape ", c.in[i].shape().str());
  if (!c.has_value(i)) return -1;
  int64_t a = c.in[i].get_int(0);
  if (a < -rank || a >= rank)
    c.fail("Expected ", what, " in the range [", -rank, ", ", rank, "), but got ", a);
  return a < 0 ? a + rank : a;
}

// TF's [rank, 2] paddings: the (before, after) pairs when known.
bool paddings(const OpCall& c, std::vector<std::pair<int64_t, int64_t>>* p) {
  const Tensor& x = c.in[0];
  const Tensor& pad = c.in[1];
  need_int(c, 1, "paddings");
  if (pad.rank() != 2 || pad.shape()[1] != 2 || pad.shape()[0] != x.rank())
    c.fail("The first dimension of paddings must be the rank of inputs", x.rank(), ", ", pad.shape().str(),
           " ", x.shape().str());
  if (!c.has_value(1)) return false;
  std::vector<int64_t> v = pad.to_int64s();
  for (int d = 0; d < x.rank(); ++d) {
    if (v[2 * d] < 0 || v[2 * d + 1] < 0)
      c.fail("Paddings must be non-negative: ", v[2 * d], " ", v[2 * d + 1]);
    p->push_back({v[2 * d], v[2 * d + 1]});
  }
  return true;
}

Shape unknown_dims(int rank) {
  Shape s;
  for (int i = 0; i < rank; ++i) s.push_back(-1);
  return s;
}

}  // namespace

// GatherV2(params, indices, axis), attr batch_dims: params[:axis] + indices[batch_dims:] +
// params[axis + 1:].
void infer_gather(OpCall& c) {
  const Shape& p = c.in[0].shape();
  const Shape& ix = c.in[1].shape();
  need_int(c, 1, "indices");
  int64_t bd = c.attrs.get<int64_t>("batch_dims", 0);
  if (bd < 0) bd += ix.rank();
  if (bd < 0 || bd > ix.rank()) c.fail("batch_dims must be in [-", ix.rank(), ", ", ix.rank(), "], got ", bd);
  if (p.rank() < 1) c.fail("params must be at least 1 dimensional");
  int64_t axis = axis_value(c, 2, p.rank(), "axis");
  if (axis < 0) {
    c.add_output(c.in[0].dtype(), unknown_dims(p.rank() - 1 + ix.rank() - static_cast<int>(bd)));
    return;
  }
  if (bd > axis) c.fail("batch_dims (", bd, ") must be less than or equal to axis (", axis, ")");
  for (int d = 0; d < bd; ++d)
    if (p[d] >= 0 && ix[d] >= 0 && p[d] != ix[d])
      c.fail("params.shape[", d, "]: ", p[d], " should be equal to indices.shape[", d, "]: ", ix[d]);
  Shape out;
  for (int d = 0; d < axis; ++d) out.push_back(p[d]);
  for (int d = static_cast<int>(bd); d < ix.rank(); ++d) out.push_back(ix[d]);
  for (int d = static_cast<int>(axis) + 1; d < p.rank(); ++d) out.push_back(p[d]);
  c.add_output(c.in[0].dtype(), out);
}

// OneHot(indices, depth, on_value, off_value), attr axis (-1: last).
void infer_one_hot(OpCall& c) {
  if (!c.claims(c.in[0].dtype()))
    c.fail_type("indices must be int32 or int64, got ", dtype_name(c.in[0].dtype()));
  need_int(c, 1, "depth");
  if (c.in[1].rank() != 0) c.fail("depth must be a scalar, got shape ", c.in[1].shape().str());
  if (c.in[2].rank() != 0 || c.in[3].rank() != 0) c.fail("on_value and off_value must be scalars");
  if (c.in[2].dtype() != c.in[3].dtype())
    c.fail_type("on_value and off_value must have the same dtype, got ", dtype_name(c.in[2].dtype()), " and ",
                dtype_name(c.in[3].dtype()));
  const Shape& ix = c.in[0].shape();
  int64_t axis = c.attrs.get<int64_t>("axis", -1);
  if (axis < -1 || axis > ix.rank())
    c.fail("Expected axis to be -1 or between [0, ", ix.rank(), "], got ", axis);
  if (axis == -1) axis = ix.rank();
  int64_t depth = -1;
  if (c.has_value(1)) {
    depth = c.in[1].get_int(0);
    if (depth < 0) c.fail("depth must be non-negative, got: ", depth);
  }
  Shape out;
  for (int d = 0; d < ix.rank(); ++d) {
    if (d == axis) out.push_back(depth);
    out.push_back(ix[d]);
  }
  if (axis == ix.rank()) out.push_back(depth);
  c.add_output(c.in[2].dtype(), out);
}

// ReverseV2(tensor, axis): a vector of distinct axes.
void infer_reverse(OpCall& c) {
  const Tensor& x = c.in[0];
  need_int(c, 1, "axis");
  if (c.in[1].rank() != 1) c.fail("axis must be a vector, got shape ", c.in[1].shape().str());
  if (c.has_value(1)) {
    std::vector<bool> seen(x.rank(), false);
    for (int64_t a : c.in[1].to_int64s()) {
      if (a < -x.rank() || a >= x.rank())
        c.fail("'axis'[] = ", a, " is out of valid range [", -x.rank(), ", ", x.rank() - 1, "]");
      int64_t k = a < 0 ? a + x.rank() : a;
      if (seen[k]) c.fail("axis ", k, " specified more than once.");
      seen[k] = true;
    }
  }
  c.add_output(x.dtype(), x.shape());
}

// Tile(input, multiples): dim d times multiples[d].
void infer_tile(OpCall& c) {
  const Tensor& x = c.in[0];
  need_int(c, 1, "multiples");
  if (c.in[1].rank() != 1 || c.in[1].shape()[0] != x.rank())
    c.fail("Expected multiples argument to be a vector of length ", x.rank(), " but got length ",
           c.in[1].rank() == 1 ? c.in[1].shape()[0] : -1);
  std::vector<int64_t> m(x.rank(), -1);
  if (c.has_value(1))
    m = c.in[1].to_int64s();
  else if (const std::vector<int64_t>* p = c.partial_value(1))
    m = *p;  // the multiples the graph knows: the tiled dims whose input dim is known too
  else
    return c.add_output(x.dtype(), unknown_dims(x.rank()));
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    if (m[d] < 0 && c.has_value(1)) c.fail("Expected multiples[", d, "] >= 0, but got ", m[d]);
    int64_t n = x.shape()[d] < 0 || m[d] < 0 ? -1 : 0;
    if (n == 0 && __builtin_mul_overflow(x.shape()[d], m[d], &n)) c.fail("Tiled dim ", d, " overflows");
    out.push_back(n);
  }
  c.add_output(x.dtype(), out);
}

// PadV2(input, paddings, constant_values) and MirrorPad(input, paddings), attr mode.
void infer_pad(OpCall& c) {
  const Tensor& x = c.in[0];
  bool mirror = c.def->id == OpId::MirrorPad;
  if (!mirror) {
    if (c.in[2].rank() != 0)
      c.fail("constant_values must be a scalar. Shape of constant_values is ", c.in[2].shape().str());
    if (c.in[2].dtype() != x.dtype())
      c.fail_type("constant_values must have the input's dtype ", dtype_name(x.dtype()), ", got ",
                  dtype_name(c.in[2].dtype()));
  }
  std::vector<std::pair<int64_t, int64_t>> p;
  if (!paddings(c, &p)) return c.add_output(x.dtype(), unknown_dims(x.rank()));
  bool symmetric = mirror && c.attrs.get<std::string>("mode", "REFLECT") == "SYMMETRIC";
  if (mirror) {
    std::string mode = c.attrs.get<std::string>("mode", "REFLECT");
    if (mode != "REFLECT" && mode != "SYMMETRIC") c.fail("mode must be REFLECT or SYMMETRIC, got ", mode);
  }
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    int64_t n = x.shape()[d];
    if (mirror && n >= 0) {
      int64_t limit = symmetric ? n : n - 1;  // TF: paddings must be less than (or equal) the dim
      if (p[d].first > limit || p[d].second > limit)
        c.fail("paddings must be no greater than the dimension size: ", p[d].first, ", ", p[d].second,
               " greater than ", limit);
    }
    int64_t padded;  // paddings near 2**63 overflowed into a negative dim
    if (n >= 0 && (__builtin_add_overflow(n, p[d].first, &padded) ||
                   __builtin_add_overflow(padded, p[d].second, &padded)))
      c.fail("padded dim ", d, " (", n, " + ", p[d].first, " + ", p[d].second, ") is more than 2**63 - 1");
    out.push_back(n < 0 ? -1 : padded);
  }
  c.add_output(x.dtype(), out);
}

// Roll(input, shift, axis): scalar or matching vectors.
void infer_roll(OpCall& c) {
  const Tensor& x = c.in[0];
  need_int(c, 1, "shift");
  need_int(c, 2, "axis");
  if (c.in[1].rank() > 1 || c.in[2].rank() > 1 || c.in[1].shape() != c.in[2].shape())
    c.fail("shift and axis must be scalars or vectors of the same length, got ", c.in[1].shape().str(),
           " and ", c.in[2].shape().str());
  if (x.rank() < 1) c.fail("input must be 1-D or higher");
  if (c.has_value(2))
    for (int64_t a : c.in[2].to_int64s())
      if (a < -x.rank() || a >= x.rank())
        c.fail("axis ", a, " is out of range for a rank-", x.rank(), " input");
  c.add_output(x.dtype(), x.shape());
}

// UnsortedSegmentSum(data, segment_ids, num_segments): [num_segments] + data[ids.rank:].
void infer_segment_sum(OpCall& c) {
  const Shape& d = c.in[0].shape();
  const Shape& ids = c.in[1].shape();
  if (!c.claims(c.in[0].dtype())) c.fail_type("data must be a number, got ", dtype_name(c.in[0].dtype()));
  need_int(c, 1, "segment_ids");
  need_int(c, 2, "num_segments");
  if (c.in[2].rank() != 0) c.fail("num_segments should be a scalar, not shape ", c.in[2].shape().str());
  if (ids.rank() > d.rank()) c.fail("segment_ids rank ", ids.rank(), " exceeds data rank ", d.rank());
  for (int i = 0; i < ids.rank(); ++i)
    if (ids[i] >= 0 && d[i] >= 0 && ids[i] != d[i])
      c.fail("data.shape = ", d.str(), " does not start with segment_ids.shape = ", ids.str());
  int64_t n = -1;
  if (c.has_value(2)) {
    n = c.in[2].get_int(0);
    if (n < 0) c.fail("Input num_segments == ", n, " must not be negative.");
  }
  Shape out{n};
  for (int i = ids.rank(); i < d.rank(); ++i) out.push_back(d[i]);
  c.add_output(c.in[0].dtype(), out);
}

}  // namespace jf
