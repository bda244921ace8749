// Blocks of float16 / bfloat16 values widened to float32 and float32 rounded back, for the
// eager kernels that compute half types in float32: vectorized (F16C for float16, shifts for
// bfloat16) where the CPU has AVX2, with the rounding of dtype.h's scalar conversions.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <type_traits>

namespace jf {

void halves_to_floats(const uint16_t* src, float* dst, int64_t n, bool bfloat);
void floats_to_halves(const float* src, uint16_t* dst, int64_t n, bool bfloat);

// The same on the kernels' element types (Eigen::half, Eigen::bfloat16: a 16-bit pattern).
template <class T>
void widen_block(const T* src, float* dst, int64_t n) {
  static_assert(sizeof(T) == 2);
  halves_to_floats(reinterpret_cast<const uint16_t*>(src), dst, n, std::is_same_v<T, Eigen::bfloat16>);
}
template <class T>
void narrow_block(const float* src, T* dst, int64_t n) {
  static_assert(sizeof(T) == 2);
  floats_to_halves(src, reinterpret_cast<uint16_t*>(dst), n, std::is_same_v<T, Eigen::bfloat16>);
}

}  // namespace jf
