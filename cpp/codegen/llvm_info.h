// What LLVM reports about the host: used by the CPU JIT and shown in jf.config.
#pragma once
#include <string>

namespace jf {
std::string llvm_version();
std::string llvm_host_cpu();
std::string llvm_host_triple();
}  // namespace jf
