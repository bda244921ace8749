// float16 <-> float32 for compiled code on CPUs without F16C, with the eager kernels' rounding
// (dtype.h). The half argument and result travel in an SSE register, as LLVM's calls pass them.
#include "codegen/cpu/half_routines.h"

#include <cstring>

#include "core/dtype.h"

namespace jf {
namespace {

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 12)
#define JF_HAVE_FLOAT16 1
float extend_half(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return half_bits_to_float(b);
}
_Float16 truncate_to_half(float f) {
  uint16_t b = float_to_half_bits(f);
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return h;
}
#endif

}  // namespace

void define_half_routines(llvm::orc::LLJIT& jit) {
#ifdef JF_HAVE_FLOAT16
  const auto flags = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
  llvm::orc::SymbolMap syms;
  syms[jit.mangleAndIntern("__extendhfsf2")] =
      llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(&extend_half), flags);
  syms[jit.mangleAndIntern("__truncsfhf2")] =
      llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(&truncate_to_half), flags);
  llvm::cantFail(jit.getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(syms))));
#else
  (void)jit;  // elsewhere the process's own compiler runtime provides them
#endif
}

}  // namespace jf
