// Kernel helpers shared across kernel families (and, later, the executor).
#pragma once
#include <vector>

#include "core/tensor.h"
#include "ir/attrs.h"

namespace jf {

struct OpCall;
struct SlicePlan;

// out = in transposed by perm (out must be allocated with the permuted shape).
void transpose_into(const Tensor& in, const std::vector<int>& perm, Tensor& out);

// dense out[i...] = base[sum_d i_d * strides[d]] (strides in elements of size esize).
void strided_copy(const char* base, size_t esize, int rank, const int64_t* dims, const int64_t* strides,
                  char* out);
// x sliced by the plan into *result: a view of x's buffer when the region is one contiguous
// run of it, else a copy, allocated by c->alloc(0) when c is given.
void strided_slice_into(const Tensor& x, const SlicePlan& p, const Shape& out, OpCall* c, Tensor* result);
// Output i of shape s, for kernels whose output shape depends on the input values (shape
// inference could not know it): checked for size, ResourceExhausted naming the op when it
// cannot be allocated.
Tensor& make_output(OpCall& c, size_t i, DType dt, const Shape& s);
// Forgets every random stream position (jf.random.set_seed).
void reset_random_streams();
// PrintV2 hands its inputs and attrs to the Python layer through this hook.
using PrintFn = void (*)(const std::vector<Tensor>&, const Attrs&);
void set_print_fn(PrintFn fn);

}  // namespace jf
