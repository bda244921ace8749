// Small matrix products compiled with the cluster: C = op(A) B by tiles of C's rows held in
// vector registers while the code walks the shared dimension, reading A's element as a
// broadcast and B's row as vectors (a transposed B is copied to that layout first). Eigen's
// GEMM packs both operands first, which costs more than a product of a few thousand
// multiply-adds; the runner calls this code within kernel_ir.h's bounds and Eigen beyond
// them. One function per element type and operand layout serves every such step of a module:
// the buffers come in the parameters.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen/cpu/cpu_loops.h"
#include "codegen/loops.h"
#include "support/errors.h"

namespace jf {
namespace {

using llvm::Value;

// The operands of one product as the code sees them: A [m, k] (stored [k, m] when
// transposed), B [k, n] (a transposed one's copy), C [m, n], elements of type t in vectors of
// w; last_row is the last row of C this call computes.
struct Dot {
  llvm::Type* t;
  unsigned w;
  Value *a, *bm, *c, *m, *n, *k, *last_row;
  bool ta;
};

// Row r of a tile starting at row i. Rows past last_row are last_row again: the call's last
// tile computes that row more than once and stores the same values, rather than a second
// tile form for the rows left.
Value* row_of_tile(llvm::IRBuilder<>& b, const Dot& d, Value* i, int r) {
  if (r == 0) return i;
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(i, b.getInt64(r)), d.last_row);
}

// A tile of C: rows i..i+rows-1 by one vector per mask from column j0 (a null mask: all
// lanes), each an accumulator: acc = sum over kk of A(row, kk) * B(kk, columns), stored once.
// Its accumulators are independent chains of multiply-adds, enough of them to keep the FMA
// units busy (one vector a row was bound by the chain's latency).
void emit_tile(llvm::IRBuilder<>& b, const Dot& d, Value* i, int rows, Value* j0,
               const std::vector<Value*>& masks) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* vt = llvm::FixedVectorType::get(d.t, d.w);
  const llvm::Align align(d.t->getPrimitiveSizeInBits() / 8);
  Value* zero = llvm::Constant::getNullValue(vt);
  const int cols = static_cast<int>(masks.size());
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, "dot.k", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "dot.fma", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "dot.store", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* kk = b.CreatePHI(b.getInt64Ty(), 2, "kk");
  kk->addIncoming(b.getInt64(0), pre);
  std::vector<llvm::PHINode*> acc;
  for (int r = 0; r < rows * cols; ++r) {
    acc.push_back(b.CreatePHI(vt, 2, "acc"));
    acc.back()->addIncoming(zero, pre);
  }
  b.CreateCondBr(b.CreateICmpSLT(kk, d.k), body, done);
  b.SetInsertPoint(body);
  std::vector<Value*> bv;
  Value* brow = b.CreateAdd(b.CreateMul(kk, d.n), j0);
  for (int q = 0; q < cols; ++q) {
    Value* p = b.CreateInBoundsGEP(d.t, d.bm, b.CreateAdd(brow, b.getInt64(q * d.w)));
    bv.push_back(masks[q] ? static_cast<Value*>(b.CreateMaskedLoad(vt, p, align, masks[q], zero))
                          : b.CreateAlignedLoad(vt, p, align));
  }
  for (int r = 0; r < rows; ++r) {
    Value* row = row_of_tile(b, d, i, r);
    Value* at = d.ta ? b.CreateAdd(b.CreateMul(kk, d.m), row) : b.CreateAdd(b.CreateMul(row, d.k), kk);
    Value* av = b.CreateVectorSplat(d.w, b.CreateAlignedLoad(d.t, b.CreateInBoundsGEP(d.t, d.a, at), align));
    for (int q = 0; q < cols; ++q) {
      llvm::PHINode* x = acc[r * cols + q];
      x->addIncoming(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {av, bv[q], x}), body);
    }
  }
  kk->addIncoming(b.CreateAdd(kk, b.getInt64(1)), body);
  b.CreateBr(head);
  b.SetInsertPoint(done);
  for (int r = 0; r < rows; ++r) {
    Value* crow = b.CreateAdd(b.CreateMul(row_of_tile(b, d, i, r), d.n), j0);
    for (int q = 0; q < cols; ++q) {
      Value* p = b.CreateInBoundsGEP(d.t, d.c, b.CreateAdd(crow, b.getInt64(q * d.w)));
      if (masks[q])
        b.CreateMaskedStore(acc[r * cols + q], p, align, masks[q]);
      else
        b.CreateAlignedStore(acc[r * cols + q], p, align);
    }
  }
}

