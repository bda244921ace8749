// Shape inference for the ops whose output shape depends on their input values (Where with
// one argument, Unique, UniqueWithCounts): the value-dependent dim is unknown here, in eager
// mode too; their kernels make their outputs once they have counted (kernels/mask_ops.cc).
// TF's op definitions and error texts are the reference.
#include "ir/shape_fns.h"

namespace jf {

// Where(condition): int64 [number of true (nonzero) elements, rank], row-major coordinates.
void infer_where(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.rank() == 0) c.fail("WhereOp : Unhandled input dimensions: 0");
  c.add_output(DType::kInt64, Shape{-1, x.rank()});
}

// Unique(x) -> y, idx; UniqueWithCounts(x) -> y, idx, count. x is a vector; idx and count
// have the out_idx dtype (int32 or int64).
static void infer_unique_common(OpCall& c, bool counts) {
  const Tensor& x = c.in[0];
  DType t = c.attrs.get<DType>("out_idx", DType::kInt32);
  need_index_type(c, "out_idx", t);
  if (x.rank() != 1) c.fail("unique expects a 1D vector.");
  c.add_output(x.dtype(), Shape{-1});
  c.add_output(t, x.shape());
  if (counts) c.add_output(t, Shape{-1});
}
void infer_unique(OpCall& c) { infer_unique_common(c, false); }
void infer_unique_with_counts(OpCall& c) { infer_unique_common(c, true); }

}  // namespace jf
