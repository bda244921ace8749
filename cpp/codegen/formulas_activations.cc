// Elemental formulas of TF's activation ops (records in ops.def's "activations" block), the
// same arithmetic as their eager kernels (kernels/activation_ops.cc), shared by the CPU and
// NVPTX backends.
#include <cmath>
#include <limits>

#include "codegen/formulas.h"

namespace jf {

using llvm::Value;

namespace {
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluScaleAlpha = 1.7580993408473768599402175208123;
}  // namespace

// min(max(x, 0), 6), NaN kept; integers compare signed.
JF_UNARY_FORMULA(Relu6) {
  auto& b = E.builder();
  if (is_float(e->dtype))
    return E.fmax_nan(E.fmax_nan(x, E.fconst(e->dtype, 0.0), true), E.fconst(e->dtype, 6.0), false);
  Value* zero = llvm::ConstantInt::get(x->getType(), 0);
  Value* six = llvm::ConstantInt::get(x->getType(), 6);
  Value* lo = b.CreateSelect(b.CreateICmpSGT(x, zero), x, zero);
  return b.CreateSelect(b.CreateICmpSLT(lo, six), lo, six);
}

// x < 0 ? expm1(x) : x (expm1 is the record's math function).
JF_UNARY_FORMULA(Elu) {
  auto& b = E.builder();
  return b.CreateSelect(b.CreateFCmpOLT(x, E.fconst(e->dtype, 0.0)), E.math_call(e, x), x);
}

JF_UNARY_FORMULA(Selu) {
  auto& b = E.builder();
  Value* neg = b.CreateFMul(E.fconst(e->dtype, kSeluScaleAlpha), E.math_call(e, x));
  Value* pos = b.CreateFMul(E.fconst(e->dtype, kSeluScale), x);
  return b.CreateSelect(b.CreateFCmpOLT(x, E.fconst(e->dtype, 0.0)), neg, pos);
}

// TF's thresholds (see k_Softplus): x above -th, exp(x) below th, else log1p(exp(x)) with
// log1p the record's math function. NaN fails both compares and reaches log1p(exp(NaN)).
JF_UNARY_FORMULA(Softplus) {
  auto& b = E.builder();
  const double eps = e->dtype == DType::kFloat32 ? std::numeric_limits<float>::epsilon()
                                                 : std::numeric_limits<double>::epsilon();
  const double th = e->dtype == DType::kFloat32 ? double(std::log(float(eps)) + 2.0f) : std::log(eps) + 2.0;
  Value* ex = E.exp_inline(x, e->dtype);
  Value* mid = b.CreateSelect(b.CreateFCmpOLT(x, E.fconst(e->dtype, th)), ex, E.math_call(e, ex));
  return b.CreateSelect(b.CreateFCmpOGT(x, E.fconst(e->dtype, -th)), x, mid);
}

JF_UNARY_FORMULA(Softsign) {
  auto& b = E.builder();
  Value* den = b.CreateFAdd(E.call_intrinsic(llvm::Intrinsic::fabs, x), E.fconst(e->dtype, 1.0));
  return b.CreateFDiv(x, den);
}

// x > 0 ? x : alpha * x; alpha is the node's float attr, copied into the expr at lowering
// (and so part of the compile-cache key). 0.2 is TF's default, as in k_LeakyRelu.
JF_UNARY_FORMULA(LeakyRelu) {
  auto& b = E.builder();
  Value* ax = b.CreateFMul(E.fconst(e->dtype, float_attr(e, "alpha", 0.2)), x);
  return b.CreateSelect(b.CreateFCmpOGT(x, E.fconst(e->dtype, 0.0)), x, ax);
}

}  // namespace jf
