// Shape inference for the statistics ops: the bool reductions Any and All, and the sorted
// segment reductions, whose first output dim (the last segment id + 1) is known only once
// the ids are. TF's op definitions and error texts are the reference.
#include <algorithm>

#include "ir/shape_fns.h"

namespace jf {

// Any / All (input, axis): Sum's shape rule over a bool input (TF's Any and All take bool only).
void infer_reduce_bool(OpCall& c) {
  if (!c.claims(c.in[0].dtype()))
    c.fail_type("input must be a bool tensor, got ", dtype_name(c.in[0].dtype()));
  c.add_output(DType::kBool, reduced_shape(c));
}

// Segment{Sum,Mean,Max,Min}(data, segment_ids): [ids[-1] + 1] + data[1:]. The ids are a
// vector as long as data's first dim; the first output dim is unknown until they are read.
void infer_sorted_segment(OpCall& c) {
  const Shape& d = c.in[0].shape();
  const Shape& ids = c.in[1].shape();
  if (!c.claims(c.in[0].dtype())) c.fail_type("data must be a number, got ", dtype_name(c.in[0].dtype()));
  if (!is_int(c.in[1].dtype()))
    c.fail_type("segment_ids must be int32 or int64, got ", dtype_name(c.in[1].dtype()));
  if (ids.rank() != 1) c.fail("segment_ids should be a vector.");
  if (d.rank() < 1) c.fail("input must be at least rank 1");
  if (ids[0] >= 0 && d[0] >= 0 && ids[0] != d[0])
    c.fail("segment_ids should be the same size as dimension 0 of input.");
  Shape out{-1};
  for (int i = 1; i < d.rank(); ++i) out.push_back(d[i]);
  c.add_output(c.in[0].dtype(), out);
}

}  // namespace jf
