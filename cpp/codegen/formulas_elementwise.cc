// Elemental formulas of the Unary and Binary ops (one per record in ops.def). NaN and Inf
// propagate as in the eager kernels: no fast-math flags.
#include <cmath>
#include <limits>

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

// 1 / (1 + exp(-x)): saturates to exactly 1. Where exp(-x) overflows (x < -80 for float32,
// -700 for float64) the result is exp(x), down through the subnormals, as the eager kernel.
JF_UNARY_FORMULA(Sigmoid) {
  auto& b = E.builder();
  Value* one = E.fconst(e->dtype, 1.0);
  Value* r = b.CreateFDiv(one, b.CreateFAdd(one, E.exp_inline(b.CreateFNeg(x), e->dtype)));
  Value* tail = b.CreateFCmpOLT(x, E.fconst(e->dtype, e->dtype == DType::kFloat32 ? -80.0 : -700.0));
  return b.CreateSelect(tail, E.exp_inline(x, e->dtype), r);
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
  // x * (1 + x^2 p), not x + x^3 p: tanh(-0) is -0 (-0 + +0 would be +0).
  Value* small = b.CreateFMul(x, b.CreateFAdd(C(1.0), b.CreateFMul(x2, p)));
  return b.CreateSelect(b.CreateFCmpOLT(ax, C(0.1)), small, big);
}

// Eigen's digamma (Cephes psi), as TF's kernel: NaN at the poles (0, -1, ...); below 0 the
// reflection psi(1 - x) - pi / tan(pi x); then the recurrence psi(s) - sum 1/(x + k) up to
// s = x + 10 (a fixed number of steps, exact for every x), and the asymptotic series at s.
// tan is the record's math function.
JF_UNARY_FORMULA(Digamma) {
  auto& b = E.builder();
  auto C = [&](double v) { return E.fconst(e->dtype, v); };
  Value* neg = b.CreateFCmpOLE(x, C(0.0));
  Value* p = E.call_intrinsic(llvm::Intrinsic::floor, x);
  Value* pole = b.CreateAnd(neg, b.CreateFCmpOEQ(p, x));
  Value* nz = b.CreateFSub(x, p);
  nz = b.CreateSelect(b.CreateFCmpOGT(nz, C(0.5)), b.CreateFSub(x, b.CreateFAdd(p, C(1.0))), nz);
  Value* refl = b.CreateFDiv(C(M_PI), E.math_call(e, b.CreateFMul(C(M_PI), nz)));
  refl = b.CreateSelect(b.CreateFCmpOEQ(nz, C(0.5)), C(0.0), refl);
  Value* xr = b.CreateSelect(neg, b.CreateFSub(C(1.0), x), x);
  Value* w = C(0.0);
  for (int k = 0; k < 10; ++k) w = b.CreateFAdd(w, b.CreateFDiv(C(1.0), b.CreateFAdd(xr, C(k))));
  Value* s = b.CreateFAdd(xr, C(10.0));
  Value* z = b.CreateFDiv(C(1.0), b.CreateFMul(s, s));
  const double A[] = {8.33333333333333333333E-2,  -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                      -4.16666666666666666667E-3, 3.96825396825396825397E-3,  -8.33333333333333333333E-3,
                      8.33333333333333333333E-2};
  Value* poly = C(A[0]);
  for (int i = 1; i < 7; ++i) poly = b.CreateFAdd(b.CreateFMul(poly, z), C(A[i]));
  Value* y = b.CreateFMul(z, poly);
  Value* r = b.CreateFSub(
      b.CreateFSub(b.CreateFSub(E.call_intrinsic(llvm::Intrinsic::log, s), b.CreateFDiv(C(0.5), s)), y), w);
  r = b.CreateSelect(neg, b.CreateFSub(r, refl), r);
  return b.CreateSelect(pole, C(std::numeric_limits<double>::quiet_NaN()), r);
}

