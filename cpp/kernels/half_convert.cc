// float16 / bfloat16 <-> float32 in blocks (half_convert.h). The AVX2 paths give the scalar
// conversions' bits: F16C rounds to nearest even as float_to_half_bits does, and a NaN is then
// rewritten to the scalar code's quiet NaN (sign | 0x7e00); bfloat16 rounds with the same
// integer arithmetic as float_to_bfloat16_bits.
#include "kernels/half_convert.h"

#include "core/dtype.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define JF_HALF_AVX2 1
#endif

namespace jf {
namespace {

void widen_scalar(const uint16_t* s, float* d, int64_t n, bool bfloat) {
  for (int64_t i = 0; i < n; ++i)
    d[i] = bfloat ? bits_float(static_cast<uint32_t>(s[i]) << 16) : half_bits_to_float(s[i]);
}
void narrow_scalar(const float* s, uint16_t* d, int64_t n, bool bfloat) {
  for (int64_t i = 0; i < n; ++i) d[i] = bfloat ? float_to_bfloat16_bits(s[i]) : float_to_half_bits(s[i]);
}

#ifdef JF_HALF_AVX2
bool cpu_has_avx2_f16c() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  return ok;
}

__attribute__((target("avx2,f16c"))) int64_t widen_avx2(const uint16_t* s, float* d, int64_t n, bool bfloat) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m256 f =
        bfloat ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
    _mm256_storeu_ps(d + i, f);
  }
  return i;
}

__attribute__((target("avx2,f16c"))) int64_t narrow_avx2(const float* s, uint16_t* d, int64_t n,
                                                         bool bfloat) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 f = _mm256_loadu_ps(s + i);
    __m128i h;
    if (bfloat) {
      __m256i x = _mm256_castps_si256(f);
      __m256i hi = _mm256_srli_epi32(x, 16);
      __m256i odd = _mm256_and_si256(hi, _mm256_set1_epi32(1));
      __m256i r =
          _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
      __m256i nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
      __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
      __m256i v = _mm256_blendv_epi8(r, nan, is_nan);
      h = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    } else {
      h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m128i mag = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
      __m128i is_nan = _mm_cmpgt_epi16(mag, _mm_set1_epi16(0x7c00));
      __m128i quiet = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16(static_cast<int16_t>(0x8000))),
                                   _mm_set1_epi16(0x7e00));
      h = _mm_blendv_epi8(h, quiet, is_nan);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
  }
  return i;
}
#endif

}  // namespace

void halves_to_floats(const uint16_t* src, float* dst, int64_t n, bool bfloat) {
  int64_t done = 0;
#ifdef JF_HALF_AVX2
  if (cpu_has_avx2_f16c()) done = widen_avx2(src, dst, n, bfloat);
#endif
  widen_scalar(src + done, dst + done, n - done, bfloat);
}

void floats_to_halves(const float* src, uint16_t* dst, int64_t n, bool bfloat) {
  int64_t done = 0;
#ifdef JF_HALF_AVX2
  if (cpu_has_avx2_f16c()) done = narrow_avx2(src, dst, n, bfloat);
#endif
  narrow_scalar(src + done, dst + done, n - done, bfloat);
}

}  // namespace jf
