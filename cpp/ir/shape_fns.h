// Helpers shared by shape inference and the kernels that must agree with it.
#pragma once
#include <vector>

#include "ir/op_registry.h"

namespace jf {

// Reduction axes from input 1 (scalar or vector, negative allowed), sorted and unique.
// Returns false when the axes are not known (symbolic input).
bool reduce_axes(const OpCall& c, std::vector<int>* axes);
// A reduction's output shape from its input and axis inputs and keep_dims (TF's rule).
Shape reduced_shape(OpCall& c);

// The resolved form of a StridedSlice on one input shape.
struct SliceDim {
  int64_t start, stride, len;
};
struct SlicePlan {
  std::vector<SliceDim> dims;  // one per input dim
  Shape out;                   // final output shape (after shrink and new axes)
  std::vector<int> out_of_in;  // per input dim: its output dim, -1 when shrunk away
};
SlicePlan strided_slice_plan(const OpCall& c, const Shape& in, const std::vector<int64_t>& begin,
                             const std::vector<int64_t>& end, const std::vector<int64_t>& strides);

// Shape input i's partly known value (OpCall::partial) written into `out`, an all-unknown
// shape of the vector's length: the dims the graph knows become known.
void apply_partial(const OpCall& c, size_t i, Shape* out);

// Reshape target with one -1 resolved against the input element count.
Shape resolve_reshape(const OpCall& c, const Shape& in, const std::vector<int64_t>& target);

// TF's attr check for index outputs (ArgMax's output_type, Shape's out_type): int32 or int64.
void need_index_type(const OpCall& c, const char* attr, DType t);
// Shape with out_type int32 of a tensor with a dim past 2**31 - 1 (TF's Shape kernel check).
void check_dims_fit(const OpCall& c, const Shape& s, DType t);

// CheckNumerics' error, TF's "<message> : Tensor had NaN values" (Inf, Inf and NaN), raised
// by its eager kernel and by a compiled cluster's run-time check alike.
std::string check_numerics_error(const std::string& message, bool nan, bool inf);

}  // namespace jf
