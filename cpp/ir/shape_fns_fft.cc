// Shape inference for the FFTs over the innermost dim (TF's FFT, IFFT, RFFT and IRFFT): complex
// in and out, or a real signal and its half spectrum of fft_length / 2 + 1 bins.
#include "ir/op_registry.h"

namespace jf {

namespace {
void need_rank_1(const OpCall& c) {
  if (c.in[0].rank() < 1) c.fail("Shape must be at least rank 1 but is rank 0");
}
// The transform's length: the fft_length input (one int32 value), -1 while unknown.
int64_t fft_length(const OpCall& c) {
  const Tensor& l = c.in[1];
  if (l.dtype() != DType::kInt32) c.fail_type("fft_length must be int32, got ", dtype_name(l.dtype()));
  if (l.rank() != 1 || (l.shape()[0] >= 0 && l.shape()[0] != 1))
    c.fail("fft_length must be a vector of 1 element, got shape ", l.shape().str());
  if (!c.has_value(1)) return -1;
  int64_t n = l.get_int(0);
  if (n < 0) c.fail("fft_length must be non-negative, got ", n);
  return n;
}
}  // namespace

// FFT, IFFT: a complex input's shape and dtype.
void infer_fft(OpCall& c) {
  c.check_claimed(0);
  need_rank_1(c);
  c.add_output(c.in[0].dtype(), c.in[0].shape());
}

// RFFT (input, fft_length): float32 -> complex64, float64 -> complex128; last dim L / 2 + 1.
void infer_rfft(OpCall& c) {
  c.check_claimed(0);
  need_rank_1(c);
  const int64_t n = fft_length(c);
  Shape s = c.in[0].shape();
  s[s.rank() - 1] = n < 0 ? -1 : n / 2 + 1;
  c.add_output(c.in[0].dtype() == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64, s);
}

// IRFFT (input, fft_length): complex64 -> float32, complex128 -> float64; last dim L.
void infer_irfft(OpCall& c) {
  c.check_claimed(0);
  need_rank_1(c);
  const int64_t n = fft_length(c);
  Shape s = c.in[0].shape();
  s[s.rank() - 1] = n;
  c.add_output(c.in[0].dtype() == DType::kComplex128 ? DType::kFloat64 : DType::kFloat32, s);
}

}  // namespace jf