// Rows i..i+rows-1 of C, by blocks of kTileVectors vectors of columns. Every block is masked
// at the row's end (on AVX-512 a masked load costs what a plain one does): one tile form
// for full and partial blocks keeps the code, and its compile time, small. A block of one
// vector's columns or fewer takes a tile of one vector: no multiply-adds on empty lanes.
constexpr int kTileVectors = 2;
void emit_rows(llvm::IRBuilder<>& b, const Dot& d, Value* i, int rows) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  const int64_t span = kTileVectors * d.w;
  emit_loop(b, b.getInt64(0), d.n, "dot.col", [&](Value* j0) {
    std::vector<Value*> masks;
    for (int q = 0; q < kTileVectors; ++q) {
      std::vector<llvm::Constant*> lanes;
      for (unsigned l = 0; l < d.w; ++l) lanes.push_back(b.getInt64(q * d.w + l));
      Value* cols = b.CreateAdd(b.CreateVectorSplat(d.w, j0), llvm::ConstantVector::get(lanes));
      masks.push_back(b.CreateICmpSLT(cols, b.CreateVectorSplat(d.w, d.n)));
    }
    llvm::BasicBlock* one = llvm::BasicBlock::Create(b.getContext(), "dot.one", fn);
    llvm::BasicBlock* two = llvm::BasicBlock::Create(b.getContext(), "dot.two", fn);
    llvm::BasicBlock* next = llvm::BasicBlock::Create(b.getContext(), "dot.next", fn);
    b.CreateCondBr(b.CreateICmpSLE(b.CreateSub(d.n, j0), b.getInt64(d.w)), one, two);
    b.SetInsertPoint(one);
    emit_tile(b, d, i, rows, j0, {masks[0]});
    b.CreateBr(next);
    b.SetInsertPoint(two);
    emit_tile(b, d, i, rows, j0, masks);
    b.CreateBr(next);
    b.SetInsertPoint(next);
    return b.CreateAdd(j0, b.getInt64(span));
  });
}

}  // namespace

void emit_small_dot(llvm::Module& m, DType dtype, DotForm form, const std::string& name,
                    unsigned vector_bytes) {
  llvm::IRBuilder<> b(m.getContext());
  const RangeFunction f = begin_range_function(m, b, name);
  // One body for every step that calls it: the optimizer must not copy it into each.
  f.entry->getParent()->addFnAttr(llvm::Attribute::NoInline);
  llvm::Type* t = dtype == DType::kFloat64 ? b.getDoubleTy() : b.getFloatTy();
  const unsigned w = std::max(2u, vector_bytes / static_cast<unsigned>(t->getPrimitiveSizeInBits() / 8));
  auto param = [&](int slot) {
    return b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), f.params, slot));
  };
  auto buffer = [&](int slot) {
    return b.CreateLoad(b.getPtrTy(), b.CreateInBoundsGEP(b.getPtrTy(), f.bufs, param(slot)));
  };
  Value *n = param(kDotN), *k = param(kDotK), *bm = buffer(kDotB);
  if (form.transpose_b) {
    // B is [n, k]: its transpose goes into a scratch [k, n] first (at most
    // kSmallDotTransposedB elements), so the tiles read rows of it as vectors.
    Value* scratch = b.CreateAlloca(t, b.CreateMul(n, k), "bt");
    const llvm::Align align(t->getPrimitiveSizeInBits() / 8);
    for_range(b, b.getInt64(0), n, "bt.row", [&](Value* j) {
      for_range(b, b.getInt64(0), k, "bt.col", [&](Value* kk) {
        Value* x =
            b.CreateAlignedLoad(t, b.CreateInBoundsGEP(t, bm, b.CreateAdd(b.CreateMul(j, k), kk)), align);
        b.CreateAlignedStore(x, b.CreateInBoundsGEP(t, scratch, b.CreateAdd(b.CreateMul(kk, n), j)), align);
      });
    });
    bm = scratch;
  }
  Dot d{t,
        w,
        buffer(kDotA),
        bm,
        buffer(kDotC),
        param(kDotM),
        n,
        k,
        b.CreateSub(f.end, b.getInt64(1)),
        form.transpose_a};
  // Four rows at a time share each vector of B.
  constexpr int kTileRows = 4;
  emit_loop(b, f.begin, f.end, "dot.rows", [&](Value* i0) {
    emit_rows(b, d, i0, kTileRows);
    return b.CreateAdd(i0, b.getInt64(kTileRows));
  });
  b.CreateRetVoid();
}

void emit_forward(llvm::Module& m, const std::string& name, const std::string& target) {
  llvm::Function* to = m.getFunction(target);
  if (!to) throw_runtime("LLVM: no function ", target, " to forward ", name, " to");
  llvm::IRBuilder<> b(m.getContext());
  const RangeFunction f = begin_range_function(m, b, name);
  b.CreateCall(to, {f.bufs, f.params, f.begin, f.end})->setTailCall();
  b.CreateRetVoid();
}

}  // namespace jf
