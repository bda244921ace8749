// CPU code for a row group (fuse_rows.cc): one function over a block of rows, each row taken
// through every part in order before the next. A reduction part folds the row into one value
// per row, kept in a register for the later parts (and stored, for readers outside the group);
// a full-row part walks the row's elements, a loop LLVM vectorizes. Full-row values only the
// group reads live in one row of scratch (malloc'ed once per call, freed at its end), so the
// data crosses memory once in and once out while the row stays in cache between the parts.
//
// Two refinements save passes over the row. A reduction part right after a full-row part
// accumulates in that part's loop (softmax sums its exponentials as it stores them). A
// row-local value whose last reader is a full-row part writing a real buffer of its type lives
// in that buffer's row instead of scratch: softmax stores exp(x - max) straight into its
// output row and scales it in place, so the output's cache lines are fetched while the
// exponentials are computed rather than in the short scaling loop.
#include <llvm/IR/IRBuilder.h>

#include <algorithm>
#include <map>
#include <set>

#include "codegen/cpu/cpu_loops.h"
#include "codegen/elemental.h"
#include "codegen/formulas.h"
#include "codegen/loops.h"

namespace jf {

using llvm::Value;

namespace {

// Whether the expression tree of part q (its roots, down to materialized values) reads v.
bool part_reads(const Step& q, const KExpr* v) {
  std::vector<const KExpr*> todo{q.root};
  todo.insert(todo.end(), q.siblings.begin(), q.siblings.end());
  std::set<const KExpr*> tops(todo.begin(), todo.end()), seen;
  while (!todo.empty()) {
    const KExpr* e = todo.back();
    todo.pop_back();
    if (e == v && !tops.count(e)) return true;
    if (!tops.count(e) && (e->kind == KKind::kBuffer || e->materialized)) {
      if (e->buffer == v->buffer) return true;
      continue;
    }
    if (!seen.insert(e).second) continue;
    for (const KExpr* o : e->operands) todo.push_back(o);
  }
  return false;
}

bool is_per_row(const KExpr* r, int k) { return r->rank() == k || r->dims[k] < 0; }

// A part whose roots are all reductions over the last axis only (the group's row reductions).
bool is_reduce_part(const Step& q) {
  std::vector<const KExpr*> roots{q.root};
  roots.insert(roots.end(), q.siblings.begin(), q.siblings.end());
  for (const KExpr* e : roots) {
    if (e->kind != KKind::kReduce || e->axes.size() != 1) return false;
    if (e->axes[0] != e->operands[0]->rank() - 1) return false;
  }
  return true;
}

// One row reduction accumulated element by element in an enclosing loop: as
// ElementalEmitter::reduce, float max/min as maxnum/minnum plus a NaN flag so LLVM vectorizes
// it, the other combines reassociable.
class RowAccumulator {
 public:
  RowAccumulator(llvm::IRBuilder<>& b, ElementalEmitter& em, llvm::BasicBlock* entry, const KExpr* e)
      : b_(b), em_(em), e_(e) {
    llvm::IRBuilder<> eb(entry, entry->getFirstInsertionPt());
    t_ = em.reg_type(e->dtype);
    acc_ = eb.CreateAlloca(t_);
    const OpId combine = reduce_formula(e->op)->combine;
    max_ = combine == OpId::Maximum;
    fminmax_ = is_float(e->dtype) && (max_ || combine == OpId::Minimum);
    if (fminmax_) nan_ = eb.CreateAlloca(b.getInt1Ty());
  }
  void init() {
    b_.CreateStore(em_.reduce_identity(e_), acc_);
    if (fminmax_) b_.CreateStore(b_.getInt1(false), nan_);
  }
  void add(Value* v) {
    Value* cur = b_.CreateLoad(t_, acc_);
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    Value* next;
    if (fminmax_) {
      next = em_.call_intrinsic(max_ ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, cur, v);
      b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), nan_), b_.CreateFCmpUNO(v, v)), nan_);
      fmf.setNoNaNs(), fmf.setNoSignedZeros();
    } else {
      next = em_.reduce_combine(e_, cur, v);
    }
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(next))
      if (is_float(e_->dtype) && llvm::isa<llvm::FPMathOperator>(inst)) inst->setFastMathFlags(fmf);
    b_.CreateStore(next, acc_);
  }
  Value* finish() {
    Value* r = b_.CreateLoad(t_, acc_);
    if (fminmax_) r = b_.CreateSelect(b_.CreateLoad(b_.getInt1Ty(), nan_), llvm::ConstantFP::getNaN(t_), r);
    return em_.reduce_finish(e_, r);
  }

 private:
  llvm::IRBuilder<>& b_;
  ElementalEmitter& em_;
  const KExpr* e_;
  llvm::Type* t_;
  llvm::AllocaInst* acc_;
  llvm::AllocaInst* nan_ = nullptr;
  bool max_ = false, fminmax_ = false;
};

}  // namespace

