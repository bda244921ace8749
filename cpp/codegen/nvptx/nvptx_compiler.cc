// PTX generation with LLVM's NVPTX target.
#include "codegen/nvptx/nvptx_compiler.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "codegen/compile_cache.h"
#include "codegen/elemental.h"
#include "codegen/llvm_pipeline.h"
#include "codegen/loops.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace jf {
namespace {

constexpr char kTriple[] = "nvptx64-nvidia-cuda";

void init_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

// i = ctaid.x * ntid.x + tid.x; stride = nctaid.x * ntid.x (as i64).
llvm::Value* sreg(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  return b.CreateZExt(b.CreateCall(llvm::Intrinsic::getDeclaration(m, id)), b.getInt64Ty());
}

// `void name(bufs, params, i64 total)` as a PTX entry, marked for the NVPTX backend through
// nvvm.annotations. With `tables` (Tables::by_value) the buffer and parameter tables are
// kernel parameters themselves (byval arrays the backend reads with ld.param), so a launch
// needs no device copy of them; otherwise they are pointers to device memory.
struct Tables {
  bool by_value = false;
  uint64_t buffers = 0, params = 0;  // entries (by value only)
};
llvm::Function* create_kernel(llvm::Module& m, const std::string& name, const Tables& tables) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, i64}, false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  if (tables.by_value) {
    uint64_t n[2] = {tables.buffers, tables.params};
    for (unsigned a = 0; a < 2; ++a) {
      fn->addParamAttr(a, llvm::Attribute::getWithByValType(ctx, llvm::ArrayType::get(i64, n[a])));
      fn->addParamAttr(a, llvm::Attribute::getWithAlignment(ctx, llvm::Align(8)));
      fn->addParamAttr(a, llvm::Attribute::NoAlias);
      fn->addParamAttr(a, llvm::Attribute::ReadOnly);
    }
  }
  llvm::NamedMDNode* ann = m.getOrInsertNamedMetadata("nvvm.annotations");
  ann->addOperand(llvm::MDNode::get(
      ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "kernel"),
            llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))}));
  return fn;
}

// $JITFLOW_GPU_UNROLL (1, 2 or 4) read once: the elements per thread it forces on every
// elementwise step, 0 when unset.
int forced_unroll() {
  static const int n = [] {
    const char* env = std::getenv("JITFLOW_GPU_UNROLL");
    const std::string v = env ? env : "";
    return v == "1" || v == "2" || v == "4" ? std::stoi(v) : 0;
  }();
  return n;
}

// Whether every element of the step costs a few instructions: moves, casts, selects and
// the arithmetic an ALU does in one (no division, transcendental, gather or sampler). The
// op records' Cost::kCheap is broader (Reciprocal, Softsign: a division, a multi-instruction
// sequence on a GPU), hence this list.
bool cheap(const KExpr* e, const KExpr* root, std::set<const KExpr*>* seen) {
  if (!seen->insert(e).second || (e != root && e->materialized)) return true;  // read from its buffer
  switch (e->kind) {
    case KKind::kBuffer:
    case KKind::kScalar:
    case KKind::kShapeOf:
      return true;
    case KKind::kCast:
    case KKind::kSelect:
    case KKind::kTranspose:
    case KKind::kReshape:
    case KKind::kSlice:
    case KKind::kConcat:
      break;
    case KKind::kUnary:
    case KKind::kBinary: {
      static const std::set<OpId> ops = {
          OpId::Neg,      OpId::Abs,        OpId::Relu,      OpId::Relu6,        OpId::Identity,
          OpId::Square,   OpId::Floor,      OpId::Ceil,      OpId::Sign,         OpId::LogicalNot,
          OpId::AddV2,    OpId::Sub,        OpId::Mul,       OpId::Maximum,      OpId::Minimum,
          OpId::Less,     OpId::LessEqual,  OpId::Greater,   OpId::GreaterEqual, OpId::Equal,
          OpId::NotEqual, OpId::LogicalAnd, OpId::LogicalOr, OpId::BiasAdd,      OpId::SquaredDifference};
      if (!ops.count(e->op)) return false;
      break;
    }
    default:
      return false;
  }
  for (const KExpr* o : e->operands)
    if (!cheap(o, root, seen)) return false;
  return true;
}

