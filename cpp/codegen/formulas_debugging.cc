// The compiled form of CheckNumerics: its operand unchanged, and a run-time check that ORs
// kNaN or kInf into the status word for each non-finite element (the runner raises TF's error).
#include "codegen/formulas.h"

namespace jf {

using llvm::Value;

JF_UNARY_FORMULA(CheckNumerics) {
  auto& b = E.builder();
  Value* inf = llvm::ConstantFP::getInfinity(x->getType());
  // |x| < inf is false for NaN and +-Inf alike: one compare on the common path.
  Value* bad = b.CreateFCmpUGE(E.call_intrinsic(llvm::Intrinsic::fabs, x), inf);
  Value* kind = b.CreateSelect(b.CreateFCmpUNO(x, x), b.getInt64(static_cast<int>(CheckKind::kNaN)),
                               b.getInt64(static_cast<int>(CheckKind::kInf)));
  E.fail_if_merge(e, bad, kind);
  return x;
}

}  // namespace jf
