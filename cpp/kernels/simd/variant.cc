// The hot eager kernels compiled for one wider instruction set (JF_SIMD_ISA: avx2 or
// avx512; CMakeLists.txt builds this file once per set, with its -m flags, in portable builds
// only). The kernels are elementwise.cc's own functors and segment loops
// (kernels/elementwise_functors.h), so a variant computes what the baseline does, in wider
// vectors.
//
// Eigen's inline templates are instantiated here with the same names as in the baseline
// objects; the linker would keep one copy of each, possibly this file's, and the baseline would
// then run AVX code on a CPU without it. Renaming Eigen's namespace for this file makes every
// instantiation its own, and everything else here is in an unnamed namespace or jf::simd::<isa>.
#define JF_SIMD_CAT2(a, b) a##b
#define JF_SIMD_CAT(a, b) JF_SIMD_CAT2(a, b)
#define Eigen JF_SIMD_CAT(jf_eigen_, JF_SIMD_ISA)

#include "kernels/elementwise_functors.h"
#include "kernels/simd/table.h"

namespace jf::simd::JF_SIMD_ISA {
namespace {

template <class F, class T>
void unary_fn(const T* x, T* y, int64_t n) {
  unary_segment<F, T, T>(x, y, n);
}
template <class F, class T>
void binary_fn(const T* a, const T* b, T* out, int64_t n, bool a_is_run, bool b_is_run) {
  binary_segment<F, T, T>(a, b, out, n, a_is_run, b_is_run);
}

template <class F>
void set_unary(Table& t) {
  t.unary_f32[kUnarySlot<F>] = &unary_fn<F, float>;
  t.unary_f64[kUnarySlot<F>] = &unary_fn<F, double>;
}
template <class F>
void set_binary(Table& t) {
  t.binary_f32[kBinarySlot<F>] = &binary_fn<F, float>;
  t.binary_f64[kBinarySlot<F>] = &binary_fn<F, double>;
}

Table make_table() {
  Table t{};
  t.isa = JF_SIMD_ISA_NAME;
  // Correctly rounded in every lane whatever the vector width: the same bits as the baseline.
  set_unary<NegF>(t);
  set_unary<AbsF>(t);
  set_unary<SquareF>(t);
  set_unary<ReluF>(t);
  set_unary<SqrtF>(t);
  set_unary<RsqrtF>(t);
  set_unary<ReciprocalF>(t);
#if !JF_SIMD_EXACT_ONLY
  // Eigen's polynomial approximations: the baseline's bits only where each multiply-add
  // rounds twice as in SSE (no FMA), and AVX-512 float exp is a separate algorithm; an
  // instruction set built with FMA leaves them to the narrower variant.
  set_unary<ExpF>(t);
  set_unary<LogF>(t);
  set_unary<Log1pF>(t);
  set_unary<TanhF>(t);
  set_unary<SigmoidF>(t);
  set_unary<SinF>(t);
  set_unary<CosF>(t);
  set_unary<ErfF>(t);
  set_unary<Expm1F>(t);
#endif
  set_binary<AddF>(t);
  set_binary<SubF>(t);
  set_binary<MulF>(t);
  set_binary<DivF>(t);
  set_binary<MaxF>(t);
  set_binary<MinF>(t);
  set_binary<SquaredDifferenceF>(t);
  return t;
}

}  // namespace

const Table& table() {
  static const Table t = make_table();
  return t;
}

}  // namespace jf::simd::JF_SIMD_ISA
