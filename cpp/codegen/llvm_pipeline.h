// LLVM plumbing shared by the CPU and GPU backends: the optimization pipeline and emitting
// a module.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <string>

namespace llvm {
class TargetLibraryInfoImpl;
}

namespace jf {

enum class PipelineKind {
  // LLVM's default O2 module pipeline with the loop vectorizer on. O2 rather than O3: the
  // same vectorized loops here, and compile time is part of the first call.
  kFull,
  // A short hand-picked function pipeline for kernels of few iterations: the loop vectorizer
  // at the widest vectors, tails folded into masked vectors, without interleaving, and none
  // of O2's unrolling or inter-procedural passes. It compiles an LSTM cell's kernel in about half
  // the time. Floating-point results are the same: neither pipeline reassociates, and the
  // code generator forms the same fused multiply-adds.
  kSmall,
};

// Optimizes `m` for `tm`. `tlii`, when given, supplies the vector math library mappings.
void run_pipeline(llvm::Module& m, llvm::TargetMachine* tm, const llvm::TargetLibraryInfoImpl* tlii = nullptr,
                  PipelineKind kind = PipelineKind::kFull);
// Object code (CPU) or assembly text (PTX) for the module.
std::string emit_module(llvm::Module& m, llvm::TargetMachine* tm, bool assembly);

}  // namespace jf
