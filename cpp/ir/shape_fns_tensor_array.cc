// Shape inference for the ops behind a traced jf.TensorArray (python/jitflow/tensor_array.py):
// its elements live in one buffer [capacity, *element_shape]; TensorArrayWrite sets rows,
// TensorArrayRead gathers rows below the array's size, TensorArrayStack takes the first
// `size` rows. TF's TensorList messages where TF has one.
#include "ir/shape_fns.h"

namespace jf {

namespace {

enum WriteMode : int64_t { kStrict = 0, kGrow = 1, kDrop = 2 };

void need_buffer(const OpCall& c) {
  if (c.in[0].rank() < 1)
    c.fail("the TensorArray buffer must have rank >= 1 ([capacity, *element_shape]), got ",
           c.in[0].shape().str());
}

void need_index(const OpCall& c, size_t i, const char* what, int max_rank) {
  if (!is_int(c.in[i].dtype()))
    c.fail_type("Expected int32 or int64 passed to parameter '", what, "', got ",
                dtype_name(c.in[i].dtype()));
  if (c.in[i].rank() > max_rank)
    c.fail(what, " must be ", max_rank ? "a scalar or a vector" : "a scalar", ", got shape ",
           c.in[i].shape().str());
}

bool dims_clash(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

int64_t b_rows(const OpCall& c) { return c.in[0].shape()[0]; }

Shape element_of(const Shape& b) {
  Shape e;
  for (int d = 1; d < b.rank(); ++d) e.push_back(b[d]);
  return e;
}

}  // namespace

// TensorArrayWrite(buffer, indices, values), attrs mode (strict / grow / drop), accumulate and
// learn_shape.
// A scalar index writes one element (values is one element), a vector of k indices writes k
// (values [k, *element_shape]). Growing arrays have an unknown capacity once traced.
void infer_tensor_array_write(OpCall& c) {
  need_buffer(c);
  need_index(c, 1, "index", 1);
  const Shape& b = c.in[0].shape();
  const Shape& ix = c.in[1].shape();
  const Shape& v = c.in[2].shape();
  if (c.in[2].dtype() != c.in[0].dtype())
    c.fail("Invalid data types; op elements ", dtype_name(c.in[2].dtype()), " but list elements ",
           dtype_name(c.in[0].dtype()));
  const int lead = ix.rank();  // 0 or 1 leading dims of values before the element
  // An array whose element shape was partly unknown when traced starts with no element (its
  // unknown dims 0) and takes the shape of its first write (TF's TensorList learns it then).
  const bool learns = c.attrs.get<bool>("learn_shape", false) && b.fully_defined() &&
                      element_of(b).num_elements() == 0 && v.rank() == b.rank() - 1 + lead;
  bool ok = v.rank() == b.rank() - 1 + lead;
  if (ok && lead == 1) ok = !dims_clash(ix[0], v[0]);
  for (int d = 1; ok && !learns && d < b.rank(); ++d) ok = !dims_clash(b[d], v[d - 1 + lead]);
  if (!ok)
    c.fail("Incompatible shapes: the element shape of the array is ", element_of(b).str(),
           " but the value written at indices of shape ", ix.str(), " has shape ", v.str());
  const int64_t mode = c.attrs.get<int64_t>("mode", kStrict);
  if (mode < kStrict || mode > kDrop) c.fail("unknown mode ", mode);
  Shape out = b;
  if (learns)
    for (int d = 1; d < b.rank(); ++d) out[d] = v[d - 1 + lead];
  // A growing array's capacity is a run-time fact: unknown once traced, so the buffer before
  // a loop and after any number of iterations has one static shape.
  if (mode == kGrow) out[0] = -1;
  c.add_output(c.in[0].dtype(), out);
}

// TensorArrayRead(buffer, size, indices): the rows at indices (a scalar index reads one
// element), each in [0, size); size <= capacity.
void infer_tensor_array_read(OpCall& c) {
  need_buffer(c);
  need_index(c, 1, "size", 0);
  need_index(c, 2, "index", 1);
  const Shape& b = c.in[0].shape();
  Shape out = c.in[2].shape();
  for (int d = 1; d < b.rank(); ++d) out.push_back(b[d]);
  c.add_output(c.in[0].dtype(), out);
}

// TensorArrayStack(buffer, size): buffer[:size].
void infer_tensor_array_stack(OpCall& c) {
  need_buffer(c);
  need_index(c, 1, "size", 0);
  Shape out = c.in[0].shape();
  out[0] = c.has_value(1) ? c.in[1].get_int(0) : -1;
  if (out[0] < -1 || (out[0] > b_rows(c) && b_rows(c) >= 0))
    c.fail("Tried to stack ", out[0], " elements of a list with capacity ", b_rows(c));
  c.add_output(c.in[0].dtype(), out);
}

}  // namespace jf
