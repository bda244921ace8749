// Eager kernels of the ops behind a traced jf.TensorArray: one buffer [capacity, *element],
// written in place when the executor hands TensorArrayWrite the buffer's only reference (a
// loop-carried array at its last use), so n writes in a loop copy O(n) elements, not O(n^2).
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/kernels.h"
#include "support/stats.h"

namespace jf {
namespace {

enum WriteMode : int64_t { kStrict = 0, kGrow = 1, kDrop = 2 };

size_t row_bytes(const Tensor& buf) {
  size_t n = dtype_size(buf.dtype());
  for (int d = 1; d < buf.rank(); ++d) n *= static_cast<size_t>(buf.shape()[d]);
  return n;
}

// Only a buffer nobody else can observe may change: one reference (ours), our own memory
// (not a numpy array or DLPack import), on the host.
bool writable_in_place(const Tensor& t) {
  const BufferPtr& b = t.buffer();
  return b && b.use_count() == 1 && b->release == nullptr && t.on_host();
}

template <class T>
void add_row(char* dst, const char* src, size_t bytes) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  for (size_t k = 0; k < bytes / sizeof(T); ++k) {
    if constexpr (std::is_same_v<T, bool>)
      d[k] = d[k] || s[k];
    else
      d[k] = d[k] + s[k];
  }
}

// A gradient array sums its writes (strings never have gradients).
void accumulate_row(DType dt, char* dst, const char* src, size_t bytes) {
  if (dt == DType::kString) throw_invalid("TensorArrayWrite: cannot accumulate ", dtype_name(dt));
  JF_SWITCH_CLAIMED(op_types(OpId::TensorArrayWrite) & ~kStringTypes, dt, T, add_row<T>(dst, src, bytes));
}

// zero bytes are zero for every numeric dtype; a fresh string tensor holds empty strings
void zero_fill(const Tensor& t, size_t from, size_t bytes) {
  if (bytes && t.dtype() != DType::kString) std::memset(static_cast<char*>(t.raw()) + from, 0, bytes);
}

}  // namespace

void k_TensorArrayWrite(OpCall& c) {
  const Tensor* in = &c.in[0];  // not a copy: a copy's reference would forbid writing in place
  Tensor learned;
  const Tensor& vals = c.in[2];
  const int64_t mode = c.attrs.get<int64_t>("mode", kStrict);
  const bool acc = c.attrs.get<bool>("accumulate", false);
  const std::vector<int64_t> ix = c.in[1].to_int64s();
  // The element shapes must agree (the shape function saw unknown dims), except for an array
  // still without elements whose element shape was partly unknown when traced: it takes the
  // value's, its rows zeros of that shape (TF's TensorList learns it at the first write).
  const int lead = c.in[1].rank();
  Shape element;
  for (int d = lead; d < vals.rank(); ++d) element.push_back(vals.shape()[d]);
  bool same = element.rank() == in->rank() - 1;
  for (int d = 1; same && d < in->rank(); ++d) same = in->shape()[d] == element[d - 1];
  if (!same) {
    Shape have;
    for (int d = 1; d < in->rank(); ++d) have.push_back(in->shape()[d]);
    if (!c.attrs.get<bool>("learn_shape", false) || have.num_elements() != 0 || element.rank() != have.rank())
      c.fail("Incompatible shapes: the element shape of the array is ", have.str(),
             " but the value written at ", "indices of shape ", c.in[1].shape().str(), " has shape ",
             vals.shape().str());
    Shape s = element;
    s.insert(0, in->shape()[0]);
    learned = make_output(c, 0, in->dtype(), s);
    zero_fill(learned, 0, static_cast<size_t>(s.num_elements()) * dtype_size(in->dtype()));
    in = &learned;
  }
  const Tensor& buf = *in;
  const int64_t rows = buf.shape()[0];
  int64_t need = rows;
  for (int64_t j : ix) {
    if (j >= 0 && j < rows) continue;
    if (mode == kDrop) continue;
    if (j < 0 || mode == kStrict)
      c.fail("Trying to modify element ", j, " in a list with ", rows, " elements.");
    need = std::max(need, j + 1);
  }
  const int64_t out_rows = need > rows ? std::max(need, 2 * rows) : rows;
  const size_t rb = row_bytes(buf);
  Tensor out;
  if (out_rows == rows && writable_in_place(buf)) {
    out = buf;  // the caller gave up its reference: nobody sees the old value
  } else {
    Shape s = buf.shape();
    s[0] = out_rows;
    out = make_output(c, 0, buf.dtype(), s);
    const size_t kept = static_cast<size_t>(rows) * rb, all = static_cast<size_t>(out_rows) * rb;
    copy_elements(is_string(buf), out.raw(), buf.raw(), kept);
    if (all > kept) zero_fill(out, kept, all - kept);
    stats().tensor_array_copied_bytes.fetch_add(static_cast<int64_t>(kept), std::memory_order_relaxed);
  }
  char* base = static_cast<char*>(out.raw());
  const char* src = rb ? static_cast<const char*>(vals.raw()) : nullptr;
  for (size_t k = 0; k < ix.size(); ++k) {
    const int64_t j = ix[k];
    if (j < 0 || j >= out_rows || rb == 0) continue;
    if (acc)
      accumulate_row(buf.dtype(), base + j * rb, src + k * rb, rb);
    else
      copy_elements(is_string(buf), base + j * rb, src + k * rb, rb);
  }
  if (c.results.empty()) c.results.resize(1);
  c.results[0] = out;
}

void k_TensorArrayRead(OpCall& c) {
  const Tensor& buf = c.in[0];
  const int64_t size = c.in[1].get_int(0), rows = buf.shape()[0];
  if (size < 0 || size > rows) c.fail("the array's size ", size, " is outside its capacity ", rows);
  const Tensor& ixt = c.in[2];
  const std::vector<int64_t> ix = ixt.to_int64s();
  for (int64_t j : ix)
    if (j < 0 || j >= size) {
      if (ixt.rank() == 0) c.fail("Trying to access element ", j, " in a list with ", size, " elements.");
      c.fail("Index ", j, " out of range; list only has ", size, " elements.");
    }
  Shape s = ixt.shape();
  for (int d = 1; d < buf.rank(); ++d) s.push_back(buf.shape()[d]);
  Tensor& out = make_output(c, 0, buf.dtype(), s);
  const size_t rb = row_bytes(buf);
  if (rb == 0) return;
  for (size_t k = 0; k < ix.size(); ++k)
    copy_elements(is_string(buf), static_cast<char*>(out.raw()) + k * rb,
                  static_cast<const char*>(buf.raw()) + ix[k] * rb, rb);
}

void k_TensorArrayStack(OpCall& c) {
  const Tensor& buf = c.in[0];
  const int64_t size = c.in[1].get_int(0), rows = buf.shape()[0];
  if (size < 0 || size > rows) c.fail("Tried to stack ", size, " elements of a list with capacity ", rows);
  if (c.results.empty()) c.results.resize(1);
  if (size == rows) {  // the whole buffer: share it (tensors are immutable to everyone else)
    c.results[0] = buf;
    return;
  }
  // The first rows are a prefix of the same memory: a view, no copy (a later in-place write
  // sees the extra reference and copies instead).
  Shape s = buf.shape();
  s[0] = size;
  const size_t offset =
      static_cast<size_t>(static_cast<char*>(buf.raw()) - static_cast<char*>(buf.buffer()->data));
  c.results[0] = Tensor(buf.dtype(), s, buf.buffer(), offset);
}

}  // namespace jf