void emit_kernel(llvm::Module& m, const Step& s, const std::string& name, int status_slot,
                 const Tables& tables) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Function* fn = create_kernel(m, name, tables);
  auto args = fn->arg_begin();
  llvm::Value *bufs = args++, *params = args++, *total = args++;
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  ElementalEmitter em(b, bufs, params, entry);
  em.set_status_slot(status_slot);  // run-time checks: the status word follows the buffers
  llvm::Value* tid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* ntid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* ctaid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* nctaid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  llvm::Value* stride = b.CreateMul(nctaid, ntid);
  const int unroll = elementwise_unroll(s);
  if (unroll == 1) {
    emit_loop(b, b.CreateAdd(b.CreateMul(ctaid, ntid), tid), total, "i", [&](llvm::Value* i) {
      em.emit_roots(s, em.delinearize(s.root, i, s.root->rank()), i);
      return b.CreateAdd(i, stride);
    });
    b.CreateRetVoid();
    return;
  }
  // A block takes chunks of `unroll` block-widths, each thread `unroll` elements a block-width
  // apart, all computed before any is stored: their loads are in flight together (stores
  // could alias later loads, so the backend would not move a load above one), and a block's
  // accesses stay in one stretch of memory. A thread whose elements are not all in range
  // does the ones that are, one at a time.
  llvm::Value* first = b.CreateAdd(b.CreateMul(b.CreateMul(ctaid, ntid), b.getInt64(unroll)), tid);
  llvm::Value* chunks = b.CreateMul(stride, b.getInt64(unroll));
  llvm::Value* last_first = b.CreateSub(total, b.CreateMul(ntid, b.getInt64(unroll - 1)));
  llvm::Value* rest = emit_loop(b, first, last_first, "iu", [&](llvm::Value* i) {
    std::vector<llvm::Value*> at;
    std::vector<std::vector<llvm::Value*>> values(unroll);
    for (int k = 0; k < unroll; ++k) {
      at.push_back(k == 0 ? i : b.CreateAdd(at.back(), ntid));
      values[k] = em.root_values(s, em.delinearize(s.root, at[k], s.root->rank()));
    }
    for (int k = 0; k < unroll; ++k) em.store_roots(s, at[k], values[k]);
    return b.CreateAdd(i, chunks);
  });
  llvm::Value* chunk_end = b.CreateAdd(rest, b.CreateMul(ntid, b.getInt64(unroll)));
  llvm::Value* end = b.CreateSelect(b.CreateICmpSLT(total, chunk_end), total, chunk_end);
  emit_loop(b, rest, end, "i", [&](llvm::Value* i) {
    em.emit_roots(s, em.delinearize(s.root, i, s.root->rank()), i);
    return b.CreateAdd(i, ntid);
  });
  b.CreateRetVoid();
}

// Warp shuffle down by `off` lanes for 1-, 32- and 64-bit values (64-bit as two halves).
llvm::Value* shfl_down(llvm::IRBuilder<>& b, llvm::Value* v, int off) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  llvm::Type* t = v->getType();
  auto shfl32 = [&](llvm::Value* x) {
    return b.CreateCall(llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::nvvm_shfl_sync_down_i32),
                        {b.getInt32(0xffffffffu), x, b.getInt32(off), b.getInt32(0x1f)});
  };
  if (t->isFloatTy()) return b.CreateBitCast(shfl32(b.CreateBitCast(v, b.getInt32Ty())), t);
  if (t->isIntegerTy(32)) return shfl32(v);
  if (t->isIntegerTy(1))  // a bool accumulator (Any, All) travels as 0 or 1
    return b.CreateICmpNE(shfl32(b.CreateZExt(v, b.getInt32Ty())), b.getInt32(0));
  llvm::Value* w = t->isDoubleTy() ? b.CreateBitCast(v, b.getInt64Ty()) : v;
  llvm::Value* lo = shfl32(b.CreateTrunc(w, b.getInt32Ty()));
  llvm::Value* hi = shfl32(b.CreateTrunc(b.CreateLShr(w, 32), b.getInt32Ty()));
  llvm::Value* r =
      b.CreateOr(b.CreateZExt(lo, b.getInt64Ty()), b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32));
  return t->isDoubleTy() ? b.CreateBitCast(r, t) : r;
}

