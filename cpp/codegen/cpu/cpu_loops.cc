// CPU loop nests: output elements are walked as rows of the innermost output dim, so the
// inner loop is contiguous and LLVM's loop vectorizer can widen it. A reduction that keeps
// its operand's innermost dim (a column sum, e.g. a bias gradient) is interchanged: the
// reduced dims go outside and the row of accumulators inside, so it reads the operand row
// by row instead of striding down columns.
#include "codegen/cpu/cpu_loops.h"

#include <llvm/IR/IRBuilder.h>

#include <algorithm>
#include <set>

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

// Asks the loop vectorizer to run the loop's last partial vector masked rather than as a
// scalar remainder: a short row (an LSTM cell's 10 units) is then one or two vectors.
void fold_tail_by_masking(llvm::IRBuilder<>& b, llvm::BranchInst* latch) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Metadata* hint[] = {llvm::MDString::get(ctx, "llvm.loop.vectorize.predicate.enable"),
                            llvm::ConstantAsMetadata::get(b.getTrue())};
  llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx, hint)};
  llvm::MDNode* loop = llvm::MDNode::getDistinct(ctx, ops);
  loop->replaceOperandWith(0, loop);  // a loop's metadata names itself first
  latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
}

// Output elements [j0, jend) of one output row, `idx` holding the row's outer indexes.
void emit_row_elements(llvm::IRBuilder<>& b, ElementalEmitter& em, const Step& s, std::vector<Value*> idx,
                       Value* row_base, Value* j0, Value* jend, bool fold_tail) {
  const KExpr* root = s.root;
  int r = root->rank();
  llvm::BranchInst* latch = nullptr;
  for_range(
      b, j0, jend, "j",
      [&](Value* j) {
        if (r) idx[r - 1] = root->dims[r - 1] < 0 ? static_cast<Value*>(b.getInt64(0)) : j;
        em.emit_roots(s, idx, b.CreateAdd(row_base, j));
      },
      &latch);
  if (fold_tail) fold_tail_by_masking(b, latch);
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

// A scalar computed from constants and loaded scalars only: the same for every element, and
// cheap to compute once before the loop.
bool invariant_scalar(const KExpr* c, const KExpr* root) {
  if (c->rank() != 0) return false;
  if (c->kind == KKind::kScalar || c->kind == KKind::kBuffer || (c->materialized && c != root)) return true;
  if (c->kind != KKind::kUnary && c->kind != KKind::kBinary && c->kind != KKind::kCast &&
      c->kind != KKind::kSelect)
    return false;
  for (const KExpr* o : c->operands)
    if (!invariant_scalar(o, root)) return false;
  return true;
}

bool is_leaf(const KExpr* e, const KExpr* root) {
  return e->kind == KKind::kBuffer || e->kind == KKind::kScalar || (e->materialized && e != root);
}

// The condition of a select in the step whose condition is an invariant scalar (an inlined
// If's: cluster/if_to_select.h) and whose sides compute something and cannot fail, or null.
// The step's loop is then emitted once per value of it, each computing only its side.
const KExpr* versioning_condition(const Step& s) {
  std::vector<const KExpr*> todo{s.root};
  todo.insert(todo.end(), s.siblings.begin(), s.siblings.end());
  std::set<const KExpr*> seen;
  while (!todo.empty()) {
    const KExpr* e = todo.back();
    todo.pop_back();
    const bool root = e == s.root || std::find(s.siblings.begin(), s.siblings.end(), e) != s.siblings.end();
    if (!root && is_leaf(e, s.root)) continue;
    if (!seen.insert(e).second) continue;
    if (e->kind == KKind::kSelect && invariant_scalar(e->operands[0], s.root) &&
        (!is_leaf(e->operands[1], s.root) || !is_leaf(e->operands[2], s.root))) {
      std::set<const KExpr*> checked;
      if (!may_fail(e->operands[1], s.root, &checked) && !may_fail(e->operands[2], s.root, &checked))
        return e->operands[0];
    }
    for (const KExpr* o : e->operands) todo.push_back(o);
  }
  return nullptr;
}

// i / inner, branching around the division when i < inner.
Value* row_of(llvm::IRBuilder<>& b, Value* i, Value* inner) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* from = b.GetInsertBlock();
  llvm::BasicBlock* divide = llvm::BasicBlock::Create(b.getContext(), "row.div", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "row.known", fn);
  b.CreateCondBr(b.CreateICmpULT(i, inner), done, divide);
  b.SetInsertPoint(divide);
  Value* q = b.CreateUDiv(i, inner);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* row = b.CreatePHI(b.getInt64Ty(), 2, "row.index");
  row->addIncoming(b.getInt64(0), from);
  row->addIncoming(q, divide);
  return row;
}

}  // namespace

