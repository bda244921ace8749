// Per-element IR for each kernel-IR kind. NaN and Inf propagate as in the eager kernels:
// no fast-math flags except reassociation on reduction accumulators (for vectorization).
#include "codegen/elemental.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <limits>

#include "codegen/formulas.h"
#include "codegen/loops.h"

namespace jf {

using llvm::Value;

ElementalEmitter::ElementalEmitter(llvm::IRBuilder<>& b, Value* bufs, Value* params, llvm::BasicBlock* entry)
    : b_(b), ctx_(b.getContext()), bufs_(bufs), params_(params), entry_(entry) {}

llvm::Type* ElementalEmitter::mem_type(DType d) {
  switch (d) {
    case DType::kFloat32:
      return b_.getFloatTy();
    case DType::kFloat64:
      return b_.getDoubleTy();
    case DType::kInt32:
      return b_.getInt32Ty();
    case DType::kInt64:
      return b_.getInt64Ty();
    case DType::kFloat16:  // only loads, stores and casts see a half value
      return b_.getHalfTy();
    case DType::kBFloat16:  // its bits
      return b_.getInt16Ty();
    default:
      return b_.getInt8Ty();
  }
}
llvm::Type* ElementalEmitter::reg_type(DType d) { return d == DType::kBool ? b_.getInt1Ty() : mem_type(d); }

// Loads of dims and buffer pointers go in the entry block, so every loop sees them hoisted.
Value* ElementalEmitter::dim(int slot) {
  if (slot < 0) return b_.getInt64(1);
  auto it = dims_.find(slot);
  if (it != dims_.end()) return it->second;
  llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
  Value* v = eb.CreateLoad(eb.getInt64Ty(), eb.CreateConstInBoundsGEP1_64(eb.getInt64Ty(), params_, slot));
  dims_[slot] = v;
  return v;
}

Value* ElementalEmitter::buffer_ptr(int buffer) {
  auto it = buf_ptrs_.find(buffer);
  if (it != buf_ptrs_.end()) return it->second;
  llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
  llvm::Type* pty = eb.getPtrTy();
  Value* v = eb.CreateLoad(pty, eb.CreateConstInBoundsGEP1_64(pty, bufs_, buffer));
  buf_ptrs_[buffer] = v;
  return v;
}

Value* ElementalEmitter::linearize(const KExpr* e, const std::vector<Value*>& idx) {
  // A row-local value is read only in the current row of its group: its element is the row's
  // base plus the column, said so directly. Recombined from the row's delinearized dims, the
  // index hid that the read and the group's store of the same element are one address, and
  // the vectorizer's run-time overlap check then sent every row to the scalar loop.
  if (row_base_ && !idx.empty() && static_cast<int>(idx.size()) == e->rank() && row_local_.count(e->buffer))
    return b_.CreateAdd(row_base_, idx.back());
  Value* off = b_.getInt64(0);
  for (int d = 0; d < e->rank(); ++d) {
    if (e->dims[d] < 0) continue;  // a static 1: its index is 0
    off = b_.CreateAdd(b_.CreateMul(off, dim(e->dims[d])), idx[d]);
  }
  return off;
}

Value* ElementalEmitter::operand_at(const KExpr* e, int operand, int64_t i, const KExpr* root) {
  const KExpr* o = e->operands[operand];
  std::vector<Value*> oi;
  if (o->rank() == 1) oi.push_back(b_.getInt64(i));
  return emit(o, oi, root);
}

std::vector<Value*> ElementalEmitter::delinearize_slots(const std::vector<int>& slots, Value* linear) {
  std::vector<Value*> idx(slots.size());
  for (int d = static_cast<int>(slots.size()) - 1; d >= 0; --d) {
    if (slots[d] < 0) {
      idx[d] = b_.getInt64(0);
      continue;
    }
    Value* n = dim(slots[d]);
    idx[d] = d == 0 ? linear : b_.CreateURem(linear, n);
    if (d > 0) linear = b_.CreateUDiv(linear, n);
  }
  return idx;
}

std::vector<Value*> ElementalEmitter::delinearize(const KExpr* e, Value* linear, int ndims) {
  return delinearize_slots(std::vector<int>(e->dims.begin(), e->dims.begin() + ndims), linear);
}

Value* ElementalEmitter::element_ptr(const KExpr* e, Value* linear) {
  llvm::Type* t = mem_type(e->dtype);
  auto it = row_local_.find(e->buffer);
  if (it != row_local_.end()) return b_.CreateInBoundsGEP(t, it->second, b_.CreateSub(linear, row_base_));
  return b_.CreateInBoundsGEP(t, buffer_ptr(e->buffer), linear);
}

void ElementalEmitter::store(const KExpr* e, Value* linear, Value* v) {
  memo_.clear();  // a later load of this buffer must not see a value computed before the store
  llvm::Type* t = mem_type(e->dtype);
  if (e->dtype == DType::kBool) v = b_.CreateZExt(v, t);
  b_.CreateStore(v, element_ptr(e, linear));
}

void ElementalEmitter::emit_roots(const Step& s, const std::vector<Value*>& idx, Value* linear) {
  Value* v = emit(s.root, idx, s.root);
  store(s.root, linear, v);
  computed_[s.root] = v;
  for (const KExpr* sib : s.siblings) {
    Value* w = emit(sib, idx, sib);
    store(sib, linear, w);
    computed_[sib] = w;
  }
  computed_.clear();
}

std::vector<Value*> ElementalEmitter::root_values(const Step& s, const std::vector<Value*>& idx) {
  std::vector<Value*> values{emit(s.root, idx, s.root)};
  computed_[s.root] = values[0];
  for (const KExpr* sib : s.siblings) {
    values.push_back(emit(sib, idx, sib));
    computed_[sib] = values.back();
  }
  computed_.clear();
  return values;
}

void ElementalEmitter::store_roots(const Step& s, Value* linear, const std::vector<Value*>& values) {
  store(s.root, linear, values.at(0));
  for (size_t k = 0; k < s.siblings.size(); ++k) store(s.siblings[k], linear, values.at(k + 1));
}

Value* ElementalEmitter::load(const KExpr* e, Value* linear) {
  llvm::Type* t = mem_type(e->dtype);
  Value* v = b_.CreateLoad(t, element_ptr(e, linear));
  return e->dtype == DType::kBool ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
}

Value* ElementalEmitter::fconst(DType d, double v) {
  llvm::Type* t = reg_type(d);
  if (is_float(d)) return llvm::ConstantFP::get(t, v);
  if (d == DType::kBool) return b_.getInt1(v != 0);
  return llvm::ConstantInt::get(t, static_cast<int64_t>(v), true);
}

// NaN-propagating max/min as compare+select (LLVM 16's x86 backend cannot select
// llvm.maximum/minimum on f32); vectorizes to cmp/blend.
Value* ElementalEmitter::fmax_nan(Value* x, Value* y, bool is_max) {
  Value* pick_x =
      b_.CreateOr(b_.CreateFCmpUNO(x, x), is_max ? b_.CreateFCmpOGT(x, y) : b_.CreateFCmpOLT(x, y));
  return b_.CreateSelect(pick_x, x, y);
}

// float32 exp, at most 1.06 ulp from the correctly rounded result over every float32 input
// (checked exhaustively against the float64 exp when written), subnormal results included.
// x is clamped to [-104, 88.75] first (NaN passes: the compares fail): exp(-104) rounds to 0
// and exp(88.75) to inf, so the tails need no selects of their own, and k = round(x log2 e)
// lies in [-150, 128]. The rounding adds 1.5 * 2^23 (plus a bias) in one fused multiply-add,
// leaving k in the low bits of the sum; a second such sum gives k1 = round(x log2 e / 2), and
// 2^k1 and 2^(k - k1) are those bits (and their difference) shifted into the exponent field,
// both normal, so p * 2^k1 is exact and the product with 2^(k - k1) rounds once.
Value* ElementalEmitter::exp_f32(Value* x) {
  llvm::Type* t = x->getType();
  llvm::Type* it = b_.getInt32Ty();
  auto C = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fma = [&](Value* a, Value* m, Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t}, {a, m, c});
  };
  Value* xc = b_.CreateSelect(b_.CreateFCmpOLT(x, C(-104.0)), C(-104.0), x);
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, C(88.75)), C(88.75), xc);
  const double magic_k = 12582912.0 + 254, magic_k1 = 12582912.0 + 127;  // 1.5 * 2^23 + bias
  Value* tk = fma(xc, C(1.4426950408889634), C(magic_k));
  Value* tk1 = fma(xc, C(0.7213475204444817), C(magic_k1));
  Value* k = b_.CreateFSub(tk, C(magic_k));
  Value* r = fma(k, C(-0.693145751953125), xc);  // k ln2's high part is exact
  r = fma(k, C(-1.428606765330187045e-06), r);
  // Minimax on [-ln2/2, ln2/2] with p(0) = 1 (relative error 2e-9).
  static const double kCoef[] = {
      1.384243718e-03, 8.374153636e-03, 4.166803136e-02, 1.666643173e-01, 4.999999404e-01, 1.0, 1.0};
  Value* p = C(kCoef[0]);
  for (size_t i = 1; i < sizeof(kCoef) / sizeof(kCoef[0]); ++i) p = fma(p, r, C(kCoef[i]));
  Value* bk = b_.CreateBitCast(tk, it);
  Value* bk1 = b_.CreateBitCast(tk1, it);
  Value* s1 = b_.CreateBitCast(b_.CreateShl(bk1, 23), t);                    // 2^k1
  Value* s2 = b_.CreateBitCast(b_.CreateShl(b_.CreateSub(bk, bk1), 23), t);  // 2^(k - k1)
  return b_.CreateFMul(b_.CreateFMul(p, s1), s2);
}

