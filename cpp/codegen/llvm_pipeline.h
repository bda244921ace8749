// LLVM plumbing shared by the CPU and GPU backends: the O3 pipeline and emitting a module.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <string>

namespace llvm {
class TargetLibraryInfoImpl;
}

namespace jf {

// Runs LLVM's default O3 module pipeline for `tm` (vectorizers on). `tlii`, when given,
// supplies the vector math library mappings.
void run_o3(llvm::Module& m, llvm::TargetMachine* tm, const llvm::TargetLibraryInfoImpl* tlii = nullptr);
// Object code (CPU) or assembly text (PTX) for the module.
std::string emit_module(llvm::Module& m, llvm::TargetMachine* tm, bool assembly);

}  // namespace jf