// TF's erfinv: ndtri((x + 1) / 2) / sqrt(2), ndtri as Eigen's (Cephes): a rational
// approximation in the middle, one in z = sqrt(-2 log b) in the tails; -inf/inf at -1/1, NaN
// beyond (TF 2.21's values).
namespace {
Value* polevl(ElementalEmitter& E, DType d, Value* x, std::initializer_list<double> c) {
  auto& b = E.builder();
  auto it = c.begin();
  Value* r = E.fconst(d, *it++);
  for (; it != c.end(); ++it) r = b.CreateFAdd(b.CreateFMul(r, x), E.fconst(d, *it));
  return r;
}
}  // namespace
JF_UNARY_FORMULA(Erfinv) {
  auto& b = E.builder();
  const DType d = e->dtype;
  auto C = [&](double v) { return E.fconst(d, v); };
  Value* a = b.CreateFAdd(b.CreateFMul(C(0.5), x), C(0.5));
  const double exp_neg_two = 0.13533528323661269189;
  Value* flip = b.CreateFCmpOLE(a, C(1.0 - exp_neg_two));
  Value* bb = b.CreateSelect(flip, a, b.CreateFSub(C(1.0), a));
  // Middle: b > exp(-2).
  Value* c = b.CreateFSub(bb, C(0.5));
  Value* c2 = b.CreateFMul(c, c);
  Value* ratio =
      b.CreateFDiv(polevl(E, d, c2,
                          {-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
                           1.39312609387279679503e1, -1.23916583867381258016e0}),
                   polevl(E, d, c2,
                          {1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
                           -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
                           1.59056225126211695515e1, -1.18331621121330003142e0}));
  Value* mid =
      b.CreateFMul(b.CreateFAdd(b.CreateFMul(c, b.CreateFMul(c2, ratio)), c), C(2.50662827463100050242e0));
  // Tails.
  Value* t = E.call_intrinsic(llvm::Intrinsic::sqrt,
                              b.CreateFMul(C(-2.0), E.call_intrinsic(llvm::Intrinsic::log, bb)));
  Value* x0 = b.CreateFSub(t, b.CreateFDiv(E.call_intrinsic(llvm::Intrinsic::log, t), t));
  Value* z = b.CreateFDiv(C(1.0), t);
  Value* r1 = b.CreateFDiv(
      polevl(E, d, z,
             {4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
              4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
              -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4}),
      polevl(E, d, z,
             {1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
              1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
              -3.80806407691578277194e-2, -9.33259480895457427372e-4}));
  Value* r2 =
      b.CreateFDiv(polevl(E, d, z,
                          {3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
                           1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
                           3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9}),
                   polevl(E, d, z,
                          {1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
                           2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
                           2.89247864745380683936e-6, 6.79019408009981274425e-9}));
  Value* x1 = b.CreateFMul(z, b.CreateSelect(b.CreateFCmpOLT(t, C(8.0)), r1, r2));
  Value* tail = b.CreateFSub(x0, x1);
  tail = b.CreateSelect(flip, b.CreateFNeg(tail), tail);
  Value* nd = b.CreateSelect(b.CreateFCmpOLT(C(exp_neg_two), bb), mid, tail);
  const double inf = std::numeric_limits<double>::infinity();
  nd = b.CreateSelect(b.CreateFCmpOLE(a, C(0.0)), C(-inf),
                      b.CreateSelect(b.CreateFCmpOLE(C(1.0), a), C(inf), nd));
  Value* out_of_domain = b.CreateFCmpOGT(E.call_intrinsic(llvm::Intrinsic::fabs, x), C(1.0));
  return b.CreateSelect(out_of_domain, C(std::numeric_limits<double>::quiet_NaN()),
                        b.CreateFMul(nd, C(M_SQRT1_2)));
}

JF_UNARY_FORMULA(Floor) { return E.call_intrinsic(llvm::Intrinsic::floor, x); }
JF_UNARY_FORMULA(Ceil) { return E.call_intrinsic(llvm::Intrinsic::ceil, x); }
// Half to even, as TF (rint in the default rounding mode); integers are already rounded.
JF_UNARY_FORMULA(Round) { return is_f(e) ? E.call_intrinsic(llvm::Intrinsic::rint, x) : x; }

// TF's sign: NaN stays NaN, +-0 gives +0.
JF_UNARY_FORMULA(Sign) {
  auto& b = E.builder();
  llvm::Constant* one = llvm::ConstantInt::get(x->getType(), 1);
  llvm::Constant* minus = llvm::ConstantInt::get(x->getType(), -1, true);
  if (!is_f(e))
    return b.CreateSelect(b.CreateICmpSGT(x, zero(x)), one,
                          b.CreateSelect(b.CreateICmpSLT(x, zero(x)), minus, zero(x)));
  Value* rest = b.CreateSelect(b.CreateFCmpOLT(x, zero(x)), E.fconst(e->dtype, -1.0),
                               b.CreateSelect(b.CreateFCmpUNO(x, x), x, zero(x)));
  return b.CreateSelect(b.CreateFCmpOGT(x, zero(x)), E.fconst(e->dtype, 1.0), rest);
}

JF_UNARY_FORMULA(Reciprocal) { return E.builder().CreateFDiv(E.fconst(e->dtype, 1.0), x); }