// exp(x) inline, so it vectorizes with the loop (no libm call per vector): x = k ln2 + r
// with |r| <= ln2/2 (ln2 split in two for exactness), exp(r) by a polynomial, times 2^k built
// in the exponent bits as two halves so large |k| neither overflows nor flushes early.
// float64: the Taylor polynomial of degree 12 (below half an ulp on that range).
// float32 (exp_f32): a degree-6 minimax polynomial and the rounding done by adding a magic
// constant, so an exponential costs about 17 vector instructions instead of 30: softmax and
// the other row reductions are bound by these, not by memory.
Value* ElementalEmitter::exp_inline(Value* x, DType dt) {
  bool f32 = dt == DType::kFloat32;
  if (f32) return exp_f32(x);
  llvm::Type* t = reg_type(dt);
  llvm::Type* it = f32 ? b_.getInt32Ty() : b_.getInt64Ty();
  auto C = [&](double v) { return llvm::ConstantFP::get(t, v); };
  Value* k = call_intrinsic(llvm::Intrinsic::rint, b_.CreateFMul(x, C(1.4426950408889634)));
  double hi = f32 ? 0.693145751953125 : 6.93147180369123816490e-01;
  double lo = f32 ? 1.428606765330187045e-06 : 1.90821492927058770002e-10;
  Value* r = b_.CreateFSub(x, b_.CreateFMul(k, C(hi)));
  r = b_.CreateFSub(r, b_.CreateFMul(k, C(lo)));
  int degree = f32 ? 7 : 12;
  double coef = 1.0;
  std::vector<double> c(degree + 1);
  for (int i = 0; i <= degree; ++i) c[i] = coef, coef /= (i + 1);
  // Horner steps as fmuladd: fused where the target has FMA (half the instructions, and each
  // step rounds once), so a softmax's exponentials keep up with its memory traffic.
  Value* p = C(c[degree]);
  for (int i = degree - 1; i >= 0; --i)
    p = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t}, {p, r, C(c[i])});
  // k is clamped so its halves stay representable; the limits below decide the tails.
  Value* kc = b_.CreateFPToSI(
      b_.CreateSelect(
          b_.CreateFCmpOLT(k, C(f32 ? -200.0 : -1200.0)), C(f32 ? -200.0 : -1200.0),
          b_.CreateSelect(b_.CreateFCmpOGT(k, C(f32 ? 200.0 : 1200.0)), C(f32 ? 200.0 : 1200.0), k)),
      it);
  Value* k1 = b_.CreateAShr(kc, 1);
  Value* k2 = b_.CreateSub(kc, k1);
  int bias = f32 ? 127 : 1023, mant = f32 ? 23 : 52;
  auto pow2 = [&](Value* e) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, llvm::ConstantInt::get(it, bias)), mant), t);
  };
  Value* res = b_.CreateFMul(b_.CreateFMul(p, pow2(k1)), pow2(k2));
  double over = f32 ? 88.72283935546875 : 709.782712893384;
  double under = f32 ? -103.972077083991796 : -745.1332191019411;
  res = b_.CreateSelect(b_.CreateFCmpOGT(x, C(over)), C(std::numeric_limits<double>::infinity()), res);
  res = b_.CreateSelect(b_.CreateFCmpOLT(x, C(under)), C(0.0), res);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, res);
}

