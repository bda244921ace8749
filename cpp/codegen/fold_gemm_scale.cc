// GEMM scale folding for the GPU: a loop step that only multiplies a matmul's product by a
// constant scalar (an optimizer's 0.1 * gradient) becomes the GEMM's alpha, so cuBLAS writes
// the scaled product directly and the pass over it, a read and a write of the whole matrix,
// is gone. cuBLAS computes alpha * (A B) with one extra rounding per element, as the separate
// multiply does.
#include <sstream>

#include "codegen/kernel_ir.h"

namespace jf {

namespace {
bool is_scalar_splat(const KExpr* e) {
  if (e->kind != KKind::kScalar || !is_float(e->dtype)) return false;
  for (int d : e->dims)
    if (d >= 0) return false;
  return true;
}

// How many places read `e`'s buffer: operands of other exprs, library arguments, outputs.
int readers(const ClusterProgram& p, const KExpr* e) {
  int n = 0;
  for (const auto& x : p.exprs)
    for (const KExpr* o : x->operands) n += o == e;
  for (const Step& s : p.steps) {
    for (const KExpr* a : s.args) n += a == e;
    for (const Step& q : s.parts)
      for (const KExpr* a : q.args) n += a == e;
  }
  for (const KExpr* o : p.output_exprs) n += o == e;
  return n;
}
}  // namespace

int fold_gemm_scales(ClusterProgram* p) {
  std::ostringstream os;
  int folded = 0;
  for (size_t k = 0; k < p->steps.size(); ++k) {
    Step& mul = p->steps[k];
    const KExpr* r = mul.root;
    if (mul.kind != Step::kLoop || !mul.siblings.empty() || r->kind != KKind::kBinary || r->op != OpId::Mul ||
        !is_float(r->dtype) || r->operands.size() != 2)
      continue;
    const int side = is_scalar_splat(r->operands[0]) ? 0 : is_scalar_splat(r->operands[1]) ? 1 : -1;
    if (side < 0) continue;
    KExpr* product = r->operands[1 - side];
    // A rank-0 scalar broadcasts to the product's shape: the multiply's dims hold the same
    // sizes (possibly in other slots), so its buffer takes the product as it is.
    if (!product->materialized || product->rank() != r->rank() || product->dtype != r->dtype) continue;
    Step* gemm = nullptr;
    for (size_t j = 0; j < k; ++j)
      if (p->steps[j].kind == Step::kLibrary && p->steps[j].root == product) gemm = &p->steps[j];
    if (!gemm || !gemm->siblings.empty() ||
        (gemm->node->op != OpId::MatMul && gemm->node->op != OpId::BatchMatMulV2))
      continue;
    if (readers(*p, product) != 1) continue;  // the multiply alone reads the product
    gemm->alpha *= r->operands[side]->scalar;
    gemm->root = mul.root;                      // the GEMM writes the multiply's buffer
    p->buffer_expr[product->buffer] = nullptr;  // never allocated now
    os << "|A" << product->id << ">" << r->id;
    p->steps.erase(p->steps.begin() + static_cast<std::ptrdiff_t>(k));
    --k;
    ++folded;
  }
  p->fingerprint += os.str();
  return folded;
}

}  // namespace jf