// Float predicates: the operand is float, the result (e->dtype) bool.
JF_UNARY_FORMULA(IsNan) { return E.builder().CreateFCmpUNO(x, x); }
JF_UNARY_FORMULA(IsInf) {
  return E.builder().CreateFCmpOEQ(E.call_intrinsic(llvm::Intrinsic::fabs, x),
                                   llvm::ConstantFP::getInfinity(x->getType()));
}
JF_UNARY_FORMULA(IsFinite) {
  return E.builder().CreateFCmpOLT(E.call_intrinsic(llvm::Intrinsic::fabs, x),
                                   llvm::ConstantFP::getInfinity(x->getType()));
}

JF_UNARY_FORMULA(LogicalNot) { return E.builder().CreateNot(x); }

// ---- binary --------------------------------------------------------------------------------
JF_BINARY_FORMULA(AddV2) { return is_float(in) ? E.builder().CreateFAdd(x, y) : E.builder().CreateAdd(x, y); }
JF_BINARY_FORMULA(Sub) { return is_float(in) ? E.builder().CreateFSub(x, y) : E.builder().CreateSub(x, y); }
JF_BINARY_FORMULA(Mul) { return is_float(in) ? E.builder().CreateFMul(x, y) : E.builder().CreateMul(x, y); }
JF_BINARY_FORMULA(RealDiv) { return E.builder().CreateFDiv(x, y); }

// Integer division as eager does it: a zero divisor fails the check (TF's error), lowest / -1
// wraps (as numpy; the hardware would trap), the quotient rounds toward -inf.
namespace {
struct IntDivision {
  Value *zero_divisor, *minus_one, *q, *r, *divisor;
};
IntDivision int_division(ElementalEmitter& E, const KExpr* e, Value* x, Value* y) {
  auto& b = E.builder();
  IntDivision d;
  d.zero_divisor = b.CreateICmpEQ(y, zero(y));
  d.minus_one = b.CreateICmpEQ(y, llvm::ConstantInt::get(y->getType(), -1, true));
  E.fail_if(e, d.zero_divisor, CheckKind::kDivisionByZero);
  d.divisor =
      b.CreateSelect(b.CreateOr(d.zero_divisor, d.minus_one), llvm::ConstantInt::get(y->getType(), 1), y);
  d.q = b.CreateSDiv(x, d.divisor);
  d.r = b.CreateSRem(x, d.divisor);
  return d;
}
// Whether a nonzero remainder has the other sign than the divisor: floor rounding adjusts.
Value* floor_fix(ElementalEmitter& E, Value* r, Value* divisor) {
  auto& b = E.builder();
  return b.CreateAnd(b.CreateICmpNE(r, zero(r)),
                     b.CreateXor(b.CreateICmpSLT(r, zero(r)), b.CreateICmpSLT(divisor, zero(divisor))));
}
}  // namespace

JF_BINARY_FORMULA(FloorDiv) {
  auto& b = E.builder();
  if (is_float(in)) return E.call_intrinsic(llvm::Intrinsic::floor, b.CreateFDiv(x, y));
  IntDivision d = int_division(E, e, x, y);
  Value* q = b.CreateSub(d.q, b.CreateZExt(floor_fix(E, d.r, d.divisor), x->getType()));
  q = b.CreateSelect(d.minus_one, b.CreateNeg(x), q);
  return b.CreateSelect(d.zero_divisor, zero(x), q);
}

JF_BINARY_FORMULA(FloorMod) {
  auto& b = E.builder();
  if (!is_float(in)) {
    IntDivision d = int_division(E, e, x, y);
    Value* m = b.CreateAdd(d.r, b.CreateSelect(floor_fix(E, d.r, d.divisor), d.divisor, zero(x)));
    return b.CreateSelect(b.CreateOr(d.zero_divisor, d.minus_one), zero(x), m);
  }
  Value* m = b.CreateFRem(x, y);
  Value* fix = b.CreateAnd(b.CreateFCmpUNE(m, zero(x)),
                           b.CreateXor(b.CreateFCmpOLT(m, zero(x)), b.CreateFCmpOLT(y, zero(x))));
  return b.CreateSelect(fix, b.CreateFAdd(m, y), m);
}