llvm::Value* warp_reduce(llvm::IRBuilder<>& b, ElementalEmitter& em, const KExpr* root, llvm::Value* acc) {
  for (int off = 16; off >= 1; off /= 2) acc = em.reduce_combine(root, acc, shfl_down(b, acc, off));
  return acc;
}

// A reduction root as a block reduction: block c reduces outputs c, c + nctaid, ...; its
// threads stride over the reduced extent, then combine with warp shuffles and a 32-slot
// shared scratch (one per warp). Launch with a multiple of 32 threads, at most 1024.
void emit_reduce_kernel(llvm::Module& m, const Step& s, const std::string& name, int status_slot,
                        const Tables& tables) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Function* fn = create_kernel(m, name, tables);
  auto args = fn->arg_begin();
  llvm::Value *bufs = args++, *params = args++, *total = args++;
  auto block = [&](const char* n) { return llvm::BasicBlock::Create(ctx, n, fn); };
  llvm::BasicBlock* entry = block("entry");
  b.SetInsertPoint(entry);
  ElementalEmitter em(b, bufs, params, entry);
  em.set_status_slot(status_slot);  // run-time checks: the status word follows the buffers
  const KExpr* root = s.root;
  const KExpr* x = root->operands[0];
  llvm::Type* t = em.reg_type(root->dtype);
  auto* scratch_ty = llvm::ArrayType::get(t, 32);
  auto* scratch = new llvm::GlobalVariable(m, scratch_ty, false, llvm::GlobalValue::InternalLinkage,
                                           llvm::UndefValue::get(scratch_ty), name + "_scratch", nullptr,
                                           llvm::GlobalValue::NotThreadLocal, 3);
  llvm::Value* tid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* ntid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* ctaid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* nctaid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  llvm::Value* lane = b.CreateAnd(tid, 31);
  llvm::Value* warp = b.CreateLShr(tid, 5);
  llvm::Value* nwarps = b.CreateLShr(b.CreateAdd(ntid, b.getInt64(31)), 5);
  llvm::Value* extent = em.reduce_extent(root);
  llvm::Function* barrier = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::nvvm_barrier0);
  auto slot = [&](llvm::Value* i) { return b.CreateInBoundsGEP(scratch_ty, scratch, {b.getInt64(0), i}); };

  llvm::BasicBlock *o_head = block("out.head"), *o_body = block("out.body"), *exit = block("exit");
  b.CreateBr(o_head);
  b.SetInsertPoint(o_head);
  llvm::PHINode* o = b.CreatePHI(b.getInt64Ty(), 2, "o");
  o->addIncoming(ctaid, entry);
  b.CreateCondBr(b.CreateICmpSLT(o, total), o_body, exit);

  b.SetInsertPoint(o_body);
  std::vector<llvm::Value*> idx = em.delinearize(root, o, root->rank());
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock *j_head = block("red.head"), *j_body = block("red.body"), *j_exit = block("red.exit");
  b.CreateBr(j_head);
  b.SetInsertPoint(j_head);
  llvm::PHINode* j = b.CreatePHI(b.getInt64Ty(), 2, "j");
  llvm::PHINode* acc = b.CreatePHI(t, 2, "acc");
  j->addIncoming(tid, pre);
  acc->addIncoming(em.reduce_identity(root), pre);
  b.CreateCondBr(b.CreateICmpSLT(j, extent), j_body, j_exit);
  b.SetInsertPoint(j_body);
  llvm::Value* v = em.emit(x, em.reduce_operand_index(root, idx, j), root);
  llvm::Value* next = em.reduce_combine(root, acc, v);
  j->addIncoming(b.CreateAdd(j, ntid), b.GetInsertBlock());
  acc->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(j_head);

  b.SetInsertPoint(j_exit);
  llvm::Value* partial = warp_reduce(b, em, root, acc);
  llvm::BasicBlock *write = block("warp.write"), *after_write = block("warp.done");
  b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt64(0)), write, after_write);
  b.SetInsertPoint(write);
  b.CreateStore(partial, slot(warp));
  b.CreateBr(after_write);
  b.SetInsertPoint(after_write);
  b.CreateCall(barrier);
  llvm::BasicBlock *first = block("warp0"), *done = block("out.next");
  b.CreateCondBr(b.CreateICmpEQ(warp, b.getInt64(0)), first, done);
  b.SetInsertPoint(first);
  llvm::Value* mine =
      b.CreateSelect(b.CreateICmpSLT(lane, nwarps), b.CreateLoad(t, slot(lane)), em.reduce_identity(root));
  llvm::Value* total_v = warp_reduce(b, em, root, mine);
  llvm::BasicBlock* store = block("out.store");
  b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt64(0)), store, done);
  b.SetInsertPoint(store);
  em.store(root, o, em.reduce_finish(root, total_v));
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateCall(barrier);  // the scratch is reused by the next output
  o->addIncoming(b.CreateAdd(o, nctaid), done);
  b.CreateBr(o_head);

  b.SetInsertPoint(exit);
  b.CreateRetVoid();
}

