// CPU code for a row group (fuse_rows.cc): one function over a block of rows, each row taken
// through every part in order before the next. A reduction part folds the row into one value
// per row, kept in a register for the later parts (and stored, for readers outside the group);
// a full-row part walks the row's elements, a loop LLVM vectorizes. Full-row values only the
// group reads live in one row of scratch (malloc'ed once per call, freed at its end), so the
// data crosses memory once in and once out while the row stays in cache between the parts.
#include <llvm/IR/IRBuilder.h>

#include "codegen/cpu/cpu_loops.h"
#include "codegen/elemental.h"
#include "codegen/loops.h"

namespace jf {

using llvm::Value;

void emit_row_group_step(llvm::Module& m, const Step& s, const std::string& name, int status_slot) {
  llvm::IRBuilder<> b(m.getContext());
  const RangeFunction f = begin_range_function(m, b, name);
  Value *begin = f.begin, *end = f.end;
  ElementalEmitter em(b, f.bufs, f.params, f.entry);
  em.set_status_slot(status_slot);
  const int k = static_cast<int>(s.row_dims.size());
  Value* width = em.dim(s.width);

  // One row of scratch per row-local value, each at a 64-byte boundary.
  Value* scratch = nullptr;
  if (!s.row_local.empty()) {
    const llvm::DataLayout& dl = m.getDataLayout();
    std::vector<Value*> offsets;
    Value* total = b.getInt64(0);
    for (const KExpr* e : s.row_local) {
      offsets.push_back(total);
      Value* bytes = b.CreateMul(width, b.getInt64(dl.getTypeAllocSize(em.mem_type(e->dtype))));
      total = b.CreateAdd(total, b.CreateAnd(b.CreateAdd(bytes, b.getInt64(63)), b.getInt64(~int64_t(63))));
    }
    auto malloc_fn =
        m.getOrInsertFunction("malloc", llvm::FunctionType::get(b.getPtrTy(), {b.getInt64Ty()}, false));
    scratch = b.CreateCall(malloc_fn, {b.CreateAdd(total, b.getInt64(64))});
    for (size_t i = 0; i < s.row_local.size(); ++i)
      em.set_row_local(s.row_local[i]->buffer, b.CreateInBoundsGEP(b.getInt8Ty(), scratch, offsets[i]));
  }

  for_range(b, begin, end, "row", [&](Value* row) {
    std::vector<Value*> ridx = em.delinearize_slots(s.row_dims, row);
    Value* row_base = b.CreateMul(row, width);
    em.set_row_base(row_base);
    for (const Step& q : s.parts) {
      const KExpr* r = q.root;
      const bool per_row = r->rank() == k || r->dims[k] < 0;
      if (per_row) {
        std::vector<Value*> idx = ridx;
        if (r->rank() == k + 1) idx.push_back(b.getInt64(0));
        std::vector<const KExpr*> roots{r};
        roots.insert(roots.end(), q.siblings.begin(), q.siblings.end());
        for (const KExpr* e : roots) {
          Value* v = em.emit(e, idx, e);
          em.store(e, row, v);
          em.pin(e, v);  // later parts read it in this row
        }
        continue;
      }
      for_range(b, b.getInt64(0), width, "col", [&](Value* j) {
        std::vector<Value*> idx = ridx;
        idx.push_back(j);
        em.emit_roots(q, idx, b.CreateAdd(row_base, j));
      });
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
