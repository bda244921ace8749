// Eager matmul: oneDNN's sgemm for large float products, Eigen's GEMM for the rest; large
// products split across the thread pool; batch dims broadcast like numpy.
#include <dnnl.h>
#include <omp.h>

#include <algorithm>

#include "core/broadcast.h"
#include "ir/op_registry.h"
#include "kernels/dispatch.h"

namespace jf {

Tensor conj_of(const Tensor& x);  // kernels/complex_ops.cc

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// float products from this many multiply-adds on go to oneDNN: 1.35-1.45x Eigen's speed
// at 256x512x512, equal at 64x64x128, and slower below (114 vs 30 ns at 1x20x40).
constexpr int64_t kOneDnnMinVolume = 64 * 64 * 64;

template <class T>
using ConstView = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using View = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

// A row-major operand as stored, rows x cols with leading dimension ld.
template <class T>
ConstView<T> view(const T* p, int64_t rows, int64_t cols, int64_t ld) {
  return ConstView<T>(p, rows, cols, Eigen::OuterStride<>(ld));
}

// oneDNN's row-major sgemm on the calling thread: it would start an OpenMP team, and the
// pool already splits the product.
void sgemm_onednn(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                  int64_t n, int64_t k, bool ta, bool tb) {
  int saved = omp_get_max_threads();
  if (saved != 1) omp_set_num_threads(1);
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  if (saved != 1) omp_set_num_threads(saved);
  if (st != dnnl_success) throw_runtime("MatMul: oneDNN sgemm failed (status ", static_cast<int>(st), ")");
}

// C = op(A) op(B) on Eigen maps.
template <class MA, class MB, class MC>
void eigen_product(const MA& A, const MB& B, MC&& C, bool ta, bool tb) {
  if (!ta && !tb)
    C.noalias() = A * B;
  else if (ta && !tb)
    C.noalias() = A.transpose() * B;
  else if (!ta && tb)
    C.noalias() = A * B.transpose();
  else
    C.noalias() = A.transpose() * B.transpose();
}

// c[m,n] (leading dim ldc) = op(a) op(b) on one thread; a and b as stored, with their
// leading dims. Large float products on oneDNN; the rest on Eigen's GEMM, also for tiny
// ones (with run-time sizes it beats a lazy product and row-axpy loops: 145 vs ~300 ns at
// 10x10x40), on unstrided maps when the operands are whole (strided maps cost ~20% there).
template <class T>
void gemm_block(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n,
                int64_t k, bool ta, bool tb) {
  if (k == 0) {
    View<T>(c, m, n, Eigen::OuterStride<>(ldc)).setZero();
    return;
  }
  if constexpr (std::is_same_v<T, float>)
    if (m * n * k >= kOneDnnMinVolume) return sgemm_onednn(a, lda, b, ldb, c, ldc, m, n, k, ta, tb);
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  if (lda == ac && ldb == bc && ldc == n)
    eigen_product(Eigen::Map<const RowMat<T>>(a, ar, ac), Eigen::Map<const RowMat<T>>(b, br, bc),
                  Eigen::Map<RowMat<T>>(c, m, n), ta, tb);
  else
    eigen_product(view(a, ar, ac, lda), view(b, br, bc, ldb), View<T>(c, m, n, Eigen::OuterStride<>(ldc)), ta,
                  tb);
}

// c[m,n] = op(a) op(b), row-major and contiguous. Large products are split into one block
// of rows (or columns) of C per thread, each a single-threaded GEMM: with Eigen's this ran
// at 340-360 GF/s on two cores where Eigen's thread-pool tensor contraction ran at 240-300.
template <class T>
void gemm(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool parallel) {
  if (m == 0 || n == 0) return;
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  if (!parallel || 2.0 * m * n * k < 4e6 || num_threads() == 1) {
    gemm_block(a, lda, b, ldb, c, n, m, n, k, ta, tb);
    return;
  }
  if (m >= n) {  // rows of C: rows of op(a)
    parallel_split(m, 16, [&](int64_t r0, int64_t r1) {
      gemm_block(a + (ta ? r0 : r0 * lda), lda, b, ldb, c + r0 * n, n, r1 - r0, n, k, ta, tb);
    });
  } else {  // columns of C: columns of op(b)
    parallel_split(n, 16, [&](int64_t c0, int64_t c1) {
      gemm_block(a, lda, b + (tb ? c0 * ldb : c0), ldb, c + c0, n, m, c1 - c0, k, ta, tb);
    });
  }
}

template <class T>
void matmul_typed(const Tensor& a, const Tensor& b, Tensor& y, bool ta, bool tb);

// float16 and bfloat16 products are computed in float32 and rounded once (as TF's CPU
// kernels and XLA compute them), on the float GEMM.
template <TypeSet kTypes>
void matmul(OpCall& c, bool ta, bool tb, bool adjoint = false) {
  Tensor& y = c.alloc(0);
  // An adjoint of complex operands is the transpose of their conjugate.
  const bool conj = adjoint && is_complex_type(y.dtype());
  const Tensor a = conj && ta ? conj_of(c.in[0]) : c.in[0];
  const Tensor b = conj && tb ? conj_of(c.in[1]) : c.in[1];
  JF_SWITCH_CLAIMED(kTypes, y.dtype(), T, {
    if constexpr (kEigenHalf<T>) {
      Tensor yf = Tensor::empty(DType::kFloat32, y.shape());
      matmul_typed<float>(widen_to_float<T>(a), widen_to_float<T>(b), yf, ta, tb);
      round_from_float<T>(yf, y);
    } else {
      matmul_typed<T>(a, b, y, ta, tb);
    }
  });
}

template <class T>
void matmul_typed(const Tensor& a, const Tensor& b, Tensor& y, bool ta, bool tb) {
  int ra = a.rank(), rb = b.rank(), ry = y.rank();
  int64_t m = y.shape()[ry - 2], n = y.shape()[ry - 1];
  int64_t k = ta ? a.shape()[ra - 2] : a.shape()[ra - 1];
  Shape bs, ba, bb;
  for (int i = 0; i < ry - 2; ++i) bs.push_back(y.shape()[i]);
  for (int i = 0; i < ra - 2; ++i) ba.push_back(a.shape()[i]);
  for (int i = 0; i < rb - 2; ++i) bb.push_back(b.shape()[i]);
  int64_t batches = bs.num_elements();
  {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    if (batches == 1) {
      gemm(pa, pb, py, m, n, k, ta, tb, true);
    } else if (batches > 0) {
      // Offsets of each batch's matrices, honouring broadcast batch dims.
      BroadcastPlan p = make_broadcast(bs, {ba, bb});
      std::vector<int64_t> oa(batches), ob(batches);
      for (int64_t i = 0; i < batches; ++i) {
        auto [xa, xb] = p.offsets2(i);
        oa[i] = xa * m * k;
        ob[i] = xb * k * n;
      }
      parallel_for(batches, 2.0 * m * n * k, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) gemm(pa + oa[i], pb + ob[i], py + i * m * n, m, n, k, ta, tb, false);
      });
    }
  }
}

}  // namespace

void k_MatMul(OpCall& c) {
  matmul<op_types(OpId::MatMul)>(c, c.attrs.get<bool>("transpose_a", false),
                                 c.attrs.get<bool>("transpose_b", false));
}
void k_BatchMatMulV2(OpCall& c) {
  matmul<op_types(OpId::BatchMatMulV2)>(c, c.attrs.get<bool>("adj_x", false),
                                        c.attrs.get<bool>("adj_y", false), /*adjoint=*/true);
}

}  // namespace jf
