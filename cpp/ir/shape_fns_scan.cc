// Shape inference for the scans (Cumsum, Cumprod, CumulativeLogsumexp: the input's shape along
// a scalar axis) and TopKV2 (values and indices with the last dim k). TF's op definitions and
// error texts are the reference.
#include "ir/shape_fns.h"

namespace jf {

// Cumsum / Cumprod / CumulativeLogsumexp (x, axis): x's shape and dtype.
void infer_scan(OpCall& c) {
  c.check_claimed(0);
  const Tensor& axis = c.in[1];
  if (!is_int(axis.dtype())) c.fail_type("axis must be int32 or int64, got ", dtype_name(axis.dtype()));
  if (axis.rank() != 0) c.fail("ScanOp: axis must be a scalar, not ", axis.shape().str());
  const int r = c.in[0].rank();
  if (c.has_value(1)) {
    int64_t a = axis.get_int(0);
    if (a < -r || a >= r) c.fail("ScanOp: Expected scan axis in the range [", -r, ", ", r, "), but got ", a);
  }
  c.add_output(c.in[0].dtype(), c.in[0].shape());
}

// TopKV2 (input, k): values [..., k] of input's dtype and indices [..., k] of index_type.
void infer_top_k(OpCall& c) {
  c.check_claimed(0);
  const Tensor& x = c.in[0];
  const Tensor& k = c.in[1];
  if (!is_int(k.dtype())) c.fail_type("k must be int32 or int64, got ", dtype_name(k.dtype()));
  if (k.rank() != 0) c.fail("k must be scalar, got shape ", k.shape().str());
  if (x.rank() < 1) c.fail("input must be >= 1-D, got shape ", x.shape().str());
  DType it = c.attrs.get<DType>("index_type", DType::kInt32);
  need_index_type(c, "index_type", it);
  int64_t kv = -1;
  if (c.has_value(1)) {
    kv = k.get_int(0);
    if (kv < 0) c.fail("Need k >= 0, got ", kv);
    int64_t n = x.shape()[x.rank() - 1];
    if (n >= 0 && n < kv) c.fail("input must have at least k columns. Had ", n, ", needed ", kv);
  }
  Shape out = x.shape();
  out[x.rank() - 1] = kv;
  c.add_output(x.dtype(), out);
  c.add_output(it, out);
}

}  // namespace jf
