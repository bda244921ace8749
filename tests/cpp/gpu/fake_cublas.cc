// A stand-in for cuBLAS in tests without a GPU: the fake driver keeps "device" memory in host
// memory, so this computes the column-major GEMMs on the host, exactly as cuBLAS defines them,
// and so checks jitflow's row-major mapping (operand order, transposes, leading dims, strides).
#include <cstdint>

namespace {
int g_calls = 0;
void* g_stream = nullptr;
// Off: GEMMs check their arguments but compute nothing, so a test can count the calls of a
// workload at its real size without the host doing its arithmetic.
bool g_compute = true;
int g_math_mode = 0, g_sgemm_math_mode = -1;  // the handle's mode, and at the last SGEMM

template <class T>
int gemm(int ta, int tb, int m, int n, int k, const T* alpha, const T* a, int lda, long long sa, const T* b,
         int ldb, long long sb, const T* beta, T* c, int ldc, long long sc, int batches) {
  ++g_calls;
  if (m < 0 || n < 0 || k < 0 || batches < 0) return 7;  // CUBLAS_STATUS_INVALID_VALUE
  if (lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m) return 7;
  if (!g_compute) return 0;
  for (int q = 0; q < batches; ++q)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int l = 0; l < k; ++l) {
          double x = ta ? a[q * sa + l + int64_t(i) * lda] : a[q * sa + i + int64_t(l) * lda];
          double y = tb ? b[q * sb + j + int64_t(l) * ldb] : b[q * sb + l + int64_t(j) * ldb];
          acc += x * y;
        }
        T& out = c[q * sc + i + int64_t(j) * ldc];
        out = static_cast<T>(*alpha * acc + (*beta == 0 ? 0 : *beta * out));
      }
  return 0;
}
}  // namespace

extern "C" {
int cublasCreate_v2(void** h) { return *h = &g_calls, 0; }
int cublasSetStream_v2(void*, void* s) { return g_stream = s, 0; }
int cublasSetMathMode(void*, int mode) { return g_math_mode = mode, 0; }
const char* cublasGetStatusName(int s) { return s == 7 ? "CUBLAS_STATUS_INVALID_VALUE" : "CUBLAS_STATUS_?"; }
int cublasSgemmStridedBatched(void*, int ta, int tb, int m, int n, int k, const float* alpha, const float* a,
                              int lda, long long sa, const float* b, int ldb, long long sb, const float* beta,
                              float* c, int ldc, long long sc, int batches) {
  g_sgemm_math_mode = g_math_mode;
  return gemm(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batches);
}
int cublasDgemmStridedBatched(void*, int ta, int tb, int m, int n, int k, const double* alpha,
                              const double* a, int lda, long long sa, const double* b, int ldb, long long sb,
                              const double* beta, double* c, int ldc, long long sc, int batches) {
  return gemm(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batches);
}
int fake_cublas_calls() { return g_calls; }
int fake_cublas_stream_set() { return g_stream != nullptr; }
void fake_cublas_set_compute(int on) { g_compute = on != 0; }
int fake_cublas_sgemm_math_mode() { return g_sgemm_math_mode; }
}
