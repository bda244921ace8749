// Kernel helpers shared across kernel families (and, later, the executor).
#pragma once
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/attrs.h"

namespace jf {

struct OpCall;
struct SlicePlan;

// memcpy for the kernels that move elements of every dtype: a string element is an object
// (a std::string owning its characters), copied by assignment, which a byte copy would alias
// and free twice. `bytes` is a whole number of elements.
inline void copy_elements(bool strings, void* dst, const void* src, size_t bytes) {
  if (strings)
    std::copy_n(static_cast<const std::string*>(src), bytes / sizeof(std::string),
                static_cast<std::string*>(dst));
  else
    std::memcpy(dst, src, bytes);
}
inline bool is_string(const Tensor& t) { return t.dtype() == DType::kString; }

// When an input of c is float16 or bfloat16: runs `kernel` (the op's float32 kernel) on
// float32 copies of the half inputs and rounds its half outputs once, and returns true.
bool run_widened(OpCall& c, void (*kernel)(OpCall&));

// out = in transposed by perm (out must be allocated with the permuted shape).
void transpose_into(const Tensor& in, const std::vector<int>& perm, Tensor& out);

// dense out[i...] = base[sum_d i_d * strides[d]] (strides in elements of size esize).
void strided_copy(const char* base, size_t esize, int rank, const int64_t* dims, const int64_t* strides,
                  char* out);
// The same for elements of dtype dt (strings too).
void strided_copy(DType dt, const char* base, int rank, const int64_t* dims, const int64_t* strides,
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
