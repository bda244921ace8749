// CPU loop nests around the elemental emitter: one function per loop step that computes a
// range of the step's output elements, so the runtime can split a step across threads.
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>

#include "codegen/kernel_ir.h"

namespace jf {

// The frame of a step's range function, `void name(ptr bufs, ptr params, i64 begin, i64 end)`
// (buffers and params noalias, nounwind), with the builder at its entry block.
struct RangeFunction {
  llvm::BasicBlock* entry;
  llvm::Value *bufs, *params, *begin, *end;
};
RangeFunction begin_range_function(llvm::Module& m, llvm::IRBuilder<>& b, const std::string& name);

// Emits `void name(ptr bufs, ptr params, i64 begin, i64 end)` computing output elements
// [begin, end) of the step (its root and any sibling roots). fold_tails: the vectorizer runs
// each row's last partial vector masked (for the small pipeline's short rows).
void emit_loop_step(llvm::Module& m, const Step& s, const std::string& name, int status_slot,
                    bool fold_tails);

// The same signature for a kRowGroup step: [begin, end) are rows, each run through every part
// (cpu_row_loops.cc).
void emit_row_group_step(llvm::Module& m, const Step& s, const std::string& name, int status_slot);

// The same signature for small products (is_small_dot_step, cpu_dot.cc): [begin, end) are
// rows of C = op(A) B, and params are this product's own, indexed by DotParam (kernel_ir.h:
// the buffers' indices among them), so one function serves every step of its element type
// (float32 or float64) and form. Vectors of `vector_bytes`, the widest the target has.
void emit_small_dot(llvm::Module& m, DType dtype, DotForm form, const std::string& name,
                    unsigned vector_bytes);
// A cluster's loop driver (has_loop_driver, cpu_loop_driver.cc), `void name(ptr bufs, ptr
// params, i64 limit, i64 out)`: runs iterations of the step, calling the module's kernels
// `<prefix>_step<k>`, until the condition is false, a check fails or `limit` iterations ran
// (negative: no bound); stores the iterations run and the guarded steps skipped at `out`
// (the address of two int64s). The loop runner calls it through a StepFn.
void emit_loop_driver(llvm::Module& m, const ClusterProgram& p, const std::string& prefix,
                      const std::string& name);
// `void name(...)` of the same signature, calling `target` with its arguments.
void emit_forward(llvm::Module& m, const std::string& name, const std::string& target);

}  // namespace jf
