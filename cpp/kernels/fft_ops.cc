// Eager FFTs over the innermost dim on Eigen's TensorFFT (as TF's CPU kernels): rows of the
// input are split across the thread pool, each block transformed as one [rows, n] tensor.
#include <algorithm>
#include <cmath>
#include <complex>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "ir/op_registry.h"
#include "support/thread_pool.h"

namespace jf {

namespace {

template <class T>
using Rows = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;

// out[r, :] = DFT (or inverse DFT, scaled by 1 / n) of in[r, :] for rows [0, rows).
template <int kDir, class R>
void transform_rows(const std::complex<R>* in, std::complex<R>* out, int64_t rows, int64_t n) {
  if (rows == 0 || n == 0) return;
  const Eigen::array<int, 1> axis{1};
  parallel_for(rows, 5.0 * static_cast<double>(n) * (1 + std::log2(static_cast<double>(n))),
               [&](int64_t b, int64_t e) {
                 Rows<std::complex<R>> x(const_cast<std::complex<R>*>(in) + b * n, e - b, n);  // only read
                 Rows<std::complex<R>> y(out + b * n, e - b, n);
                 y = x.template fft<Eigen::BothParts, kDir>(axis);
               });
}

template <int kDir>
void complex_fft(OpCall& c) {
  const Tensor& x = c.in[0];
  Tensor& y = c.alloc(0);
  const int64_t n = x.shape()[x.rank() - 1], rows = n ? x.num_elements() / n : 0;
  if (x.dtype() == DType::kComplex128)
    transform_rows<kDir>(x.data<std::complex<double>>(), y.data<std::complex<double>>(), rows, n);
  else
    transform_rows<kDir>(x.data<std::complex<float>>(), y.data<std::complex<float>>(), rows, n);
}

// The first L / 2 + 1 bins of the DFT of each row cropped or zero-padded to L.
template <class R>
void rfft(const Tensor& x, Tensor& y, int64_t len) {
  const int64_t n = x.shape()[x.rank() - 1], bins = y.shape()[y.rank() - 1];
  const int64_t rows = bins ? y.num_elements() / bins : 0;
  if (len == 0) {  // no samples: the one bin is 0
    std::fill_n(y.data<std::complex<R>>(), y.num_elements(), std::complex<R>(0));
    return;
  }
  std::vector<std::complex<R>> buf(rows * len), spec(rows * len);
  const R* src = x.data<R>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < len; ++i) buf[r * len + i] = i < n ? std::complex<R>(src[r * n + i], 0) : 0;
  transform_rows<Eigen::FFT_FORWARD>(buf.data(), spec.data(), rows, len);
  std::complex<R>* dst = y.data<std::complex<R>>();
  for (int64_t r = 0; r < rows; ++r) std::copy_n(spec.data() + r * len, bins, dst + r * bins);
}

// The real inverse DFT of length L of each row's Hermitian spectrum: bins [0, L / 2] from the
// input (zeros past its end), the rest their conjugates.
template <class R>
void irfft(const Tensor& x, Tensor& y, int64_t len) {
  const int64_t m = x.shape()[x.rank() - 1];
  const int64_t rows = len ? y.num_elements() / len : 0;
  std::vector<std::complex<R>> spec(rows * len), sig(rows * len);
  const std::complex<R>* src = x.data<std::complex<R>>();
  for (int64_t r = 0; r < rows; ++r) {
    std::complex<R>* s = spec.data() + r * len;
    for (int64_t k = 0; k <= len / 2 && k < len; ++k) s[k] = k < m ? src[r * m + k] : 0;
    for (int64_t k = len / 2 + 1; k < len; ++k) s[k] = std::conj(s[len - k]);
  }
  transform_rows<Eigen::FFT_REVERSE>(spec.data(), sig.data(), rows, len);
  R* dst = y.data<R>();
  for (int64_t i = 0; i < rows * len; ++i) dst[i] = sig[i].real();
}

}  // namespace

void k_FFT(OpCall& c) { complex_fft<Eigen::FFT_FORWARD>(c); }
void k_IFFT(OpCall& c) { complex_fft<Eigen::FFT_REVERSE>(c); }
void k_RFFT(OpCall& c) {
  Tensor& y = c.alloc(0);
  const int64_t len = c.in[1].get_int(0);
  if (c.in[0].dtype() == DType::kFloat64)
    rfft<double>(c.in[0], y, len);
  else
    rfft<float>(c.in[0], y, len);
}
void k_IRFFT(OpCall& c) {
  Tensor& y = c.alloc(0);
  const int64_t len = c.in[1].get_int(0);
  if (c.in[0].dtype() == DType::kComplex128)
    irfft<double>(c.in[0], y, len);
  else
    irfft<float>(c.in[0], y, len);
}

}  // namespace jf
