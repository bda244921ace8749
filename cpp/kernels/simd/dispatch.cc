// Picks the eager kernels' instruction-set variant once per process: the widest the CPU runs,
// or the one JITFLOW_EAGER_ISA names (tests compare the variants on one machine with it).
#include <cstdlib>
#include <string>

#include "kernels/simd/table.h"
#include "support/errors.h"

#ifndef JF_BASELINE_ARCH
#define JF_BASELINE_ARCH "native"
#endif

namespace jf::simd {
namespace {

#if JF_SIMD_VARIANTS
bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
// libgcc's checks include the OS's XSAVE support for the wider registers.
bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && cpu_has_avx2();
}

// AVX-512's table, with AVX2's entries where it has none (an op whose AVX-512 code would give
// other bits than the baseline's keeps the next narrower variant that gives the same). Built
// on first use only: even filling a variant's table runs that variant's instructions.
const Table* avx512_table() {
  static const Table merged = [] {
    Table t = avx512::table();
    const Table& narrow = avx2::table();
    for (int i = 0; i < kUnaryCount; ++i) {
      if (!t.unary_f32[i]) t.unary_f32[i] = narrow.unary_f32[i];
      if (!t.unary_f64[i]) t.unary_f64[i] = narrow.unary_f64[i];
    }
    for (int i = 0; i < kBinaryCount; ++i) {
      if (!t.binary_f32[i]) t.binary_f32[i] = narrow.binary_f32[i];
      if (!t.binary_f64[i]) t.binary_f64[i] = narrow.binary_f64[i];
    }
    return t;
  }();
  return &merged;
}

const Table* choose() {
  const char* env = std::getenv("JITFLOW_EAGER_ISA");
  std::string want = env ? env : "";
  if (want == "baseline") return nullptr;
  if (want.empty() || want == "auto") {
    if (cpu_has_avx512()) return avx512_table();
    if (cpu_has_avx2()) return &avx2::table();
    return nullptr;
  }
  if (want == "avx2" || want == "avx512") {
    bool ok = want == "avx2" ? cpu_has_avx2() : cpu_has_avx512();
    if (!ok) throw_invalid("JITFLOW_EAGER_ISA=", want, " needs instructions this CPU lacks");
    return want == "avx2" ? &avx2::table() : avx512_table();
  }
  throw_invalid("JITFLOW_EAGER_ISA=", want, " is not one of auto, baseline, avx2, avx512");
}
#else
// A native build's kernels are compiled for the build machine: it has no variants to pick.
const Table* choose() {
  const char* env = std::getenv("JITFLOW_EAGER_ISA");
  std::string want = env ? env : "";
  if (!want.empty() && want != "auto" && want != "native")
    throw_invalid("JITFLOW_EAGER_ISA=", want,
                  ": this build compiles its eager kernels for the build machine (JITFLOW_NATIVE=ON) and "
                  "has no variants to choose from");
  return nullptr;
}
#endif

}  // namespace

const Table* active() {
  static const Table* t = choose();
  return t;
}

const char* eager_isa() {
  const Table* t = active();
  return t ? t->isa : JF_BASELINE_ARCH;
}

const char* eager_isa_variants() {
#if JF_SIMD_VARIANTS
  return "avx512,avx2";
#else
  return "";
#endif
}

}  // namespace jf::simd