// A row group (fuse_rows.cc) as one kernel: block c takes rows c, c + nctaid, ... through
// every part before the next row. A full-row part's threads stride over the row's columns,
// and a barrier ends it, so later parts see the whole row. Values passed between parts go
// through their buffers, written and read back by the same block while the row is in cache;
// what the group needs from DRAM is its inputs, once. A reduction
// over the row folds each thread's columns, then combines the warps' partials (shuffles and
// a shared scratch) and hands the total to every thread through shared memory, where it is
// kept in a register for the later parts; thread 0 stores it for readers outside the group.
// Other per-row values (elementwise on per-row values) are computed by every thread alike.
// Launch with a multiple of 32 threads, at most 1024.
void emit_row_group_kernel(llvm::Module& m, const Step& s, const std::string& name, int status_slot,
                           const Tables& tables) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Function* fn = create_kernel(m, name, tables);
  auto args = fn->arg_begin();
  llvm::Value *bufs = args++, *params = args++, *total = args++;
  auto block = [&](const char* n) { return llvm::BasicBlock::Create(ctx, n, fn); };
  llvm::BasicBlock* entry = block("entry");
  b.SetInsertPoint(entry);
  ElementalEmitter em(b, bufs, params, entry);
  em.set_status_slot(status_slot);
  // 32 partials and the broadcast total, 8 bytes each whatever the part's type.
  auto* scratch_ty = llvm::ArrayType::get(b.getInt64Ty(), 33);
  auto* scratch = new llvm::GlobalVariable(m, scratch_ty, false, llvm::GlobalValue::InternalLinkage,
                                           llvm::UndefValue::get(scratch_ty), name + "_scratch", nullptr,
                                           llvm::GlobalValue::NotThreadLocal, 3);
  auto slot = [&](llvm::Value* i) { return b.CreateInBoundsGEP(scratch_ty, scratch, {b.getInt64(0), i}); };
  llvm::Value* tid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* ntid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* ctaid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* nctaid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  llvm::Value* lane = b.CreateAnd(tid, 31);
  llvm::Value* warp = b.CreateLShr(tid, 5);
  llvm::Value* nwarps = b.CreateLShr(b.CreateAdd(ntid, b.getInt64(31)), 5);
  llvm::Value* width = em.dim(s.width);
  llvm::Function* barrier = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::nvvm_barrier0);
  const int k = static_cast<int>(s.row_dims.size());

  // Runs `body` in a block only thread 0 enters.
  auto thread0 = [&](const std::function<void()>& body) {
    llvm::BasicBlock *then = block("t0"), *after = block("t0.done");
    b.CreateCondBr(b.CreateICmpEQ(tid, b.getInt64(0)), then, after);
    b.SetInsertPoint(then);
    body();
    b.CreateBr(after);
    b.SetInsertPoint(after);
  };
  // The row's reduction `r` (over the last axis) at output index idx, in every thread.
  auto block_reduce = [&](const KExpr* r, const std::vector<llvm::Value*>& idx) {
    llvm::Type* t = em.reg_type(r->dtype);
    llvm::Value* extent = em.reduce_extent(r);
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock *head = block("fold.head"), *body = block("fold.body"), *done = block("fold.done");
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode* j = b.CreatePHI(b.getInt64Ty(), 2, "j");
    llvm::PHINode* acc = b.CreatePHI(t, 2, "acc");
    j->addIncoming(tid, pre);
    acc->addIncoming(em.reduce_identity(r), pre);
    b.CreateCondBr(b.CreateICmpSLT(j, extent), body, done);
    b.SetInsertPoint(body);
    llvm::Value* next =
        em.reduce_combine(r, acc, em.emit(r->operands[0], em.reduce_operand_index(r, idx, j), r));
    j->addIncoming(b.CreateAdd(j, ntid), b.GetInsertBlock());
    acc->addIncoming(next, b.GetInsertBlock());
    b.CreateBr(head);
    b.SetInsertPoint(done);
    llvm::Value* partial = warp_reduce(b, em, r, acc);
    llvm::BasicBlock *write = block("warp.write"), *written = block("warp.written");
    b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt64(0)), write, written);
    b.SetInsertPoint(write);
    b.CreateStore(partial, slot(warp));
    b.CreateBr(written);
    b.SetInsertPoint(written);
    b.CreateCall(barrier);
    llvm::BasicBlock *first = block("warp0"), *shared = block("total.shared");
    b.CreateCondBr(b.CreateICmpEQ(warp, b.getInt64(0)), first, shared);
    b.SetInsertPoint(first);
    llvm::Value* mine =
        b.CreateSelect(b.CreateICmpSLT(lane, nwarps), b.CreateLoad(t, slot(lane)), em.reduce_identity(r));
    llvm::Value* sum = em.reduce_finish(r, warp_reduce(b, em, r, mine));
    llvm::BasicBlock* publish = block("total.publish");
    b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt64(0)), publish, shared);
    b.SetInsertPoint(publish);
    b.CreateStore(sum, slot(b.getInt64(32)));
    b.CreateBr(shared);
    b.SetInsertPoint(shared);
    b.CreateCall(barrier);
    llvm::Value* v = b.CreateLoad(em.reg_type(r->dtype), slot(b.getInt64(32)));
    b.CreateCall(barrier);  // every thread has its copy before the scratch is written again
    return v;
  };

  llvm::BasicBlock *o_head = block("row.head"), *o_body = block("row.body"), *exit = block("exit");
  b.CreateBr(o_head);
  b.SetInsertPoint(o_head);
  llvm::PHINode* row = b.CreatePHI(b.getInt64Ty(), 2, "row");
  row->addIncoming(ctaid, entry);
  b.CreateCondBr(b.CreateICmpSLT(row, total), o_body, exit);
  b.SetInsertPoint(o_body);
  std::vector<llvm::Value*> ridx = em.delinearize_slots(s.row_dims, row);
  llvm::Value* row_base = b.CreateMul(row, width);
  for (const Step& q : s.parts) {
    const KExpr* r = q.root;
    std::vector<const KExpr*> roots{r};
    roots.insert(roots.end(), q.siblings.begin(), q.siblings.end());
    if (r->rank() == k || r->dims[k] < 0) {  // one value per row
      std::vector<llvm::Value*> idx = ridx;
      if (r->rank() == k + 1) idx.push_back(b.getInt64(0));
      for (const KExpr* e : roots) {
        llvm::Value* v = e->kind == KKind::kReduce ? block_reduce(e, idx) : em.emit(e, idx, e);
        thread0([&] { em.store(e, row, v); });
        em.pin(e, v);  // later parts read it in this row
      }
      continue;
    }
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock *c_head = block("col.head"), *c_body = block("col.body"), *c_done = block("col.done");
    b.CreateBr(c_head);
    b.SetInsertPoint(c_head);
    llvm::PHINode* j = b.CreatePHI(b.getInt64Ty(), 2, "col");
    j->addIncoming(tid, pre);
    b.CreateCondBr(b.CreateICmpSLT(j, width), c_body, c_done);
    b.SetInsertPoint(c_body);
    std::vector<llvm::Value*> idx = ridx;
    idx.push_back(j);
    em.emit_roots(q, idx, b.CreateAdd(row_base, j));
    j->addIncoming(b.CreateAdd(j, ntid), b.GetInsertBlock());
    b.CreateBr(c_head);
    b.SetInsertPoint(c_done);
    // Later parts read this one at their own columns, which this thread wrote; the barrier
    // makes the row visible to the whole block anyway (a per-row part computed from it by
    // every thread, a read at another column), for a few cycles a row.
    if (&q != &s.parts.back()) b.CreateCall(barrier);
  }
  em.clear_pinned();
  row->addIncoming(b.CreateAdd(row, nctaid), b.GetInsertBlock());
  b.CreateBr(o_head);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
}