RangeFunction begin_range_function(llvm::Module& m, llvm::IRBuilder<>& b, const std::string& name) {
  auto* fty = llvm::FunctionType::get(b.getVoidTy(),
                                      {b.getPtrTy(), b.getPtrTy(), b.getInt64Ty(), b.getInt64Ty()}, false);
  // A declaration a loop driver made for it (a small product emitted later) gets the body.
  llvm::Function* fn = m.getFunction(name);
  if (!fn || !fn->isDeclaration() || fn->getFunctionType() != fty)
    fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
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

void emit_loop_step(llvm::Module& m, const Step& s, const std::string& name, int status_slot,
                    bool fold_tails) {
  llvm::IRBuilder<> b(m.getContext());
  const RangeFunction f = begin_range_function(m, b, name);
  Value *begin = f.begin, *end = f.end;
  ElementalEmitter em(b, f.bufs, f.params, f.entry);
  em.set_status_slot(status_slot);
  const KExpr* root = s.root;
  int r = root->rank();
  Value* inner = r ? em.dim(root->dims[r - 1]) : b.getInt64(1);
  // Rows: i is the first element of the current (possibly partial) row. Its row index skips
  // the division when i is in row 0: every call of a one-row kernel (a small loop's step)
  // starts there, and the division cost tens of cycles per call.
  auto emit_rows = [&]() {
    emit_loop(b, begin, end, "row", [&](Value* i) {
      Value* row = row_of(b, i, inner);
      Value* row_base = b.CreateMul(row, inner);
      Value* j0 = b.CreateSub(i, row_base);
      Value* want = b.CreateAdd(j0, b.CreateSub(end, i));
      Value* jend = b.CreateSelect(b.CreateICmpULT(want, inner), want, inner);
      std::vector<Value*> idx = em.delinearize(root, row, r > 0 ? r - 1 : 0);
      idx.resize(r);
      if (is_column_reduce(root))
        emit_row_column_reduce(b, em, root, idx, row_base, j0, jend);
      else
        emit_row_elements(b, em, s, idx, row_base, j0, jend, fold_tails);
      return b.CreateAdd(i, b.CreateSub(jend, j0));
    });
  };
  const KExpr* cond = versioning_condition(s);
  if (!cond) {
    emit_rows();
    b.CreateRetVoid();
    return;
  }
  // An If computed inline would otherwise compute both branches for every element.
  Value* c = em.emit(cond, {}, root);
  llvm::Function* fn = f.entry->getParent();
  llvm::BasicBlock* yes = llvm::BasicBlock::Create(m.getContext(), "version.true", fn);
  llvm::BasicBlock* no = llvm::BasicBlock::Create(m.getContext(), "version.false", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(m.getContext(), "version.done", fn);
  b.CreateCondBr(c, yes, no);
  for (bool v : {true, false}) {
    b.SetInsertPoint(v ? yes : no);
    em.fix_select(cond, v);
    emit_rows();
    b.CreateBr(done);
  }
  em.unfix_selects();
  b.SetInsertPoint(done);
  b.CreateRetVoid();
}

}  // namespace jf
