// Run-time dispatch of the hot eager kernels: a portable build compiles them for its baseline
// (x86-64-v2) and once more per wider instruction set (simd/variant.cc); each variant fills a
// table of segment functions, and the kernels take the host's (JITFLOW_EAGER_ISA overrides).
// No Eigen and no inline code here: this header is shared by objects built for different
// instruction sets, and only plain data may cross between them.
#pragma once
#include <cstdint>

namespace jf::simd {

// The ops with variants, float32 and float64 only (the other dtypes stay on the baseline).
#define JF_SIMD_UNARY_OPS(X) \
  X(Neg)                     \
  X(Abs)                     \
  X(Square)                  \
  X(Relu)                    \
  X(Exp)                     \
  X(Log)                     \
  X(Log1p)                   \
  X(Tanh)                    \
  X(Sigmoid)                 \
  X(Sqrt)                    \
  X(Rsqrt)                   \
  X(Sin)                     \
  X(Cos)                     \
  X(Erf)                     \
  X(Expm1)                   \
  X(Reciprocal)
#define JF_SIMD_BINARY_OPS(X) \
  X(Add)                      \
  X(Sub)                      \
  X(Mul)                      \
  X(Div)                      \
  X(Max)                      \
  X(Min)                      \
  X(SquaredDifference)

#define JF_SIMD_ENUM_ITEM(name) name,
enum class Unary : int { JF_SIMD_UNARY_OPS(JF_SIMD_ENUM_ITEM) kCount };
enum class Binary : int { JF_SIMD_BINARY_OPS(JF_SIMD_ENUM_ITEM) kCount };
#undef JF_SIMD_ENUM_ITEM
constexpr int kUnaryCount = static_cast<int>(Unary::kCount);
constexpr int kBinaryCount = static_cast<int>(Binary::kCount);

// y[0, n) = f(x[0, n)).
template <class T>
using UnaryFn = void (*)(const T* x, T* y, int64_t n);
// out[0, n) = f(a, b), where an operand is a run of n values, or (its flag false) one value
// broadcast over the segment.
template <class T>
using BinaryFn = void (*)(const T* a, const T* b, T* out, int64_t n, bool a_is_run, bool b_is_run);

// A null entry: that op keeps the baseline code on this instruction set (its variant would
// not give the baseline's bits).
struct Table {
  const char* isa;
  UnaryFn<float> unary_f32[kUnaryCount];
  UnaryFn<double> unary_f64[kUnaryCount];
  BinaryFn<float> binary_f32[kBinaryCount];
  BinaryFn<double> binary_f64[kBinaryCount];
};

// The table the eager kernels use, chosen once (CPUID, or JITFLOW_EAGER_ISA=auto|baseline|
// avx2|avx512); null when they run the baseline code. An override the CPU or the build cannot
// honour raises InvalidArgumentError.
const Table* active();
// What the eager kernels were compiled for and run: "avx512", "avx2", the baseline's name
// ("x86-64-v2"), or "native" for a build for its own machine (JITFLOW_NATIVE=ON).
const char* eager_isa();
// The variants this build carries, best first ("avx512,avx2"; empty for a native build).
const char* eager_isa_variants();

namespace avx2 {
const Table& table();
}
namespace avx512 {
const Table& table();
}

}  // namespace jf::simd
