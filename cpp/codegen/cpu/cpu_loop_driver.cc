// A loop driver: the iterations of a While that runs whole, as one function of the module
// holding the step's kernels. Each iteration calls the kernels and small products, writes a
// carried TensorArray's row, tests the status word and the condition and swaps the carried
// buffers' pointers, with no return to the runtime between iterations. The kernels are called,
// not inlined: inlined, the counter loop of docs/loops.md ran no faster (each iteration still
// reads its carried values back from the buffers the last one wrote), and every kernel's code
// would be generated twice.
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
  auto buffer = [&](int index) { return b.CreateLoad(ptr, slot(index)); };
  auto load_bool = [&](int index) {  // the first byte of a buffer, as i1
    return b.CreateICmpNE(b.CreateLoad(b.getInt8Ty(), buffer(index)), b.getInt8(0));
  };
  // begin: the most iterations to run (negative: no bound); end: the frame's address.
  Value* limit = f.begin;
  Value* frame = b.CreateIntToPtr(f.end, ptr);
  auto at = [&](int i) { return b.CreateConstInBoundsGEP1_64(i64, frame, i); };
  auto step_slot = [&](size_t k, int i) {
    return at(kLoopFrameHead + kLoopFrameStride * static_cast<int>(k) + i);
  };
  auto count = [&](LoopFrame c) {
    b.CreateStore(b.CreateAdd(b.CreateLoad(i64, at(c)), b.getInt64(1)), at(c));
  };
  Value* status = b.CreateLoad(ptr, slot(p.num_buffers));
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, "iteration", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "steps", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
  b.CreateBr(head);

  b.SetInsertPoint(head);
  llvm::PHINode* it = b.CreatePHI(i64, 2, "it");
  it->addIncoming(b.getInt64(0), f.entry);
  llvm::PHINode* done = llvm::PHINode::Create(i64, 4, "done", exit);
  Value* go = b.CreateOr(b.CreateICmpSLT(limit, b.getInt64(0)), b.CreateICmpSLT(it, limit));
  b.CreateCondBr(go, body, exit);
  done->addIncoming(it, head);

  b.SetInsertPoint(body);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    llvm::BasicBlock* after = nullptr;
    if (s.guard >= 0) {  // a step of an inlined If's branch runs when the condition has its value
      Value* taken = load_bool(s.guard);
      if (!s.guard_when) taken = b.CreateNot(taken);
      llvm::BasicBlock* run = llvm::BasicBlock::Create(ctx, "guarded", fn);
      llvm::BasicBlock* skip = llvm::BasicBlock::Create(ctx, "skipped", fn);
      after = llvm::BasicBlock::Create(ctx, "after", fn);
      b.CreateCondBr(taken, run, skip);
      b.SetInsertPoint(skip);
      count(kFrameSkipped);
      b.CreateBr(after);
      b.SetInsertPoint(run);
    }
    const std::string entry = prefix + "_step" + std::to_string(k);
    llvm::Function* kernel = m.getFunction(entry);
    if (!kernel)  // a small product's, defined later (add_small_dot_stubs) or linked in by the upgrade
      kernel = llvm::Function::Create(fn->getFunctionType(), llvm::Function::ExternalLinkage, entry, m);
    if (s.kind == Step::kLoop) {
      b.CreateCall(kernel, {f.bufs, f.params, b.getInt64(0), b.CreateLoad(i64, step_slot(k, 0))});
    } else if (is_small_dot_step(s)) {  // rows [0, m) of C, the product's own params
      b.CreateCall(kernel, {f.bufs, step_slot(k, 0), b.getInt64(0), b.CreateLoad(i64, step_slot(k, kDotM))});
      count(kFrameDots);
    } else {  // a TensorArrayWrite of the carried array: one row copied in place
      Value* ix =
          b.CreateLoad(s.args[1]->dtype == DType::kInt64 ? i64 : b.getInt32Ty(), buffer(s.args[1]->buffer));
      Value* j = b.CreateSExt(ix, i64);
      Value* rows = b.CreateLoad(i64, step_slot(k, 0));
      Value* row = b.CreateLoad(i64, step_slot(k, 1));
      llvm::BasicBlock* write = llvm::BasicBlock::Create(ctx, "write", fn);
      llvm::BasicBlock* bad = llvm::BasicBlock::Create(ctx, "bad_index", fn);
      llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx, "written", fn);
      b.CreateCondBr(b.CreateICmpULT(j, rows), write, bad);
      b.SetInsertPoint(write);
      Value* dst = b.CreateInBoundsGEP(b.getInt8Ty(), buffer(s.root->buffer), b.CreateMul(j, row));
      b.CreateMemCpy(dst, llvm::MaybeAlign(1), buffer(s.args[2]->buffer), llvm::MaybeAlign(1), row);
      b.CreateBr(next);
      b.SetInsertPoint(bad);
      if (s.node->attrs.get<int64_t>("mode", 0) == 0) {  // strict: the runtime raises eager's error
        b.CreateStore(j, at(kFrameBadIndex));
        b.CreateStore(b.getInt64(static_cast<int64_t>(k)), at(kFrameBadStep));
        done->addIncoming(it, bad);
        b.CreateBr(exit);
      } else {  // a gradient's dropping write skips it
        b.CreateBr(next);
      }
      b.SetInsertPoint(next);
    }
    if (after) {
      b.CreateBr(after);
      b.SetInsertPoint(after);
    }
  }
  // A failed check ends the loop before this iteration counts (the runtime raises its error).
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx, "checked", fn);
  Value* failed = b.CreateICmpNE(b.CreateLoad(i64, status), b.getInt64(0));
  done->addIncoming(it, b.GetInsertBlock());
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
  done->addIncoming(next, ok);
  b.CreateCondBr(more, head, exit);

  b.SetInsertPoint(exit);
  b.CreateStore(done, at(kFrameIterations));
  b.CreateRetVoid();
}

}  // namespace jf
