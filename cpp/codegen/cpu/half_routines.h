// The float16 conversion routines compiled code calls on CPUs without F16C.
#pragma once
#include <llvm/ExecutionEngine/Orc/LLJIT.h>

namespace jf {

// Defines compiler-rt's __extendhfsf2 and __truncsfhf2 in the JIT's main library: LLVM lowers
// a float16 fpext/fptrunc to them where the CPU lacks F16C, and the process need not have them.
void define_half_routines(llvm::orc::LLJIT& jit);

}  // namespace jf