// Float: the record's math function (pow). Integer: square-and-multiply, as eager; a negative
// exponent fails the check (TF's error).
JF_BINARY_FORMULA(Pow) {
  if (is_float(in)) return E.math_call(e, x, y);
  auto& b = E.builder();
  E.fail_if(e, b.CreateICmpSLT(y, zero(y)), CheckKind::kNegativePower);
  llvm::Type* t = x->getType();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(b.getContext(), "ipow.head", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(b.getContext(), "ipow.body", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "ipow.done", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* r = b.CreatePHI(t, 2);
  llvm::PHINode* base = b.CreatePHI(t, 2);
  llvm::PHINode* ex = b.CreatePHI(t, 2);
  r->addIncoming(llvm::ConstantInt::get(t, 1), pre);
  base->addIncoming(x, pre);
  ex->addIncoming(y, pre);
  b.CreateCondBr(b.CreateICmpSGT(ex, zero(y)), body, done);
  b.SetInsertPoint(body);
  Value* odd = b.CreateICmpNE(b.CreateAnd(ex, llvm::ConstantInt::get(t, 1)), zero(y));
  r->addIncoming(b.CreateSelect(odd, b.CreateMul(r, base), r), body);
  base->addIncoming(b.CreateMul(base, base), body);
  ex->addIncoming(b.CreateAShr(ex, llvm::ConstantInt::get(t, 1)), body);
  b.CreateBr(head);
  b.SetInsertPoint(done);
  return r;
}

JF_BINARY_FORMULA(SquaredDifference) {
  auto& b = E.builder();
  if (!is_float(in)) {
    Value* d = b.CreateSub(x, y);
    return b.CreateMul(d, d);
  }
  Value* d = b.CreateFSub(x, y);
  return b.CreateFMul(d, d);
}

// C division (rounds toward zero); integers as FloorDiv: a zero divisor fails the check,
// lowest / -1 wraps.
JF_BINARY_FORMULA(TruncateDiv) {
  auto& b = E.builder();
  if (is_float(in)) return E.call_intrinsic(llvm::Intrinsic::trunc, b.CreateFDiv(x, y));
  IntDivision d = int_division(E, e, x, y);
  Value* q = b.CreateSelect(d.minus_one, b.CreateNeg(x), d.q);
  return b.CreateSelect(d.zero_divisor, zero(x), q);
}

// C remainder (the sign of x): fmod for floats.
JF_BINARY_FORMULA(TruncateMod) {
  auto& b = E.builder();
  if (is_float(in)) return b.CreateFRem(x, y);
  IntDivision d = int_division(E, e, x, y);
  return b.CreateSelect(b.CreateOr(d.zero_divisor, d.minus_one), zero(x), d.r);
}

// TF's *NoNan ops: 0 where y == 0, whatever x is.
JF_BINARY_FORMULA(DivNoNan) {
  auto& b = E.builder();
  return b.CreateSelect(b.CreateFCmpOEQ(y, zero(y)), zero(x), b.CreateFDiv(x, y));
}
JF_BINARY_FORMULA(MulNoNan) {
  auto& b = E.builder();
  return b.CreateSelect(b.CreateFCmpOEQ(y, zero(y)), zero(x), b.CreateFMul(x, y));
}

// x * log(y) (the record's math function: log, log1p), 0 where x == 0.
JF_BINARY_FORMULA(Xlogy) {
  auto& b = E.builder();
  return b.CreateSelect(b.CreateFCmpOEQ(x, zero(x)), zero(x), b.CreateFMul(x, E.math_call(e, y)));
}
JF_BINARY_FORMULA(Xlog1py) {
  auto& b = E.builder();
  return b.CreateSelect(b.CreateFCmpOEQ(x, zero(x)), zero(x), b.CreateFMul(x, E.math_call(e, y)));
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

// ---- bitwise (integers) --------------------------------------------------------------------
JF_UNARY_FORMULA(Invert) { return E.builder().CreateNot(x); }
JF_BINARY_FORMULA(BitwiseAnd) { return E.builder().CreateAnd(x, y); }
JF_BINARY_FORMULA(BitwiseOr) { return E.builder().CreateOr(x, y); }
JF_BINARY_FORMULA(BitwiseXor) { return E.builder().CreateXor(x, y); }

namespace {
// The shift amount clamped to [0, bits - 1], as TF's kernels (and the eager ones) clamp it:
// LLVM's shl/ashr by bits or more is poison.
Value* clamp_shift(ElementalEmitter& E, Value* y) {
  auto& b = E.builder();
  llvm::Constant* top = llvm::ConstantInt::get(y->getType(), y->getType()->getScalarSizeInBits() - 1);
  Value* lo = b.CreateSelect(b.CreateICmpSLT(y, zero(y)), zero(y), y);
  return b.CreateSelect(b.CreateICmpSGT(lo, top), top, lo);
}
}  // namespace
JF_BINARY_FORMULA(LeftShift) { return E.builder().CreateShl(x, clamp_shift(E, y)); }
JF_BINARY_FORMULA(RightShift) { return E.builder().CreateAShr(x, clamp_shift(E, y)); }

}  // namespace jf
