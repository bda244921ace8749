// CPU loop nests: output elements are walked as rows of the innermost output dim, so the
// inner loop is contiguous and LLVM's loop vectorizer can widen it. A reduction that keeps
// its operand's innermost dim (a column sum, e.g. a bias gradient) is interchanged: the
// reduced dims go outside and the row of accumulators inside, so it reads the operand row
// by row instead of striding down columns.
#include "codegen/cpu/cpu_loops.h"

#include <llvm/IR/IRBuilder.h>

#include <algorithm>

#include "codegen/elemental.h"
#include "codegen/loops.h"

namespace jf {
namespace {

using llvm::Value;

// Whether the reduction keeps its operand's innermost (non-unit) dim.
bool is_column_reduce(const KExpr* e) {
  if (e->kind != KKind::kReduce || e->dtype == DType::kBool || e->rank() == 0) return false;
  const KExpr* x = e->operands[0];
  int last = x->rank() - 1;
  return last >= 0 && x->dims[last] >= 0 && std::find(e->axes.begin(), e->axes.end(), last) == e->axes.end();
}

// Output elements [j0, jend) of one output row, `idx` holding the row's outer indexes.
void emit_row_elements(llvm::IRBuilder<>& b, ElementalEmitter& em, const Step& s, std::vector<Value*> idx,
                       Value* row_base, Value* j0, Value* jend) {
  const KExpr* root = s.root;
  int r = root->rank();
  for_range(b, j0, jend, "j", [&](Value* j) {
    if (r) idx[r - 1] = root->dims[r - 1] < 0 ? static_cast<Value*>(b.getInt64(0)) : j;
    em.emit_roots(s, idx, b.CreateAdd(row_base, j));
  });
}

// The same row of a column reduction: out[j] = identity; for every reduced position,
// out[j] = combine(out[j], x[...]); then the finish (Mean's division). Accumulating in the
// output row keeps the sequential order of the per-element loop, so results are identical.
void emit_row_column_reduce(llvm::IRBuilder<>& b, ElementalEmitter& em, const KExpr* e,
                            std::vector<Value*> idx, Value* row_base, Value* j0, Value* jend) {
  const KExpr* x = e->operands[0];
  int r = e->rank();
  std::vector<int> red_slots;
  for (int a : e->axes) red_slots.push_back(x->dims[a]);
  for_range(b, j0, jend, "init",
            [&](Value* j) { em.store(e, b.CreateAdd(row_base, j), em.reduce_identity(e)); });
  for_range(b, b.getInt64(0), em.reduce_extent(e), "red", [&](Value* red) {
    std::vector<Value*> ri = em.delinearize_slots(red_slots, red);
    for_range(b, j0, jend, "acc", [&](Value* j) {
      idx[r - 1] = j;
      std::vector<Value*> xi = em.reduce_kept_index(e, idx);
      for (size_t k = 0; k < e->axes.size(); ++k) xi[e->axes[k]] = ri[k];
      Value* at = b.CreateAdd(row_base, j);
      em.store(e, at, em.reduce_combine(e, em.load(e, at), em.emit(x, xi, e)));
    });
  });
  if (e->op == OpId::Mean)
    for_range(b, j0, jend, "finish", [&](Value* j) {
      Value* at = b.CreateAdd(row_base, j);
      em.store(e, at, em.reduce_finish(e, em.load(e, at)));
    });
}

}  // namespace

RangeFunction begin_range_function(llvm::Module& m, llvm::IRBuilder<>& b, const std::string& name) {
  auto* fty = llvm::FunctionType::get(b.getVoidTy(),
                                      {b.getPtrTy(), b.getPtrTy(), b.getInt64Ty(), b.getInt64Ty()}, false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addParamAttr(0, llvm::Attribute::NoAlias);
  fn->addParamAttr(1, llvm::Attribute::NoAlias);
  auto args = fn->arg_begin();
  RangeFunction f;
  f.bufs = args++;
  f.params = args++;
  f.begin = args++;
  f.end = args++;
  f.entry = llvm::BasicBlock::Create(m.getContext(), "entry", fn);
  b.SetInsertPoint(f.entry);
  return f;
}

void emit_loop_step(llvm::Module& m, const Step& s, const std::string& name, int status_slot) {
  llvm::IRBuilder<> b(m.getContext());
  const RangeFunction f = begin_range_function(m, b, name);
  Value *begin = f.begin, *end = f.end;
  ElementalEmitter em(b, f.bufs, f.params, f.entry);
  em.set_status_slot(status_slot);
  const KExpr* root = s.root;
  int r = root->rank();
  Value* inner = r ? em.dim(root->dims[r - 1]) : b.getInt64(1);
  // Rows: i is the first element of the current (possibly partial) row.
  emit_loop(b, begin, end, "row", [&](Value* i) {
    Value* row = b.CreateUDiv(i, inner);
    Value* row_base = b.CreateMul(row, inner);
    Value* j0 = b.CreateSub(i, row_base);
    Value* want = b.CreateAdd(j0, b.CreateSub(end, i));
    Value* jend = b.CreateSelect(b.CreateICmpULT(want, inner), want, inner);
    std::vector<Value*> idx = em.delinearize(root, row, r > 0 ? r - 1 : 0);
    idx.resize(r);
    if (is_column_reduce(root))
      emit_row_column_reduce(b, em, root, idx, row_base, j0, jend);
    else
      emit_row_elements(b, em, s, idx, row_base, j0, jend);
    return b.CreateAdd(i, b.CreateSub(jend, j0));
  });
  b.CreateRetVoid();
}

}  // namespace jf
