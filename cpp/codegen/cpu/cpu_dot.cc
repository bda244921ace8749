// Small matrix products compiled into the cluster: a library MatMul step also gets a range
// function over rows of C that keeps a vector of C's row in registers while it walks the
// reduction, reading A's element as a broadcast and B's row as a vector. Eigen's GEMM packs
// both operands first, which costs more than a product of a few thousand multiply-adds; the
// runner calls this code below kSmallDotVolume and Eigen above it.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen/cpu/cpu_loops.h"
#include "codegen/loops.h"

namespace jf {
namespace {

using llvm::Value;

// The operands of one product as the code sees them: A [m, k] (stored [k, m] when
// transposed), B [k, n], C [m, n], elements of type t in vectors of w.
struct Dot {
  llvm::Type* t;
  unsigned w;
  Value *a, *bm, *c, *m, *n, *k;
  bool ta;
};

// A tile of C: rows i..i+rows-1 by one vector per mask from column j0 (a null mask: all
// lanes), each an accumulator: acc = sum over kk of A(row, kk) * B(kk, columns), stored
// once. The tile's accumulators are independent chains of multiply-adds, enough of them to
// keep the FMA units busy (one vector a row was bound by the chain's latency).
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
    Value* row = b.CreateAdd(i, b.getInt64(r));
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
    Value* crow = b.CreateAdd(b.CreateMul(b.CreateAdd(i, b.getInt64(r)), d.n), j0);
    for (int q = 0; q < cols; ++q) {
      Value* p = b.CreateInBoundsGEP(d.t, d.c, b.CreateAdd(crow, b.getInt64(q * d.w)));
      if (masks[q])
        b.CreateMaskedStore(acc[r * cols + q], p, align, masks[q]);
      else
        b.CreateAlignedStore(acc[r * cols + q], p, align);
    }
  }
}

// Rows i..i+rows-1 of C: full tiles of kTileVectors vectors, then one masked tile for the
// columns left (rows of 10 or 40 columns, an LSTM cell's, are mostly that).
constexpr int kTileVectors = 2;
void emit_rows(llvm::IRBuilder<>& b, const Dot& d, Value* i, int rows) {
  const int64_t span = kTileVectors * d.w;
  Value* full = b.CreateMul(b.CreateSDiv(d.n, b.getInt64(span)), b.getInt64(span));
  Value* j = emit_loop(b, b.getInt64(0), full, "dot.col", [&](Value* j0) {
    emit_tile(b, d, i, rows, j0, std::vector<Value*>(kTileVectors, nullptr));
    return b.CreateAdd(j0, b.getInt64(span));
  });
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* tail = llvm::BasicBlock::Create(b.getContext(), "dot.tail", fn);
  llvm::BasicBlock* next = llvm::BasicBlock::Create(b.getContext(), "dot.next", fn);
  b.CreateCondBr(b.CreateICmpSLT(j, d.n), tail, next);
  b.SetInsertPoint(tail);
  std::vector<Value*> masks;
  for (int q = 0; q < kTileVectors; ++q) {
    std::vector<llvm::Constant*> lanes;
    for (unsigned l = 0; l < d.w; ++l) lanes.push_back(b.getInt64(q * d.w + l));
    Value* cols = b.CreateAdd(b.CreateVectorSplat(d.w, j), llvm::ConstantVector::get(lanes));
    masks.push_back(b.CreateICmpSLT(cols, b.CreateVectorSplat(d.w, d.n)));
  }
  // Columns left for one vector take a tile of one: no multiply-adds on empty lanes.
  llvm::BasicBlock* one = llvm::BasicBlock::Create(b.getContext(), "dot.tail1", fn);
  llvm::BasicBlock* all = llvm::BasicBlock::Create(b.getContext(), "dot.tail2", fn);
  b.CreateCondBr(b.CreateICmpSLE(b.CreateSub(d.n, j), b.getInt64(d.w)), one, all);
  b.SetInsertPoint(one);
  emit_tile(b, d, i, rows, j, {masks[0]});
  b.CreateBr(next);
  b.SetInsertPoint(all);
  emit_tile(b, d, i, rows, j, masks);
  b.CreateBr(next);
  b.SetInsertPoint(next);
}

}  // namespace

void emit_small_dot_step(llvm::Module& m, const Step& s, const std::string& name, unsigned vector_bytes) {
  llvm::IRBuilder<> b(m.getContext());
  const RangeFunction f = begin_range_function(m, b, name);
  llvm::Type* t = s.root->dtype == DType::kFloat64 ? b.getDoubleTy() : b.getFloatTy();
  const unsigned w = std::max(2u, vector_bytes / static_cast<unsigned>(t->getPrimitiveSizeInBits() / 8));
  auto load_ptr = [&](int buffer) {
    return b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), f.bufs, buffer));
  };
  auto load_dim = [&](int slot) {
    return b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), f.params, slot));
  };
  Dot d{t,
        w,
        load_ptr(s.args[0]->buffer),
        load_ptr(s.args[1]->buffer),
        load_ptr(s.root->buffer),
        load_dim(0),
        load_dim(1),
        load_dim(2),
        s.node->attrs.get<bool>("transpose_a", false)};
  // Four rows at a time share each vector of B; the rows left go one by one.
  constexpr int kTileRows = 4;
  Value* last = b.CreateSub(f.end, b.getInt64(kTileRows - 1));
  Value* i = emit_loop(b, f.begin, last, "dot.rows", [&](Value* i0) {
    emit_rows(b, d, i0, kTileRows);
    return b.CreateAdd(i0, b.getInt64(kTileRows));
  });
  for_range(b, i, f.end, "dot.row", [&](Value* i1) { emit_rows(b, d, i1, 1); });
  b.CreateRetVoid();
}

}  // namespace jf