// float32 tanh as a convergent of Lambert's continued fraction
// tanh x = x / (1 + x^2 / (3 + x^2 / (5 + ...))), depth 11: x * N(x^2) / D(x^2) with
// degree-5 polynomials, relative error < 7e-7 on |x| <= 9 (tanh(9) rounds to 1 in float32).
// One division and ten FMAs, so the loop stays memory-bound. NaN propagates (compares fail).
Value* ElementalEmitter::tanh_rational(Value* x) {
  constexpr int kDepth = 11;
  // Convergent polynomials in y = x^2, from the tail: f = (2d-1), f_k = (2k-1) + y / f_{k+1}.
  std::vector<double> num{2.0 * kDepth - 1}, den{1.0};
  for (int k = kDepth - 1; k >= 1; --k) {
    std::vector<double> n2(std::max(num.size(), den.size() + 1), 0.0);
    for (size_t i = 0; i < num.size(); ++i) n2[i] += num[i] * (2 * k - 1);
    for (size_t i = 0; i < den.size(); ++i) n2[i + 1] += den[i];
    den = num;
    num = n2;
  }
  // tanh = x * den(y) / num(y)
  llvm::Type* t = x->getType();
  auto C = [&](double v) { return llvm::ConstantFP::get(t, v); };
  Value* xc = b_.CreateSelect(b_.CreateFCmpOGT(x, C(9.0)), C(9.0), x);
  xc = b_.CreateSelect(b_.CreateFCmpOLT(xc, C(-9.0)), C(-9.0), xc);
  Value* y = b_.CreateFMul(xc, xc);
  // Horner steps as fmuladd (fused where the target has FMA), as exp's: a loop iterating
  // tanh over a vector that stays in cache is bound by these instructions, not by memory.
  auto horner = [&](const std::vector<double>& c) {
    Value* acc = C(c.back());
    for (int i = static_cast<int>(c.size()) - 2; i >= 0; --i)
      acc = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t}, {acc, y, C(c[i])});
    return acc;
  };
  Value* r = b_.CreateFDiv(b_.CreateFMul(xc, horner(den)), horner(num));
  r = b_.CreateSelect(b_.CreateFCmpOGT(r, C(1.0)), C(1.0), r);
  return b_.CreateSelect(b_.CreateFCmpOLT(r, C(-1.0)), C(-1.0), r);
}

Value* ElementalEmitter::call_intrinsic(llvm::Intrinsic::ID id, Value* x, Value* y) {
  if (y) return b_.CreateBinaryIntrinsic(id, x, y);
  return b_.CreateUnaryIntrinsic(id, x);
}

// Operand index for numpy broadcasting: right-aligned; static-1 operand dims index 0.
std::vector<Value*> ElementalEmitter::broadcast_index(const KExpr* out, const KExpr* o,
                                                      const std::vector<Value*>& idx) {
  std::vector<Value*> r(o->rank());
  int off = out->rank() - o->rank();
  for (int d = 0; d < o->rank(); ++d) r[d] = o->dims[d] < 0 ? b_.getInt64(0) : idx[d + off];
  return r;
}

Value* ElementalEmitter::emit(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  if ((e->kind == KKind::kBuffer) || (e->materialized && e != root)) {
    if (auto p = pinned_.find(e); p != pinned_.end()) return p->second;
    auto it = computed_.find(e);
    return it != computed_.end() ? it->second : load(e, linearize(e, idx));
  }
  if (e->kind == KKind::kScalar) return emit_new(e, idx, root);
  MemoKey key{e, root, b_.GetInsertBlock(), idx};
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  emit_operands_first(e, idx, root);
  key.block = b_.GetInsertBlock();
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  Value* v = emit_new(e, idx, root);
  // Generating v may have moved to another block (a reduction loop, a check): then v lives
  // there, and only uses in that block may take it.
  key.block = b_.GetInsertBlock();
  memo_[std::move(key)] = v;
  return v;
}

namespace {
// Kinds that read each operand at the output's own index (numpy broadcasting aside).
bool reads_at_own_index(KKind k) {
  return k == KKind::kUnary || k == KKind::kCast || k == KKind::kBinary || k == KKind::kSelect;
}
}  // namespace

bool ElementalEmitter::ready(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  if (e->kind == KKind::kBuffer || e->kind == KKind::kScalar || (e->materialized && e != root)) return true;
  return memo_.count(MemoKey{e, root, b_.GetInsertBlock(), idx}) != 0;
}

// emit_new reaches an operand through emit, so a chain of n elementwise ops recursed n deep:
// a 20,000-op fused cluster overflowed the stack. Here the chain below e is walked from an
// explicit stack and generated deepest first, so each emit on the way, and emit_new(e) after,
// finds its operands in the memo (one level deep). Other kinds end the walk: they are emitted
// as they come, and walk their own operands the same way.
bool ElementalEmitter::generates_operand(const KExpr* x, size_t k) const {
  if (x->kind != KKind::kSelect) return true;
  auto f = fixed_.find(x->operands[0]);
  return f == fixed_.end() || k == (f->second ? 1u : 2u);
}

