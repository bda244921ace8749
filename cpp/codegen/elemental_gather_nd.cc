// GatherNd's element: output index [i..., j...] reads params[v_0, ..., v_{C-1}, j...], where
// v_k is component k of the index vector indices[i..., :]. Each component is checked against
// its params dim (an error, as eager, not XLA's clamp) and clamped so a failing element
// still reads in bounds.
#include "codegen/elemental.h"

namespace jf {

using llvm::Value;

Value* ElementalEmitter::gather_nd(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  const KExpr* p = e->operands[0];
  const KExpr* ix = e->operands[1];
  const int outer = ix->rank() - 1;
  const int depth = outer + p->rank() - e->rank();  // the index vector's length C
  Value* zero = b_.getInt64(0);
  std::vector<Value*> ii(idx.begin(), idx.begin() + outer);
  ii.push_back(zero);
  std::vector<Value*> pi;
  Value* bad = nullptr;
  for (int k = 0; k < depth; ++k) {
    ii[outer] = ix->dims[outer] < 0 ? zero : b_.getInt64(k);
    Value* v = b_.CreateSExt(emit(ix, ii, root), b_.getInt64Ty());
    Value* out = b_.CreateOr(b_.CreateICmpSLT(v, zero), b_.CreateICmpSGE(v, dim(p->dims[k])));
    bad = bad ? b_.CreateOr(bad, out) : out;
    pi.push_back(v);
  }
  if (bad) {
    fail_if(e, bad, CheckKind::kIndexOutOfRange);
    for (int k = 0; k < depth; ++k) pi[k] = p->dims[k] < 0 ? zero : b_.CreateSelect(bad, zero, pi[k]);
  }
  pi.insert(pi.end(), idx.begin() + outer, idx.end());
  return emit(p, pi, root);
}

}  // namespace jf
