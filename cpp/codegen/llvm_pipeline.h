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

// Runs LLVM's default O2 module pipeline for `tm` with the loop vectorizer on. O2 rather
// than O3: the same vectorized loops here, and compile time is part of the first call.
// `tlii`, when given, supplies the vector math library mappings.
void run_pipeline(llvm::Module& m, llvm::TargetMachine* tm,
                  const llvm::TargetLibraryInfoImpl* tlii = nullptr);
// Object code (CPU) or assembly text (PTX) for the module.
std::string emit_module(llvm::Module& m, llvm::TargetMachine* tm, bool assembly);

}  // namespace jf