void ElementalEmitter::emit_operands_first(const KExpr* e, const std::vector<Value*>& idx,
                                           const KExpr* root) {
  if (!reads_at_own_index(e->kind)) return;
  struct Item {
    const KExpr* e;
    std::vector<Value*> idx;
    bool expanded;
  };
  std::vector<Item> stack;
  std::set<std::pair<const KExpr*, std::vector<Value*>>> queued;  // a shared operand once
  auto push_operands = [&](const KExpr* x, const std::vector<Value*>& xi) {
    for (size_t k = 0; k < x->operands.size(); ++k) {
      if (!generates_operand(x, k)) continue;
      const KExpr* o = x->operands[k];
      std::vector<Value*> oi = broadcast_index(x, o, xi);
      if (ready(o, oi, root) || !queued.insert({o, oi}).second) continue;
      stack.push_back({o, std::move(oi), false});
    }
  };
  push_operands(e, idx);
  while (!stack.empty()) {
    Item& top = stack.back();
    if (top.expanded || !reads_at_own_index(top.e->kind)) {
      Item it = std::move(top);
      stack.pop_back();
      emit(it.e, it.idx, root);
      continue;
    }
    top.expanded = true;
    const KExpr* x = top.e;
    const std::vector<Value*> xi = top.idx;  // a copy: pushing may move the stack
    push_operands(x, xi);
  }
}

Value* ElementalEmitter::emit_new(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  switch (e->kind) {
    case KKind::kScalar:
      if (is_int(e->dtype)) return llvm::ConstantInt::get(reg_type(e->dtype), e->iscalar, /*isSigned=*/true);
      return fconst(e->dtype, e->scalar);
    case KKind::kUnary: {
      const KExpr* o = e->operands[0];
      return unary(e, emit(o, broadcast_index(e, o, idx), root));
    }
    case KKind::kCast: {
      const KExpr* o = e->operands[0];
      return cast(o->dtype, e->dtype, emit(o, broadcast_index(e, o, idx), root));
    }
    case KKind::kBinary: {
      const KExpr *x = e->operands[0], *y = e->operands[1];
      return binary(e, x->dtype, emit(x, broadcast_index(e, x, idx), root),
                    emit(y, broadcast_index(e, y, idx), root));
    }
    case KKind::kSelect: {
      if (auto f = fixed_.find(e->operands[0]); f != fixed_.end()) {
        const KExpr* o = e->operands[f->second ? 1 : 2];
        return emit(o, broadcast_index(e, o, idx), root);
      }
      Value* c = emit(e->operands[0], broadcast_index(e, e->operands[0], idx), root);
      Value* x = emit(e->operands[1], broadcast_index(e, e->operands[1], idx), root);
      Value* y = emit(e->operands[2], broadcast_index(e, e->operands[2], idx), root);
      return b_.CreateSelect(c, x, y);
    }
    case KKind::kTranspose: {
      const KExpr* o = e->operands[0];
      std::vector<Value*> oi(o->rank());
      for (int d = 0; d < e->rank(); ++d) oi[e->perm[d]] = idx[d];
      return emit(o, oi, root);
    }
    case KKind::kReshape: {
      const KExpr* o = e->operands[0];
      if (!e->out_of_in.empty()) {  // only 1s inserted or removed (lowering's map_unit_reshape)
        std::vector<Value*> oi(o->rank());
        for (int d = 0; d < o->rank(); ++d)
          oi[d] = e->out_of_in[d] < 0 ? b_.getInt64(0) : idx[e->out_of_in[d]];
        return emit(o, oi, root);
      }
      return emit(o, delinearize(o, linearize(e, idx), o->rank()), root);
    }
    case KKind::kSlice: {
      const KExpr* o = e->operands[0];
      std::vector<Value*> oi(o->rank());
      for (int d = 0; d < o->rank(); ++d) {
        Value* start = e->start_slot[d] < 0 ? b_.getInt64(0) : dim(e->start_slot[d]);
        if (e->out_of_in[d] < 0) {
          oi[d] = start;
        } else {
          Value* stride = e->stride_slot[d] < 0 ? b_.getInt64(1) : dim(e->stride_slot[d]);
          oi[d] = b_.CreateAdd(start, b_.CreateMul(idx[e->out_of_in[d]], stride));
        }
        if (o->dims[d] < 0) oi[d] = b_.getInt64(0);
      }
      return emit(o, oi, root);
    }
    case KKind::kConcat:
      return concat(e, idx, root);
    case KKind::kGather:
      return gather(e, idx, root);
    case KKind::kGatherNd:
      return gather_nd(e, idx, root);
    case KKind::kOneHot: {
      const KExpr* ix = e->operands[0];
      const int axis = e->axes[0];
      std::vector<Value*> ii;
      for (int d = 0; d < e->rank(); ++d)
        if (d != axis) ii.push_back(idx[d]);
      Value* v = b_.CreateSExt(emit(ix, ii, root), b_.getInt64Ty());
      Value* hit = b_.CreateICmpEQ(v, idx[axis]);  // out of range: never equal, off_value (TF)
      return b_.CreateSelect(hit, emit(e->operands[1], {}, root), emit(e->operands[2], {}, root));
    }
    case KKind::kIndexMap:
      return index_map(e, idx, root);
    case KKind::kRandom:  // counter-based: the formula needs only the element's linear index
      return random_formula(*this, e, linearize(e, idx), root);
    case KKind::kArgReduce:
      return arg_reduce(e, idx, root);
    case KKind::kShapeOf: {
      const KExpr* o = e->operands[0];
      Value* v = b_.getInt64(0);
      for (int d = o->rank() - 1; d >= 0; --d)
        v = b_.CreateSelect(b_.CreateICmpEQ(idx[0], b_.getInt64(d)), dim(o->dims[d]), v);
      return b_.CreateTrunc(v, reg_type(e->dtype));  // an int64 stays as it is
    }
    case KKind::kReduce:
      return reduce(e, idx, root);
    default:
      JF_CHECK(false, "unhandled kernel IR kind");
  }
}

// Elementwise ops dispatch through the record: a formula, or the record's math function.
Value* ElementalEmitter::unary(const KExpr* e, Value* x) {
  if (e->op == OpId::Identity) return x;  // broadcasts and fills
  if (op_def(e->op).lower == LowerKind::kMath) return math_call(e, x);
  UnaryFormula f = unary_formula(e->op);
  JF_CHECK(f, "unary op without a formula: ", op_def(e->op).name);
  return f(*this, e, x);
}

