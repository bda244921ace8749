// A loop driver: the iterations of a While that runs whole, as one function of the module
// holding the step's kernels. Each iteration calls the kernels, tests the status word and the
// condition and swaps the carried buffers' pointers, with no return to the runtime between
// iterations. The kernels are called, not inlined: inlined, the counter loop of
// docs/loops.md ran no faster (each iteration still reads its carried values back from the
// buffers the last one wrote), and every kernel's code would be generated twice.
#include <llvm/IR/IRBuilder.h>

#include "codegen/cpu/cpu_loops.h"

namespace jf {

using llvm::Value;

void emit_loop_driver(llvm::Module& m, const ClusterProgram& p, const std::string& prefix,
                      const std::string& name) {
  const LoopPlan& plan = *p.loop;
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  const RangeFunction f = begin_range_function(m, b, name);
  llvm::Function* fn = f.entry->getParent();
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* ptr = b.getPtrTy();
  auto slot = [&](int buffer) { return b.CreateConstInBoundsGEP1_64(ptr, f.bufs, buffer); };
  auto load_bool = [&](int buffer) {  // the first byte of a buffer, as i1
    Value* at = b.CreateLoad(ptr, slot(buffer));
    return b.CreateICmpNE(b.CreateLoad(b.getInt8Ty(), at), b.getInt8(0));
  };
  // begin: the most iterations to run (negative: no bound); end: the address of two int64s,
  // the iterations run and the guarded steps skipped.
  Value* limit = f.begin;
  Value* out = b.CreateIntToPtr(f.end, ptr);
  Value* status = b.CreateLoad(ptr, slot(p.num_buffers));
  // Each kernel's element count, from the params (the same every iteration).
  std::vector<Value*> counts;
  for (const Step& s : p.steps) {
    Value* n = b.getInt64(1);
    for (int d : s.root->dims)
      if (d >= 0) n = b.CreateMul(n, b.CreateLoad(i64, b.CreateConstInBoundsGEP1_64(i64, f.params, d)));
    counts.push_back(n);
  }
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, "iteration", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "steps", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
  b.CreateBr(head);

  b.SetInsertPoint(head);
  llvm::PHINode* it = b.CreatePHI(i64, 2, "it");
  llvm::PHINode* skipped = b.CreatePHI(i64, 2, "skipped");
  it->addIncoming(b.getInt64(0), f.entry);
  skipped->addIncoming(b.getInt64(0), f.entry);
  llvm::PHINode* done = llvm::PHINode::Create(i64, 3, "done", exit);
  llvm::PHINode* skips = llvm::PHINode::Create(i64, 3, "skips", exit);
  Value* go = b.CreateOr(b.CreateICmpSLT(limit, b.getInt64(0)), b.CreateICmpSLT(it, limit));
  b.CreateCondBr(go, body, exit);
  done->addIncoming(it, head);
  skips->addIncoming(skipped, head);

  b.SetInsertPoint(body);
  Value* skip_count = skipped;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    llvm::Function* kernel = m.getFunction(prefix + "_step" + std::to_string(k));
    Value* args[] = {f.bufs, f.params, b.getInt64(0), counts[k]};
    if (s.guard < 0) {
      b.CreateCall(kernel, args);
      continue;
    }
    // A step of an inlined If's branch runs when the condition has its branch's value.
    Value* taken = load_bool(s.guard);
    if (!s.guard_when) taken = b.CreateNot(taken);
    llvm::BasicBlock* run = llvm::BasicBlock::Create(ctx, "guarded", fn);
    llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx, "after", fn);
    llvm::BasicBlock* from = b.GetInsertBlock();
    Value* one_more = b.CreateAdd(skip_count, b.getInt64(1));
    b.CreateCondBr(taken, run, after);
    b.SetInsertPoint(run);
    b.CreateCall(kernel, args);
    b.CreateBr(after);
    b.SetInsertPoint(after);
    llvm::PHINode* n = b.CreatePHI(i64, 2);
    n->addIncoming(skip_count, run);
    n->addIncoming(one_more, from);
    skip_count = n;
  }
  // A failed check ends the loop before this iteration counts (the runtime raises its error).
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx, "checked", fn);
  Value* failed = b.CreateICmpNE(b.CreateLoad(i64, status), b.getInt64(0));
  done->addIncoming(it, b.GetInsertBlock());
  skips->addIncoming(skip_count, b.GetInsertBlock());
  b.CreateCondBr(failed, exit, ok);

  b.SetInsertPoint(ok);
  Value* next = b.CreateAdd(it, b.getInt64(1));
  Value* more = load_bool(plan.cond);
  for (const auto& [a, c] : plan.swaps) {
    Value* pa = b.CreateLoad(ptr, slot(a));
    Value* pc = b.CreateLoad(ptr, slot(c));
    b.CreateStore(pc, slot(a));
    b.CreateStore(pa, slot(c));
  }
  it->addIncoming(next, ok);
  skipped->addIncoming(skip_count, ok);
  done->addIncoming(next, ok);
  skips->addIncoming(skip_count, ok);
  b.CreateCondBr(more, head, exit);

  b.SetInsertPoint(exit);
  b.CreateStore(done, out);
  b.CreateStore(skips, b.CreateConstInBoundsGEP1_64(i64, out, 1));
  b.CreateRetVoid();
}

}  // namespace jf
