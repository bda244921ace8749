// LLVM host queries (the JIT of a later stage targets exactly this CPU).
#include "codegen/llvm_info.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>

namespace jf {
std::string llvm_version() { return LLVM_VERSION_STRING; }
std::string llvm_host_cpu() { return llvm::sys::getHostCPUName().str(); }
std::string llvm_host_triple() { return llvm::sys::getProcessTriple(); }
}  // namespace jf