Value* ElementalEmitter::binary(const KExpr* e, DType in, Value* x, Value* y) {
  if (op_def(e->op).lower == LowerKind::kMath) return math_call(e, x, y);
  BinaryFormula f = binary_formula(e->op);
  JF_CHECK(f, "binary op without a formula: ", op_def(e->op).name);
  return f(*this, e, in, x, y);
}

// Branches to a new (unlikely) failing block where cond holds and returns the block after
// the check; the builder is left in the failing block.
llvm::BasicBlock* ElementalEmitter::begin_check(const KExpr* e, Value* cond) {
  if (status_slot_ < 0)
    throw_unimplemented(e->node ? e->node->name : "an op", ": its run-time check (", op_def(e->op).name,
                        " on ", dtype_name(e->dtype), ") has no GPU kernel yet");
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "check.fail", fn);
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "check.ok", fn);
  llvm::MDBuilder md(ctx_);
  b_.CreateCondBr(cond, fail, ok, md.createBranchWeights(1, 1 << 20));
  b_.SetInsertPoint(fail);
  return ok;
}

void ElementalEmitter::fail_if(const KExpr* e, Value* cond, CheckKind kind) {
  llvm::BasicBlock* ok = begin_check(e, cond);
  // Parts running on other threads may store too: atomic, any one code is enough.
  auto* st = b_.CreateStore(b_.getInt64(status_code(e, kind)), buffer_ptr(status_slot_));
  st->setAtomic(llvm::AtomicOrdering::Monotonic);
  st->setAlignment(llvm::Align(8));
  b_.CreateBr(ok);
  b_.SetInsertPoint(ok);
}

void ElementalEmitter::fail_if_merge(const KExpr* e, Value* cond, Value* kind) {
  llvm::BasicBlock* ok = begin_check(e, cond);
  llvm::BasicBlock* fail = b_.GetInsertBlock();
  llvm::Function* fn = fail->getParent();
  // A compare-and-swap loop ORs the kind in while the word is 0 or this check's own code; a
  // word holding another check's code is left alone, so the word always names one check.
  const int64_t own = (e->id + 1) * kCheckKinds;
  Value* ptr = buffer_ptr(status_slot_);
  auto* init = b_.CreateLoad(b_.getInt64Ty(), ptr);
  init->setAtomic(llvm::AtomicOrdering::Monotonic);
  init->setAlignment(llvm::Align(8));
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, "check.merge", fn);
  llvm::BasicBlock* swap = llvm::BasicBlock::Create(ctx_, "check.swap", fn);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode* old = b_.CreatePHI(b_.getInt64Ty(), 2);
  old->addIncoming(init, fail);
  Value* other =
      b_.CreateAnd(b_.CreateICmpNE(old, b_.getInt64(0)),
                   b_.CreateICmpNE(b_.CreateAnd(old, b_.getInt64(~(kCheckKinds - 1))), b_.getInt64(own)));
  b_.CreateCondBr(other, ok, swap);
  b_.SetInsertPoint(swap);
  Value* want = b_.CreateOr(b_.CreateOr(old, b_.getInt64(own)), kind);
  auto* cas = b_.CreateAtomicCmpXchg(ptr, old, want, llvm::MaybeAlign(8), llvm::AtomicOrdering::Monotonic,
                                     llvm::AtomicOrdering::Monotonic);
  old->addIncoming(b_.CreateExtractValue(cas, 0), swap);
  b_.CreateCondBr(b_.CreateExtractValue(cas, 1), ok, loop);
  b_.SetInsertPoint(ok);
}

Value* ElementalEmitter::math_call(const KExpr* e, Value* x, Value* y) {
  const std::string base = op_def(e->op).math;
  llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID("llvm." + base);
  if (id != llvm::Intrinsic::not_intrinsic) return call_intrinsic(id, x, y);
  llvm::Module* m = b_.GetInsertBlock()->getModule();
  llvm::Type* t = x->getType();
  std::string name = base + (e->dtype == DType::kFloat32 ? "f" : "");
  std::vector<llvm::Type*> params(y ? 2 : 1, t);
  auto fn = m->getOrInsertFunction(name, llvm::FunctionType::get(t, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(fn.getCallee())) {
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
  }
  return y ? b_.CreateCall(fn, {x, y}) : b_.CreateCall(fn, {x});
}

// Half values: float16 is LLVM's half (one vcvtph2ps / vcvtps2ph each way where the CPU has
// F16C, a compiler-rt routine where it does not); bfloat16 is its bits, widened by a shift.
Value* ElementalEmitter::widen_half(DType from, Value* h) {
  if (from == DType::kFloat16) return b_.CreateFPExt(h, b_.getFloatTy());
  return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(h, b_.getInt32Ty()), 16), b_.getFloatTy());
}

// float32 to a half type, rounded to nearest even as the eager kernels round (dtype.h):
// overflow to infinity, NaN stays a quiet NaN (bfloat16: its sign and the payload's top bits).
Value* ElementalEmitter::narrow_half(DType to, Value* f) {
  if (to == DType::kFloat16) return b_.CreateFPTrunc(f, b_.getHalfTy());
  auto C = [&](uint32_t v) { return b_.getInt32(v); };
  Value* x = b_.CreateBitCast(f, b_.getInt32Ty());
  Value* odd = b_.CreateAnd(b_.CreateLShr(x, 16), C(1));
  Value* rounded = b_.CreateLShr(b_.CreateAdd(x, b_.CreateAdd(odd, C(0x7fff))), 16);
  Value* nan = b_.CreateOr(b_.CreateLShr(x, 16), C(0x40));
  return b_.CreateTrunc(b_.CreateSelect(b_.CreateFCmpUNO(f, f), nan, rounded), b_.getInt16Ty());
}