void emit_row_group_step(llvm::Module& m, const Step& s, const std::string& name, int status_slot) {
  llvm::IRBuilder<> b(m.getContext());
  const RangeFunction f = begin_range_function(m, b, name);
  Value *begin = f.begin, *end = f.end;
  ElementalEmitter em(b, f.bufs, f.params, f.entry);
  em.set_status_slot(status_slot);
  const int k = static_cast<int>(s.row_dims.size());
  Value* width = em.dim(s.width);
  const size_t np = s.parts.size();

  // A reduction part right after a full-row part runs in that part's loop.
  std::vector<char> merged(np, 0);
  for (size_t i = 1; i < np; ++i)
    merged[i] = !merged[i - 1] && !is_per_row(s.parts[i - 1].root, k) && is_reduce_part(s.parts[i]);

  // Row-local values hosted in the row of the last part's root that reads them (each host
  // once; that root is emitted last in its part, so every read of the value in an element
  // precedes the store that overwrites it).
  std::set<const KExpr*> local(s.row_local.begin(), s.row_local.end()), hosts;
  std::map<const KExpr*, const KExpr*> host_of;
  for (const KExpr* v : s.row_local) {
    int last = -1;
    for (size_t i = 0; i < np; ++i)
      if (part_reads(s.parts[i], v)) last = static_cast<int>(i);
    if (last < 0) continue;
    const Step& q = s.parts[last];
    const KExpr* h = q.siblings.empty() ? q.root : q.siblings.back();
    if (is_per_row(q.root, k) || local.count(h) || hosts.count(h) || h->buffer < 0) continue;
    if (em.mem_type(h->dtype) != em.mem_type(v->dtype) || h->rank() != v->rank()) continue;
    host_of[v] = h;
    hosts.insert(h);
  }

  // One row of scratch per other row-local value, each at a 64-byte boundary.
  Value* scratch = nullptr;
  std::vector<std::pair<const KExpr*, Value*>> scratch_rows;
  {
    const llvm::DataLayout& dl = m.getDataLayout();
    std::vector<std::pair<const KExpr*, Value*>> offsets;
    Value* total = b.getInt64(0);
    for (const KExpr* e : s.row_local) {
      if (host_of.count(e)) continue;
      offsets.push_back({e, total});
      Value* bytes = b.CreateMul(width, b.getInt64(dl.getTypeAllocSize(em.mem_type(e->dtype))));
      total = b.CreateAdd(total, b.CreateAnd(b.CreateAdd(bytes, b.getInt64(63)), b.getInt64(~int64_t(63))));
    }
    if (!offsets.empty()) {
      auto malloc_fn =
          m.getOrInsertFunction("malloc", llvm::FunctionType::get(b.getPtrTy(), {b.getInt64Ty()}, false));
      scratch = b.CreateCall(malloc_fn, {b.CreateAdd(total, b.getInt64(64))});
      for (auto& [e, off] : offsets)
        em.set_row_local(e->buffer, b.CreateInBoundsGEP(b.getInt8Ty(), scratch, off));
    }
  }
  std::map<const KExpr*, Value*> host_ptr;
  for (auto& [v, h] : host_of)
    host_ptr[v] = b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), f.bufs, h->buffer));

  for_range(b, begin, end, "row", [&](Value* row) {
    std::vector<Value*> ridx = em.delinearize_slots(s.row_dims, row);
    Value* row_base = b.CreateMul(row, width);
    em.set_row_base(row_base);
    for (auto& [v, p] : host_ptr)
      em.set_row_local(v->buffer, b.CreateInBoundsGEP(em.mem_type(v->dtype), p, row_base));
    auto roots_of = [](const Step& q) {
      std::vector<const KExpr*> roots{q.root};
      roots.insert(roots.end(), q.siblings.begin(), q.siblings.end());
      return roots;
    };
    auto row_index = [&](const KExpr* r) {
      std::vector<Value*> idx = ridx;
      if (r->rank() == k + 1) idx.push_back(b.getInt64(0));
      return idx;
    };
    for (size_t i = 0; i < np; ++i) {
      const Step& q = s.parts[i];
      if (merged[i]) continue;  // emitted with part i - 1
      if (is_per_row(q.root, k)) {
        for (const KExpr* e : roots_of(q)) {
          Value* v = em.emit(e, row_index(e), e);
          em.store(e, row, v);
          em.pin(e, v);  // later parts read it in this row
        }
        continue;
      }
      std::vector<RowAccumulator> accs;
      const bool with_next = i + 1 < np && merged[i + 1];
      if (with_next)
        for (const KExpr* e : roots_of(s.parts[i + 1])) accs.emplace_back(b, em, f.entry, e);
      for (RowAccumulator& a : accs) a.init();
      for_range(b, b.getInt64(0), width, "col", [&](Value* j) {
        std::vector<Value*> idx = ridx;
        idx.push_back(j);
        em.emit_roots(q, idx, b.CreateAdd(row_base, j));
        if (!with_next) return;
        std::vector<const KExpr*> reds = roots_of(s.parts[i + 1]);
        for (size_t a = 0; a < reds.size(); ++a) {
          const KExpr* e = reds[a];
          std::vector<Value*> xi = em.reduce_kept_index(e, row_index(e));
          xi[e->axes[0]] = e->operands[0]->dims[e->axes[0]] < 0 ? b.getInt64(0) : j;
          accs[a].add(em.emit(e->operands[0], xi, e));
        }
      });
      if (with_next) {
        std::vector<const KExpr*> reds = roots_of(s.parts[i + 1]);
        for (size_t a = 0; a < reds.size(); ++a) {
          Value* v = accs[a].finish();
          em.store(reds[a], row, v);
          em.pin(reds[a], v);
        }
      }
    }
    em.clear_pinned();
  });
  if (scratch) {
    auto free_fn =
        m.getOrInsertFunction("free", llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false));
    b.CreateCall(free_fn, {scratch});
  }
  b.CreateRetVoid();
}

}  // namespace jf
