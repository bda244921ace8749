// Loop skeletons for the backends' drivers (CPU element ranges, GPU grid-stride loops).
#pragma once
#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <string>

namespace jf {

// i = start; while (i < end) { i = body(i); } at the builder's position (signed i64
// compare). body emits one iteration and returns the next i; the builder ends after the loop.
// Returns i as the loop leaves it (the first i not below end), for a loop that follows.
inline llvm::Value* emit_loop(llvm::IRBuilder<>& b, llvm::Value* start, llvm::Value* end,
                              const std::string& name, const std::function<llvm::Value*(llvm::Value*)>& body,
                              llvm::BranchInst** latch = nullptr) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, name + ".head", fn);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, name + ".body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, name + ".exit", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, name);
  i->addIncoming(start, pre);
  b.CreateCondBr(b.CreateICmpSLT(i, end), loop, exit);
  b.SetInsertPoint(loop);
  llvm::Value* next = body(i);
  i->addIncoming(next, b.GetInsertBlock());
  llvm::BranchInst* back = b.CreateBr(head);
  if (latch) *latch = back;
  b.SetInsertPoint(exit);
  return i;
}

// for (i = lo; i < hi; ++i) body(i).
inline void for_range(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const std::string& name,
                      const std::function<void(llvm::Value*)>& body, llvm::BranchInst** latch = nullptr) {
  emit_loop(
      b, lo, hi, name,
      [&](llvm::Value* i) {
        body(i);
        return b.CreateAdd(i, b.getInt64(1));
      },
      latch);
}

}  // namespace jf