Value* ElementalEmitter::cast(DType from, DType to, Value* x) {
  if (from == to) return x;
  // Half types convert through float32, as the eager kernels do (float64 rounds twice there).
  if (is_half(from)) return cast(DType::kFloat32, to, widen_half(from, x));
  if (is_half(to)) return narrow_half(to, cast(from, DType::kFloat32, x));
  llvm::Type* t = reg_type(to);
  if (to == DType::kBool)
    return is_float(from) ? b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                          : b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  if (from == DType::kBool) return is_float(to) ? b_.CreateUIToFP(x, t) : b_.CreateZExt(x, t);
  if (is_float(from) && is_float(to)) return b_.CreateFPCast(x, t);
  if (is_float(from)) return b_.CreateFPToSI(x, t);
  if (is_float(to)) return b_.CreateSIToFP(x, t);
  return b_.CreateSExtOrTrunc(x, t);
}

// Integer identities are built as integers: INT64_MAX does not survive a trip through double.
Value* ElementalEmitter::reduce_identity(const KExpr* e) {
  DType dt = e->dtype;
  const ReduceFormula::Init init = reduce_formula(e->op)->init;
  if (!is_float(dt)) {
    bool i32 = dt == DType::kInt32;
    int64_t v = 0;
    if (init == ReduceFormula::kOne) v = 1;
    if (init == ReduceFormula::kLowest) v = i32 ? INT32_MIN : INT64_MIN;
    if (init == ReduceFormula::kHighest) v = i32 ? INT32_MAX : INT64_MAX;
    return llvm::ConstantInt::get(reg_type(dt), v, /*isSigned=*/true);
  }
  double v = 0;
  if (init == ReduceFormula::kOne) v = 1;
  if (init == ReduceFormula::kLowest) v = -std::numeric_limits<double>::infinity();
  if (init == ReduceFormula::kHighest) v = std::numeric_limits<double>::infinity();
  return fconst(dt, v);
}

// The element first: NaN-propagating max/min then keep the accumulator on ties.
Value* ElementalEmitter::reduce_combine(const KExpr* e, Value* acc, Value* v) {
  return binary_formula(reduce_formula(e->op)->combine)(*this, e, e->dtype, v, acc);
}

std::vector<Value*> ElementalEmitter::reduce_kept_index(const KExpr* e, const std::vector<Value*>& out_idx) {
  const KExpr* x = e->operands[0];
  std::vector<Value*> xi(x->rank(), nullptr);
  int out_d = 0;
  for (int d = 0; d < x->rank(); ++d) {
    bool red = std::find(e->axes.begin(), e->axes.end(), d) != e->axes.end();
    if (!red) xi[d] = x->dims[d] < 0 ? b_.getInt64(0) : out_idx[out_d];
    if (!red || e->keep_dims) ++out_d;
  }
  return xi;
}

std::vector<Value*> ElementalEmitter::reduce_operand_index(const KExpr* e, const std::vector<Value*>& out_idx,
                                                           Value* red_linear) {
  const KExpr* x = e->operands[0];
  std::vector<Value*> xi = reduce_kept_index(e, out_idx);
  std::vector<int> red_slots;
  for (int a : e->axes) red_slots.push_back(x->dims[a]);
  std::vector<Value*> ri = delinearize_slots(red_slots, red_linear);
  for (size_t k = 0; k < e->axes.size(); ++k) xi[e->axes[k]] = ri[k];
  return xi;
}

Value* ElementalEmitter::reduce_extent(const KExpr* e) {
  Value* count = b_.getInt64(1);
  for (int a : e->axes) count = b_.CreateMul(count, dim(e->operands[0]->dims[a]));
  return count;
}

Value* ElementalEmitter::reduce_finish(const KExpr* e, Value* acc) {
  if (!reduce_formula(e->op)->mean) return acc;
  Value* count = reduce_extent(e);
  llvm::Type* t = reg_type(e->dtype);
  if (is_float(e->dtype)) return b_.CreateFDiv(acc, b_.CreateSIToFP(count, t));
  Value* c = b_.CreateSelect(b_.CreateICmpEQ(count, b_.getInt64(0)), b_.getInt64(1), count);
  return b_.CreateSDiv(acc, b_.CreateSExtOrTrunc(c, t));
}

// One output element of a reduction: nested loops over the reduced operand dims.
Value* ElementalEmitter::reduce(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  const KExpr* x = e->operands[0];
  DType dt = e->dtype;
  bool f = is_float(dt);
  llvm::Type* t = reg_type(dt);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
  llvm::AllocaInst* acc = eb.CreateAlloca(t);
  b_.CreateStore(reduce_identity(e), acc);
  // Float max/min: maxnum/minnum (a reduction LLVM vectorizes) plus a separate "saw a NaN"
  // flag, so NaN still propagates like the eager kernels.
  const OpId combine = reduce_formula(e->op)->combine;
  const bool max = combine == OpId::Maximum;
  bool fminmax = f && (max || combine == OpId::Minimum);
  llvm::AllocaInst* nan_seen = nullptr;
  if (fminmax) {
    nan_seen = eb.CreateAlloca(b_.getInt1Ty());
    b_.CreateStore(b_.getInt1(false), nan_seen);
  }
  // Operand index: kept dims from idx, reduced dims from loop counters.
  std::vector<Value*> xi = reduce_kept_index(e, idx);
  std::vector<llvm::BasicBlock*> latches;
  std::vector<llvm::PHINode*> ivs;
  std::vector<llvm::BasicBlock*> exits;
  for (int a : e->axes) {
    Value* n = dim(x->dims[a]);
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "red.head", fn);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "red.body", fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "red.exit", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2);
    iv->addIncoming(b_.getInt64(0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, n), body, exit);
    b_.SetInsertPoint(body);
    xi[a] = x->dims[a] < 0 ? static_cast<Value*>(b_.getInt64(0)) : static_cast<Value*>(iv);
    ivs.push_back(iv);
    latches.push_back(head);
    exits.push_back(exit);
  }
  Value* v = emit(x, xi, root);
  Value* cur = b_.CreateLoad(t, acc);
  Value* next;
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  if (fminmax)
    next = call_intrinsic(max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, cur, v);
  else
    next = reduce_combine(e, cur, v);
  if (fminmax)
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), nan_seen), b_.CreateFCmpUNO(v, v)), nan_seen);
  // maxnum/minnum may assume no NaN (the flag above catches NaNs): LLVM then vectorizes them.
  if (fminmax) fmf.setNoNaNs(), fmf.setNoSignedZeros();
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(next))
    if (f && llvm::isa<llvm::FPMathOperator>(inst)) inst->setFastMathFlags(fmf);
  b_.CreateStore(next, acc);
  for (int k = static_cast<int>(ivs.size()) - 1; k >= 0; --k) {
    llvm::PHINode* iv = ivs[k];
    Value* inc = b_.CreateAdd(iv, b_.getInt64(1));
    iv->addIncoming(inc, b_.GetInsertBlock());
    b_.CreateBr(latches[k]);
    b_.SetInsertPoint(exits[k]);
  }
  Value* r = b_.CreateLoad(t, acc);
  if (fminmax) r = b_.CreateSelect(b_.CreateLoad(b_.getInt1Ty(), nan_seen), llvm::ConstantFP::getNaN(t), r);
  return reduce_finish(e, r);
}

