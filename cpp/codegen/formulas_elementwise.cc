// Elemental formulas of the Unary and Binary ops (one per record in ops.def). NaN and Inf
// propagate as in the eager kernels: no fast-math flags.
#include "codegen/formulas.h"

namespace jf {

using llvm::Value;

namespace {
bool is_f(const KExpr* e) { return is_float(e->dtype); }
llvm::Constant* zero(Value* x) { return llvm::Constant::getNullValue(x->getType()); }
}  // namespace

// ---- unary ---------------------------------------------------------------------------------
JF_UNARY_FORMULA(Neg) { return is_f(e) ? E.builder().CreateFNeg(x) : E.builder().CreateNeg(x); }

JF_UNARY_FORMULA(Abs) {
  auto& b = E.builder();
  return is_f(e) ? E.call_intrinsic(llvm::Intrinsic::fabs, x)
                 : b.CreateSelect(b.CreateICmpSLT(x, zero(x)), b.CreateNeg(x), x);
}

JF_UNARY_FORMULA(Square) { return is_f(e) ? E.builder().CreateFMul(x, x) : E.builder().CreateMul(x, x); }

JF_UNARY_FORMULA(Relu) {
  auto& b = E.builder();
  return is_f(e) ? E.fmax_nan(x, zero(x), true) : b.CreateSelect(b.CreateICmpSGT(x, zero(x)), x, zero(x));
}

JF_UNARY_FORMULA(Exp) { return E.exp_inline(x, e->dtype); }

JF_UNARY_FORMULA(Sqrt) { return E.call_intrinsic(llvm::Intrinsic::sqrt, x); }

JF_UNARY_FORMULA(Rsqrt) {
  return E.builder().CreateFDiv(E.fconst(e->dtype, 1.0), E.call_intrinsic(llvm::Intrinsic::sqrt, x));
}

// 1 / (1 + exp(-x)): saturates to exactly 0 and 1.
JF_UNARY_FORMULA(Sigmoid) {
  auto& b = E.builder();
  Value* one = E.fconst(e->dtype, 1.0);
  return b.CreateFDiv(one, b.CreateFAdd(one, E.exp_inline(b.CreateFNeg(x), e->dtype)));
}

// float32: a rational approximation (ElementalEmitter::tanh_rational). float64: for
// |x| < 0.1 the odd Taylor series (no cancellation); else sign(x) * (1 - 2/(exp(2|x|)+1)),
// exact at the tails (exp -> inf gives 1).
JF_UNARY_FORMULA(Tanh) {
  if (e->dtype == DType::kFloat32) return E.tanh_rational(x);
  auto& b = E.builder();
  auto C = [&](double v) { return E.fconst(e->dtype, v); };
  Value* ax = E.call_intrinsic(llvm::Intrinsic::fabs, x);
  Value* e2 = E.exp_inline(b.CreateFMul(C(2.0), ax), e->dtype);
  Value* big = E.call_intrinsic(llvm::Intrinsic::copysign,
                                b.CreateFSub(C(1.0), b.CreateFDiv(C(2.0), b.CreateFAdd(e2, C(1.0)))), x);
  Value* x2 = b.CreateFMul(x, x);
  Value* p = C(-17.0 / 315.0);
  p = b.CreateFAdd(b.CreateFMul(p, x2), C(2.0 / 15.0));
  p = b.CreateFAdd(b.CreateFMul(p, x2), C(-1.0 / 3.0));
  Value* small = b.CreateFAdd(x, b.CreateFMul(b.CreateFMul(x, x2), p));
  return b.CreateSelect(b.CreateFCmpOLT(ax, C(0.1)), small, big);
}

JF_UNARY_FORMULA(LogicalNot) { return E.builder().CreateNot(x); }

// ---- binary --------------------------------------------------------------------------------
JF_BINARY_FORMULA(AddV2) { return is_float(in) ? E.builder().CreateFAdd(x, y) : E.builder().CreateAdd(x, y); }
JF_BINARY_FORMULA(Sub) { return is_float(in) ? E.builder().CreateFSub(x, y) : E.builder().CreateSub(x, y); }
JF_BINARY_FORMULA(Mul) { return is_float(in) ? E.builder().CreateFMul(x, y) : E.builder().CreateMul(x, y); }
JF_BINARY_FORMULA(RealDiv) { return E.builder().CreateFDiv(x, y); }

// Float only (the record keeps integer division eager).
JF_BINARY_FORMULA(FloorDiv) { return E.call_intrinsic(llvm::Intrinsic::floor, E.builder().CreateFDiv(x, y)); }

JF_BINARY_FORMULA(FloorMod) {
  auto& b = E.builder();
  Value* m = b.CreateFRem(x, y);
  Value* fix = b.CreateAnd(b.CreateFCmpUNE(m, zero(x)),
                           b.CreateXor(b.CreateFCmpOLT(m, zero(x)), b.CreateFCmpOLT(y, zero(x))));
  return b.CreateSelect(fix, b.CreateFAdd(m, y), m);
}

JF_BINARY_FORMULA(Maximum) {
  auto& b = E.builder();
  return is_float(in) ? E.fmax_nan(x, y, true) : b.CreateSelect(b.CreateICmpSGT(x, y), x, y);
}
JF_BINARY_FORMULA(Minimum) {
  auto& b = E.builder();
  return is_float(in) ? E.fmax_nan(x, y, false) : b.CreateSelect(b.CreateICmpSLT(x, y), x, y);
}

// Comparisons: ordered for float (NaN compares false), except NotEqual (NaN != NaN).
JF_BINARY_FORMULA(Equal) {
  return is_float(in) ? E.builder().CreateFCmpOEQ(x, y) : E.builder().CreateICmpEQ(x, y);
}
JF_BINARY_FORMULA(NotEqual) {
  return is_float(in) ? E.builder().CreateFCmpUNE(x, y) : E.builder().CreateICmpNE(x, y);
}
JF_BINARY_FORMULA(Less) {
  return is_float(in) ? E.builder().CreateFCmpOLT(x, y) : E.builder().CreateICmpSLT(x, y);
}
JF_BINARY_FORMULA(LessEqual) {
  return is_float(in) ? E.builder().CreateFCmpOLE(x, y) : E.builder().CreateICmpSLE(x, y);
}
JF_BINARY_FORMULA(Greater) {
  return is_float(in) ? E.builder().CreateFCmpOGT(x, y) : E.builder().CreateICmpSGT(x, y);
}
JF_BINARY_FORMULA(GreaterEqual) {
  return is_float(in) ? E.builder().CreateFCmpOGE(x, y) : E.builder().CreateICmpSGE(x, y);
}
JF_BINARY_FORMULA(LogicalAnd) { return E.builder().CreateAnd(x, y); }
JF_BINARY_FORMULA(LogicalOr) { return E.builder().CreateOr(x, y); }

}  // namespace jf