// LLVM math intrinsics that NVPTX cannot select, and calls to the records' libm functions
// (ops.def's math column), go to libdevice: __nv_<name>f for float, __nv_<name> for double.
void use_libdevice_names(llvm::Module& m) {
  static const llvm::Intrinsic::ID kNoNvptxLowering[] = {
      llvm::Intrinsic::exp,   llvm::Intrinsic::exp2, llvm::Intrinsic::log, llvm::Intrinsic::log2,
      llvm::Intrinsic::log10, llvm::Intrinsic::sin,  llvm::Intrinsic::cos, llvm::Intrinsic::pow};
  std::map<std::string, std::string> libm;  // libm name -> libdevice base name
  for (int op = 0; op < num_ops(); ++op) {
    const OpDef& def = op_def(static_cast<OpId>(op));
    if (!*def.math) continue;
    libm[std::string(def.math) + "f"] = def.math;
    libm[def.math] = def.math;
  }
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& in : bb)
        if (auto* c = llvm::dyn_cast<llvm::CallInst>(&in)) calls.push_back(c);
  for (llvm::CallInst* c : calls) {
    llvm::Function* callee = c->getCalledFunction();
    if (!callee) continue;
    bool f32 = c->getType()->isFloatTy();
    std::string base;
    if (llvm::Intrinsic::ID id = callee->getIntrinsicID()) {
      for (llvm::Intrinsic::ID x : kNoNvptxLowering)
        if (id == x) base = llvm::Intrinsic::getBaseName(id).drop_front(5).str();  // "llvm.exp" -> "exp"
    } else if (auto it = libm.find(callee->getName().str()); it != libm.end()) {
      base = it->second;
    }
    if (base.empty()) continue;
    std::string target = "__nv_" + base + (f32 ? "f" : "");
    std::vector<llvm::Type*> tys;
    std::vector<llvm::Value*> args;
    for (auto& a : c->args()) tys.push_back(a->getType()), args.push_back(a);
    auto fn = m.getOrInsertFunction(target, llvm::FunctionType::get(c->getType(), tys, false));
    llvm::IRBuilder<> b(c);
    llvm::Value* nc = b.CreateCall(fn, args);
    c->replaceAllUsesWith(nc);
    c->eraseFromParent();
  }
}