// Gather: the index from the indices operand, checked against the gathered dim (an error,
// as eager, not XLA's clamp), then the params element.
// Whether a rank-0 expression has one value for the whole kernel call: constants, scalar
// buffers the step does not write, and elementwise ops of those.
bool ElementalEmitter::invariant_scalar(const KExpr* x, const KExpr* root) const {
  if (x->rank() != 0 || x == root || computed_.count(x) || pinned_.count(x)) return false;
  if (x->kind == KKind::kScalar) return true;
  if (x->kind == KKind::kBuffer || x->materialized) return true;
  if (!is_elementwise(x->kind)) return false;
  for (const KExpr* o : x->operands)
    if (!invariant_scalar(o, root)) return false;
  return true;
}

// A gather at one scalar index (a TensorArray's read, x[i] of a traced i) loads and checks the
// index once, in the entry block: per element, the load (which the output's stores may alias)
// and the check's branch kept the loop from vectorizing.
Value* ElementalEmitter::hoisted_gather_index(const KExpr* e, const KExpr* root) {
  if (auto it = hoisted_index_.find(e); it != hoisted_index_.end()) return it->second;
  llvm::Instruction* term = entry_->getTerminator();
  const auto ip = b_.saveIP();
  b_.SetInsertPoint(term);
  Value* v = b_.CreateSExt(emit(e->operands[1], {}, root), b_.getInt64Ty());
  Value* n = dim(e->operands[0]->dims[e->axes[0]]);
  Value* bad = b_.CreateOr(b_.CreateICmpSLT(v, b_.getInt64(0)), b_.CreateICmpSGE(v, n));
  Value* safe = b_.CreateSelect(bad, b_.getInt64(0), v);  // a failed call still reads in bounds
  llvm::BasicBlock* rest = entry_->splitBasicBlock(term, "index.ok");
  entry_->getTerminator()->eraseFromParent();
  b_.SetInsertPoint(entry_);
  llvm::BasicBlock* ok = begin_check(e, bad);
  auto* st =
      b_.CreateStore(b_.getInt64(status_code(e, CheckKind::kIndexOutOfRange)), buffer_ptr(status_slot_));
  st->setAtomic(llvm::AtomicOrdering::Monotonic);
  st->setAlignment(llvm::Align(8));
  b_.CreateBr(ok);
  b_.SetInsertPoint(ok);
  b_.CreateBr(rest);
  b_.restoreIP(ip);
  hoisted_index_[e] = safe;
  return safe;
}

Value* ElementalEmitter::gather(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  const KExpr* p = e->operands[0];
  const KExpr* ix = e->operands[1];
  const int axis = e->axes[0], bd = e->batch_dims, ni = ix->rank() - bd;
  if (bd == 0 && status_slot_ >= 0 && entry_->getTerminator() && invariant_scalar(ix, root)) {
    std::vector<Value*> pi(idx.begin(), idx.begin() + axis);
    pi.push_back(hoisted_gather_index(e, root));
    pi.insert(pi.end(), idx.begin() + axis, idx.end());
    return emit(p, pi, root);
  }
  std::vector<Value*> ii(idx.begin(), idx.begin() + bd);
  ii.insert(ii.end(), idx.begin() + axis, idx.begin() + axis + ni);
  Value* v = b_.CreateSExt(emit(ix, ii, root), b_.getInt64Ty());
  Value* n = dim(p->dims[axis]);
  Value* bad = b_.CreateOr(b_.CreateICmpSLT(v, b_.getInt64(0)), b_.CreateICmpSGE(v, n));
  fail_if(e, bad, CheckKind::kIndexOutOfRange);
  std::vector<Value*> pi(idx.begin(), idx.begin() + axis);
  pi.push_back(b_.CreateSelect(bad, b_.getInt64(0), v));  // a failed element still reads in bounds
  pi.insert(pi.end(), idx.begin() + axis + ni, idx.end());
  return emit(p, pi, root);
}

