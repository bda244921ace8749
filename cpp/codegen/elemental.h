// The elemental emitter: LLVM IR for the value of one element of a kernel-IR expression,
// given its multi-index. Backend-neutral: CPU and GPU drivers wrap it in their own loops.
#pragma once
#include <llvm/IR/IRBuilder.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "codegen/kernel_ir.h"

namespace jf {

class ElementalEmitter;
// The value of a KKind::kRandom element at a row-major linear index (codegen/formulas_random.cc).
llvm::Value* random_formula(ElementalEmitter& E, const KExpr* e, llvm::Value* linear, const KExpr* root);

class ElementalEmitter {
 public:
  // bufs: i8** (one pointer per buffer); params: i64* (dims and slice parameters).
  ElementalEmitter(llvm::IRBuilder<>& b, llvm::Value* bufs, llvm::Value* params, llvm::BasicBlock* entry);

  // The element of `e` at `idx` (one i64 per dim). Materialized values other than `root`
  // are loaded from their buffers; `root` itself is computed.
  llvm::Value* emit(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  void store(const KExpr* e, llvm::Value* linear_index, llvm::Value* v);
  // One element of a loop step: its root, then its siblings (which take the roots already
  // computed from registers), each stored at `linear_index`.
  void emit_roots(const Step& s, const std::vector<llvm::Value*>& idx, llvm::Value* linear_index);
  // emit_roots in two halves, so a driver can compute several elements before storing any
  // (their loads then overlap): the root's and siblings' values, then their stores.
  std::vector<llvm::Value*> root_values(const Step& s, const std::vector<llvm::Value*>& idx);
  void store_roots(const Step& s, llvm::Value* linear_index, const std::vector<llvm::Value*>& values);
  llvm::Value* load(const KExpr* e, llvm::Value* linear_index);  // e's buffer, in register type
  llvm::Value* dim(int slot);                                    // i64 (1 for slot -1)
  llvm::Value* linearize(const KExpr* e, const std::vector<llvm::Value*>& idx);
  // The multi-index of the first `ndims` dims of `e` for a row-major linear index over them
  // (static-1 dims get index 0; the outermost takes the remaining quotient).
  std::vector<llvm::Value*> delinearize(const KExpr* e, llvm::Value* linear, int ndims);
  // The same over an explicit list of dim slots (-1: a static 1).
  std::vector<llvm::Value*> delinearize_slots(const std::vector<int>& slots, llvm::Value* linear);
  // Pieces of a reduction for drivers that parallelize it themselves (the GPU's block
  // reductions): the identity, a NaN-propagating combine, the operand index for an output
  // index and a linear position in the reduced space, the reduced extent, and the finish
  // (Mean divides by the extent).
  llvm::Value* reduce_identity(const KExpr* e);
  llvm::Value* reduce_combine(const KExpr* e, llvm::Value* acc, llvm::Value* v);
  std::vector<llvm::Value*> reduce_operand_index(const KExpr* e, const std::vector<llvm::Value*>& out_idx,
                                                 llvm::Value* red_linear);
  llvm::Value* reduce_extent(const KExpr* e);
  // The operand index of a reduction with only the kept dims filled (reduced dims null).
  std::vector<llvm::Value*> reduce_kept_index(const KExpr* e, const std::vector<llvm::Value*>& out_idx);
  llvm::Value* reduce_finish(const KExpr* e, llvm::Value* acc);
  // A random sampler's operand (its state, an int range) as a whole: element i of a vector
  // operand, the value of a scalar one.
  llvm::Value* operand_at(const KExpr* e, int operand, int64_t i, const KExpr* root);
  llvm::Type* mem_type(DType d);  // in-memory type (bool is i8)
  llvm::Type* reg_type(DType d);  // in-register type (bool is i1)

  // Building blocks of the per-op formulas (codegen/formulas_*.cc).
  llvm::IRBuilder<>& builder() { return b_; }
  llvm::Value* fconst(DType d, double v);
  llvm::Value* fmax_nan(llvm::Value* x, llvm::Value* y, bool is_max);
  llvm::Value* exp_inline(llvm::Value* x, DType dt);
  llvm::Value* exp_f32(llvm::Value* x);  // exp_inline's float32 form
  llvm::Value* tanh_rational(llvm::Value* x);
  llvm::Value* call_intrinsic(llvm::Intrinsic::ID id, llvm::Value* x, llvm::Value* y = nullptr);
  // The record's math function of e->op on x (and y): LLVM's intrinsic of that name when
  // there is one, else a call to libm's (name + "f" for float32), which each backend maps to
  // its vector library or libdevice.
  llvm::Value* math_call(const KExpr* e, llvm::Value* x, llvm::Value* y = nullptr);
  // Where cond holds, the element fails the check: its status code (kernel_ir.h) goes to the
  // status word, and the formula goes on with a defined value. Needs set_status_slot.
  void fail_if(const KExpr* e, llvm::Value* cond, CheckKind kind);
  // As fail_if with a per-element kind (an i64 CheckKind) ORed into the status word, so the
  // kinds one check finds across elements add up (CheckNumerics: kNaN | kInf).
  void fail_if_merge(const KExpr* e, llvm::Value* cond, llvm::Value* kind);
  // The buffer-pointer slot of the status word (the CPU passes one after the last buffer);
  // without one, a formula with a check cannot be emitted (the GPU has none yet).
  void set_status_slot(int slot) { status_slot_ = slot; }
  // Row groups (fuse_rows.cc). pin: a per-row value computed earlier in the current row,
  // which later reads (all in that row) take from its register. set_row_local: a buffer kept
  // as one row of scratch at `base`: element i of the value is at base[i - row_base].
  void pin(const KExpr* e, llvm::Value* v) { pinned_[e] = v; }
  void clear_pinned() { pinned_.clear(); }
  void set_row_local(int buffer, llvm::Value* base) { row_local_[buffer] = base; }
  void set_row_base(llvm::Value* v) { row_base_ = v; }
  // Loop versioning on a condition the same for every element (cpu_loops.cc): while fixed,
  // a select on `cond` is its operand 1 (true) or 2 (false), and the other is not generated.
  void fix_select(const KExpr* cond, bool value) { fixed_[cond] = value; }
  void unfix_selects() { fixed_.clear(); }

 private:
  llvm::IRBuilder<>& b_;
  llvm::LLVMContext& ctx_;
  llvm::Value* bufs_;
  llvm::Value* params_;
  llvm::BasicBlock* entry_;
  std::map<int, llvm::Value*> dims_;
  std::map<int, llvm::Value*> buf_ptrs_;
  std::map<const KExpr*, llvm::Value*> computed_;  // roots of the current element (emit_roots)
  // Values already generated for (expression, root, index) in the current block: a value
  // shared by several consumers (x = x * x + x) is generated once per element, so the IR
  // grows linearly with the cluster, not exponentially with its depth. Only same-block
  // reuse, so every reused value dominates its new use; cleared by every store.
  struct MemoKey {
    const KExpr* e;
    const KExpr* root;
    llvm::BasicBlock* block;
    std::vector<llvm::Value*> idx;
    bool operator<(const MemoKey& o) const {
      return std::tie(e, root, block, idx) < std::tie(o.e, o.root, o.block, o.idx);
    }
  };
  std::map<MemoKey, llvm::Value*> memo_;
  int status_slot_ = -1;
  std::map<const KExpr*, llvm::Value*> pinned_;
  std::map<const KExpr*, llvm::Value*> hoisted_index_;  // a scalar-index gather's checked index
  std::map<int, llvm::Value*> row_local_;
  llvm::Value* row_base_ = nullptr;
  std::map<const KExpr*, bool> fixed_;
  // Whether operand k of x is generated (a fixed select skips its condition and other side).
  bool generates_operand(const KExpr* x, size_t k) const;
  // The address of element `linear` of e's buffer (or of its row-local scratch).
  llvm::Value* element_ptr(const KExpr* e, llvm::Value* linear);

  llvm::Value* buffer_ptr(int buffer);
  llvm::BasicBlock* begin_check(const KExpr* e, llvm::Value* cond);
  llvm::Value* emit_new(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  // Whether emit(e, idx, root) would generate nothing new: a load, a constant, a memo hit.
  bool ready(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  // Generates the elementwise operand chains of e, deepest first, from an explicit stack.
  void emit_operands_first(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  llvm::Value* unary(const KExpr* e, llvm::Value* x);
  llvm::Value* binary(const KExpr* e, DType in, llvm::Value* x, llvm::Value* y);
  llvm::Value* cast(DType from, DType to, llvm::Value* x);
  llvm::Value* widen_half(DType from, llvm::Value* h);  // a half type's value to float32
  llvm::Value* narrow_half(DType to, llvm::Value* f);   // float32 to a half type's value
  llvm::Value* reduce(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  llvm::Value* concat(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  llvm::Value* gather(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  bool invariant_scalar(const KExpr* x, const KExpr* root) const;
  llvm::Value* hoisted_gather_index(const KExpr* e, const KExpr* root);
  llvm::Value* gather_nd(const KExpr* e, const std::vector<llvm::Value*>& idx,
                         const KExpr* root);  // elemental_gather_nd.cc
  llvm::Value* index_map(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  llvm::Value* arg_reduce(const KExpr* e, const std::vector<llvm::Value*>& idx, const KExpr* root);
  std::vector<llvm::Value*> broadcast_index(const KExpr* out, const KExpr* operand,
                                            const std::vector<llvm::Value*>& idx);
};

}  // namespace jf