void link_libdevice(llvm::Module& m) {
  std::string path = libdevice_path();
  if (path.empty()) {
    for (llvm::Function& f : m)
      if (f.isDeclaration() && f.getName().startswith("__nv_"))
        throw_unimplemented("GPU codegen needs libdevice for ", f.getName().str(),
                            ": install the CUDA toolkit (nvvm/libdevice/libdevice.10.bc) or set CUDA_HOME");
    return;
  }
  llvm::SMDiagnostic err;
  std::unique_ptr<llvm::Module> lib = llvm::parseIRFile(path, err, m.getContext());
  if (!lib) throw_runtime("cannot read libdevice at ", path, ": ", err.getMessage().str());
  lib->setTargetTriple(kTriple);
  lib->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(lib), llvm::Linker::LinkOnlyNeeded))
    throw_runtime("linking libdevice failed");
  // Everything but the kernels becomes internal, so unused libdevice code is dropped.
  for (llvm::Function& f : m)
    if (!f.isDeclaration() && f.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", static_cast<uint32_t>(0));
}

}  // namespace

std::string libdevice_path() {
  std::vector<std::string> roots;
  if (const char* h = std::getenv("CUDA_HOME")) roots.push_back(h);
  if (const char* h = std::getenv("CUDA_PATH")) roots.push_back(h);
  roots.push_back("/usr/local/cuda");
  roots.push_back("/usr/lib/cuda");
  for (const auto& r : roots) {
    std::string p = r + "/nvvm/libdevice/libdevice.10.bc";
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

// Elements a thread takes per trip. A cheap step is memory-bound: four loads in flight per
// thread bring it near copy bandwidth (on an H100, a*2 over 16M floats: 0.71 of a copy one
// at a time, 0.84 four at a time). An expensive one is not helped: the registers four
// elements need cut the threads resident per SM (tanh: 0.70 one at a time, 0.52 four).
int elementwise_unroll(const Step& s) {
  if (int forced = forced_unroll()) return forced;
  std::set<const KExpr*> seen;
  if (!cheap(s.root, s.root, &seen)) return 1;
  for (const KExpr* sib : s.siblings)
    if (!cheap(sib, sib, &seen)) return 1;
  return 4;
}

PtxModule emit_ptx(const ClusterProgram& p, const std::string& label, const std::string& arch) {
  init_nvptx();
  // The tables go by value while they fit the 4 KB of kernel parameters every GPU takes
  // (with the status word after the buffers, and `total`).
  Tables tables;
  tables.buffers = static_cast<uint64_t>(p.num_buffers) + 1;
  tables.params = static_cast<uint64_t>(std::max(1, p.num_params));
  tables.by_value = (tables.buffers + tables.params + 1) * 8 <= kMaxKernelParamBytes;
  // PTX is cached on disk like CPU object code (key: kernel IR, target arch, versions); the
  // entry's first line lists the kernels, after "byval " when the tables go by value.
  std::string key = compile_cache_key(p.fingerprint + "|label=" + label,
                                      std::string("nvptx|") + kTriple + "|" + arch + "|tables,rows,unroll" +
                                          (forced_unroll() ? std::to_string(forced_unroll()) : ""));
  std::string cached;
  bool hit = disk_cache_load(key, &cached);
  if (hit && cached.find('\n') == std::string::npos) {
    disk_cache_reject(key, "no kernel list");
    hit = false;
  }
  if (hit) {
    PtxModule out;
    out.arch = arch;
    out.from_cache = true;
    size_t nl = cached.find('\n');
    std::string names = cached.substr(0, nl);
    const std::string byval = "byval ";
    out.tables_by_value = names.rfind(byval, 0) == 0;
    if (out.tables_by_value) names = names.substr(byval.size());
    for (size_t a = 0, b; a < names.size(); a = b + 1) {
      b = names.find(',', a);
      if (b == std::string::npos) b = names.size();
      out.kernels.push_back(names.substr(a, b - a));
    }
    out.ptx = cached.substr(nl + 1);
    return out;
  }
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!target) throw_runtime("LLVM has no NVPTX target: ", err);
  if (arch.rfind("sm_", 0) != 0) throw_invalid("emit_ptx: arch must look like 'sm_80', got '", arch, "'");
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(kTriple, arch, "+ptx78", llvm::TargetOptions(), std::nullopt, std::nullopt,
                                  llvm::CodeGenOpt::Aggressive));
  if (!tm) throw_invalid("emit_ptx: LLVM cannot target ", arch);
  llvm::LLVMContext ctx;
  llvm::Module m(label, ctx);
  m.setTargetTriple(kTriple);
  m.setDataLayout(tm->createDataLayout());
  PtxModule out;
  out.arch = arch;
  out.tables_by_value = tables.by_value;
  auto emit_step = [&](const Step& s, std::string name) {
    for (char& c : name)
      if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    if (s.root->kind == KKind::kReduce)
      emit_reduce_kernel(m, s, name, p.num_buffers, tables);
    else
      emit_kernel(m, s, name, p.num_buffers, tables);
    out.kernels.push_back(name);
  };
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    if (s.kind == Step::kLoop) emit_step(s, label + "_step" + std::to_string(k));
    if (s.kind == Step::kRowGroup) {
      std::string name = label + "_rows" + std::to_string(k);
      for (char& c : name)
        if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
      emit_row_group_kernel(m, s, name, p.num_buffers, tables);
      out.kernels.push_back(name);
    }
  }
  use_libdevice_names(m);
  std::string verr;
  llvm::raw_string_ostream vs(verr);
  if (llvm::verifyModule(m, &vs))
    throw Error(ErrorKind::kInternal, "NVPTX IR verification failed: " + vs.str());
  link_libdevice(m);
  run_pipeline(m, tm.get());
  out.ptx = emit_module(m, tm.get(), true);
  std::string names = out.tables_by_value ? "byval " : "";
  for (size_t i = 0; i < out.kernels.size(); ++i) names += (i ? "," : "") + out.kernels[i];
  disk_cache_store(key, names + "\n" + out.ptx);
  if (const char* dir = std::getenv("JITFLOW_DUMP"))
    if (*dir) std::ofstream(std::string(dir) + "/" + label + "." + arch + ".ptx") << out.ptx;
  return out;
}

}  // namespace jf