// Per-dim maps; a pad dim reads a clamped index and the fill where any dim is outside.
Value* ElementalEmitter::index_map(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  const KExpr* x = e->operands[0];
  std::vector<Value*> xi(x->rank());
  Value* inside = nullptr;
  Value* zero = b_.getInt64(0);
  for (int d = 0; d < x->rank(); ++d) {
    Value* n = dim(x->dims[d]);
    Value* i = idx[d];
    Value* p = b_.getInt64(e->map_param[d]);
    Value* j = i;
    switch (static_cast<DimMapKind>(e->map_kind[d])) {
      case DimMapKind::kSame:
        break;
      case DimMapKind::kReverse:
        j = b_.CreateSub(b_.CreateSub(n, b_.getInt64(1)), i);
        break;
      case DimMapKind::kTile:
        j = b_.CreateURem(i, n);
        break;
      case DimMapKind::kPad: {
        j = b_.CreateSub(i, p);
        Value* in = b_.CreateAnd(b_.CreateICmpSGE(j, zero), b_.CreateICmpSLT(j, n));
        inside = inside ? b_.CreateAnd(inside, in) : in;
        j = b_.CreateSelect(in, j, zero);
        break;
      }
      case DimMapKind::kReflect:
      case DimMapKind::kSymmetric: {
        bool sym = static_cast<DimMapKind>(e->map_kind[d]) == DimMapKind::kSymmetric;
        j = b_.CreateSub(i, p);
        Value* low = sym ? b_.CreateSub(b_.CreateNeg(j), b_.getInt64(1)) : b_.CreateNeg(j);
        j = b_.CreateSelect(b_.CreateICmpSLT(j, zero), low, j);
        Value* top = b_.CreateSub(b_.CreateMul(n, b_.getInt64(2)), b_.getInt64(sym ? 1 : 2));
        j = b_.CreateSelect(b_.CreateICmpSGE(j, n), b_.CreateSub(top, j), j);
        break;
      }
      case DimMapKind::kRoll: {
        // The shift mod n (computed per element: n is a run-time dim, nonzero where elements exist).
        Value* s = b_.CreateSRem(p, n);
        s = b_.CreateSelect(b_.CreateICmpSLT(s, zero), b_.CreateAdd(s, n), s);
        j = b_.CreateSub(i, s);
        j = b_.CreateSelect(b_.CreateICmpSLT(j, zero), b_.CreateAdd(j, n), j);
        break;
      }
    }
    xi[d] = x->dims[d] < 0 ? zero : j;
  }
  Value* v = emit(x, xi, root);
  if (!inside) return v;
  return b_.CreateSelect(inside, v, emit(e->operands[1], {}, root));
}

// ArgMax/ArgMin as the eager kernel (TF's eager rule): start at index 0 holding the lowest
// (highest) finite value, move to each element strictly greater (less); NaN compares false.
Value* ElementalEmitter::arg_reduce(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  const KExpr* x = e->operands[0];
  const int axis = e->axes[0];
  const bool is_max = e->op == OpId::ArgMax, f = is_float(x->dtype), bit = x->dtype == DType::kBool;
  llvm::Type* t = reg_type(x->dtype);
  Value* start;
  if (bit) {  // an i1: false < true, compared unsigned
    start = b_.getInt1(!is_max);
  } else if (f) {
    double lim =
        x->dtype == DType::kFloat32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
    lim = float_attr(e, "start_limit", lim);  // a half-type operand's own limit (half_float.cc)
    start = llvm::ConstantFP::get(t, is_max ? -lim : lim);
  } else {
    bool i32 = x->dtype == DType::kInt32;
    int64_t lo = i32 ? INT32_MIN : INT64_MIN, hi = i32 ? INT32_MAX : INT64_MAX;
    start = llvm::ConstantInt::get(t, is_max ? lo : hi, true);
  }
  std::vector<Value*> xi(idx.begin(), idx.begin() + axis);
  xi.push_back(nullptr);
  xi.insert(xi.end(), idx.begin() + axis, idx.end());
  for (int d = 0; d < x->rank(); ++d)
    if (x->dims[d] < 0) xi[d] = b_.getInt64(0);
  // The running extreme and its index live in entry-block slots (registers after mem2reg).
  llvm::IRBuilder<> eb(entry_, entry_->getFirstInsertionPt());
  llvm::AllocaInst* bv = eb.CreateAlloca(t);
  llvm::AllocaInst* best_slot = eb.CreateAlloca(b_.getInt64Ty());
  b_.CreateStore(start, bv);
  b_.CreateStore(b_.getInt64(0), best_slot);
  for_range(b_, b_.getInt64(0), dim(x->dims[axis]), "arg", [&](Value* k) {
    if (x->dims[axis] >= 0) xi[axis] = k;
    Value* v = emit(x, xi, root);
    Value* cur = b_.CreateLoad(t, bv);
    Value* better = f     ? (is_max ? b_.CreateFCmpOGT(v, cur) : b_.CreateFCmpOLT(v, cur))
                    : bit ? (is_max ? b_.CreateICmpUGT(v, cur) : b_.CreateICmpULT(v, cur))
                          : (is_max ? b_.CreateICmpSGT(v, cur) : b_.CreateICmpSLT(v, cur));
    b_.CreateStore(b_.CreateSelect(better, v, cur), bv);
    b_.CreateStore(b_.CreateSelect(better, k, b_.CreateLoad(b_.getInt64Ty(), best_slot)), best_slot);
  });
  Value* best = b_.CreateLoad(b_.getInt64Ty(), best_slot);
  return b_.CreateTrunc(best, reg_type(e->dtype));  // an int64 stays as it is
}

// Concat: branch on the axis index to the operand that owns it.
Value* ElementalEmitter::concat(const KExpr* e, const std::vector<Value*>& idx, const KExpr* root) {
  int axis = e->axes[0];
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "cat.done", fn);
  std::vector<std::pair<Value*, llvm::BasicBlock*>> incoming;
  Value* offset = b_.getInt64(0);
  for (size_t k = 0; k < e->operands.size(); ++k) {
    const KExpr* o = e->operands[k];
    Value* len = o->dims[axis] < 0 ? b_.getInt64(1) : dim(o->dims[axis]);
    Value* end = b_.CreateAdd(offset, len);
    std::vector<Value*> oi = idx;
    oi[axis] = o->dims[axis] < 0 ? b_.getInt64(0) : b_.CreateSub(idx[axis], offset);
    if (k + 1 == e->operands.size()) {
      Value* v = emit(o, oi, root);
      incoming.push_back({v, b_.GetInsertBlock()});
      b_.CreateBr(done);
      break;
    }
    llvm::BasicBlock* take = llvm::BasicBlock::Create(ctx_, "cat.take", fn);
    llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx_, "cat.next", fn);
    b_.CreateCondBr(b_.CreateICmpSLT(idx[axis], end), take, next);
    b_.SetInsertPoint(take);
    Value* v = emit(o, oi, root);
    incoming.push_back({v, b_.GetInsertBlock()});
    b_.CreateBr(done);
    b_.SetInsertPoint(next);
    offset = end;
  }
  b_.SetInsertPoint(done);
  llvm::PHINode* phi = b_.CreatePHI(reg_type(e->dtype), static_cast<unsigned>(incoming.size()));
  for (auto& in : incoming) phi->addIncoming(in.first, in.second);
  return phi;
}

}  // namespace jf
