// Front-end compositions of registry ops.
#include "runtime/frontend.h"

namespace jf {

Tensor run1(OpId op, const std::vector<Tensor>& in, const Attrs& attrs, const std::string* name) {
  auto out = execute(op, in, attrs, name);
  JF_CHECK(out.size() == 1, op_def(op).name, " returned ", out.size(), " outputs");
  return std::move(out[0]);
}

Tensor cast(const Tensor& x, DType to, const std::string* name) {
  if (x.dtype() == to) return x;
  Attrs a;
  a.set("SrcT", x.dtype());
  a.set("DstT", to);
  return run1(OpId::Cast, {x}, a, name);
}

Tensor truediv(const Tensor& a, const Tensor& b, const std::string* name) {
  if (is_int(a.dtype()) && a.dtype() == b.dtype())
    return run1(OpId::RealDiv, {cast(a, DType::kFloat64), cast(b, DType::kFloat64)}, Attrs(), name);
  return run1(OpId::RealDiv, {a, b}, Attrs(), name);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb, const std::string* name) {
  Attrs at;
  if (a.rank() == 2 && b.rank() == 2) {
    at.set("transpose_a", ta);
    at.set("transpose_b", tb);
    return run1(OpId::MatMul, {a, b}, at, name);
  }
  at.set("adj_x", ta);
  at.set("adj_y", tb);
  return run1(OpId::BatchMatMulV2, {a, b}, at, name);
}

}  // namespace jf
