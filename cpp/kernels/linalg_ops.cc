// Eager kernels of the decompositions and solvers, on Eigen's dense decompositions (one
// matrix at a time, the batch split over the thread pool): partial-pivoting LU for
// determinants, inverses and solves, LLT for Cholesky, Householder QR, the two-sided Jacobi
// SVD (small) or the divide-and-conquer BDCSVD (larger), and the self-adjoint eigensolver
// (which reads the lower triangle, as TF's does). TF's errors for singular and non-positive-
// definite inputs are raised after the batch has run, naming the op.
#include <Eigen/Dense>
#include <atomic>
#include <cmath>
#include <limits>

#include "kernels/dispatch.h"
#include "kernels/kernels.h"
#include "support/thread_pool.h"

namespace jf {
namespace {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapC = Eigen::Map<const Mat<T>>;
template <class T>
using Map = Eigen::Map<Mat<T>>;

int64_t rows_of(const Tensor& t) { return t.shape()[t.rank() - 2]; }
int64_t cols_of(const Tensor& t) { return t.shape()[t.rank() - 1]; }
int64_t batch_of(const Tensor& t) {
  int64_t b = 1;
  for (int d = 0; d < t.rank() - 2; ++d) b *= t.shape()[d];
  return b;
}

// fn(k) for each matrix k of the batch, over the thread pool; cost is per matrix.
template <class F>
void each_matrix(int64_t batch, double cost, F&& fn) {
  parallel_for(batch, cost, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) fn(k);
  });
}

double cube(int64_t n) { return static_cast<double>(n) * n * n + 1.0; }

// Runs body(in, out) on a half-type matrix op in float32 and rounds the result once (as the
// half-type matmul does); other dtypes run body on the tensors themselves.
template <class T, class Body>
void in_float_if_half(const Tensor& a, Tensor& out, Body body) {
  if constexpr (kEigenHalf<T>) {
    Tensor of = Tensor::empty(DType::kFloat32, out.shape());
    body(widen_to_float<T>(a), of);
    round_from_float<T>(of, out);
  } else {
    body(a, out);
  }
}

}  // namespace

void k_MatrixDeterminant(OpCall& c) {
  const Tensor& a = c.in[0];
  Tensor& out = c.alloc(0);
  const int64_t n = rows_of(a), batch = out.num_elements();
  JF_SWITCH_CLAIMED(op_types(OpId::MatrixDeterminant), a.dtype(), T, {
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    each_matrix(batch, cube(n), [&](int64_t k) {
      dst[k] = n == 0 ? T(1) : Eigen::PartialPivLU<Mat<T>>(MapC<T>(src + k * n * n, n, n)).determinant();
    });
  });
}

void k_LogMatrixDeterminant(OpCall& c) {
  const Tensor& a = c.in[0];
  Tensor& sign = c.alloc(0);
  Tensor& logdet = c.alloc(1);
  const int64_t n = rows_of(a), batch = sign.num_elements();
  JF_SWITCH_CLAIMED(op_types(OpId::LogMatrixDeterminant), a.dtype(), T, {
    const T* src = a.data<T>();
    T* sg = sign.data<T>();
    T* ld = logdet.data<T>();
    each_matrix(batch, cube(n), [&](int64_t k) {
      // log|det| summed from the LU factor's diagonal (no overflow of the product)
      using R = typename Eigen::NumTraits<T>::Real;
      T s = 1;
      R l = 0;
      if (n) {
        Eigen::PartialPivLU<Mat<T>> lu(MapC<T>(src + k * n * n, n, n));
        const Mat<T>& f = lu.matrixLU();
        for (int64_t i = 0; i < n; ++i) {
          const T d = f(i, i);
          if (d == T(0)) {
            s = 0;
            l = -std::numeric_limits<R>::infinity();
            break;
          }
          s *= d / T(std::abs(d));  // the sign of a real pivot, the phase of a complex one
          l += std::log(std::abs(d));
        }
        if (s != T(0)) s *= static_cast<T>(static_cast<R>(lu.permutationP().determinant()));
      }
      sg[k] = s;
      ld[k] = T(l);
    });
  });
}

void k_MatrixInverse(OpCall& c) {
  const Tensor& a = c.in[0];
  Tensor& out = c.alloc(0);
  const int64_t n = rows_of(a), batch = batch_of(a);
  const bool adjoint = c.attrs.get<bool>("adjoint", false);
  std::atomic<bool> singular{false};
  JF_SWITCH_CLAIMED(op_types(OpId::MatrixInverse), a.dtype(), H,
                    (in_float_if_half<H>(a, out, [&](const Tensor& x, Tensor& y) {
                      using T = std::conditional_t<kEigenHalf<H>, float, H>;
                      const T* src = x.data<T>();
                      T* dst = y.data<T>();
                      each_matrix(batch, cube(n), [&](int64_t k) {
                        if (!n) return;
                        Mat<T> m = MapC<T>(src + k * n * n, n, n);
                        if (adjoint) m.adjointInPlace();
                        Eigen::PartialPivLU<Mat<T>> lu(m);
                        // TF checks the LU factor's smallest pivot against zero
                        if (n && lu.matrixLU().diagonal().cwiseAbs().minCoeff() == 0) singular = true;
                        Map<T>(dst + k * n * n, n, n) = lu.inverse();
                      });
                    })));
  if (singular) c.fail("Input is not invertible.");
}

void k_MatrixSolve(OpCall& c) {
  const Tensor& a = c.in[0];
  const Tensor& b = c.in[1];
  Tensor& out = c.alloc(0);
  const int64_t n = rows_of(a), kk = cols_of(b), batch = batch_of(b);
  const bool adjoint = c.attrs.get<bool>("adjoint", false);
  std::atomic<bool> singular{false};
  JF_SWITCH_CLAIMED(op_types(OpId::MatrixSolve), a.dtype(), T, {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* dst = out.data<T>();
    each_matrix(batch, cube(n) + static_cast<double>(n) * n * kk, [&](int64_t k) {
      if (!n) return;
      Mat<T> m = MapC<T>(pa + k * n * n, n, n);
      if (adjoint) m.adjointInPlace();
      Eigen::PartialPivLU<Mat<T>> lu(m);
      if (n && lu.matrixLU().diagonal().cwiseAbs().minCoeff() == 0) singular = true;
      if (n && kk) Map<T>(dst + k * n * kk, n, kk) = lu.solve(MapC<T>(pb + k * n * kk, n, kk));
    });
  });
  if (singular) c.fail("Input matrix is not invertible.");
}

void k_MatrixTriangularSolve(OpCall& c) {
  const Tensor& a = c.in[0];
  const Tensor& b = c.in[1];
  Tensor& out = c.alloc(0);
  const int64_t n = rows_of(a), kk = cols_of(b), batch = batch_of(b);
  const bool lower = c.attrs.get<bool>("lower", true);
  const bool adjoint = c.attrs.get<bool>("adjoint", false);
  JF_SWITCH_CLAIMED(op_types(OpId::MatrixTriangularSolve), a.dtype(), T, {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* dst = out.data<T>();
    each_matrix(batch, static_cast<double>(n) * n * kk + 1.0, [&](int64_t k) {
      if (!n || !kk) return;
      MapC<T> m(pa + k * n * n, n, n);
      Map<T> x(dst + k * n * kk, n, kk);
      x = MapC<T>(pb + k * n * kk, n, kk);
      // Only the named triangle is read (a singular one gives inf/NaN, as TF's kernel)
      if (lower && !adjoint) m.template triangularView<Eigen::Lower>().solveInPlace(x);
      if (lower && adjoint) m.adjoint().template triangularView<Eigen::Upper>().solveInPlace(x);
      if (!lower && !adjoint) m.template triangularView<Eigen::Upper>().solveInPlace(x);
      if (!lower && adjoint) m.adjoint().template triangularView<Eigen::Lower>().solveInPlace(x);
    });
  });
}

void k_Cholesky(OpCall& c) {
  const Tensor& a = c.in[0];
  Tensor& out = c.alloc(0);
  const int64_t n = rows_of(a), batch = batch_of(a);
  std::atomic<bool> failed{false};
  JF_SWITCH_CLAIMED(op_types(OpId::Cholesky), a.dtype(), T, {
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    each_matrix(batch, cube(n), [&](int64_t k) {
      if (!n) return;
      // the lower triangle is read, as TF's kernel reads it
      Eigen::LLT<Mat<T>, Eigen::Lower> llt(MapC<T>(src + k * n * n, n, n));
      if (llt.info() != Eigen::Success) failed = true;
      Map<T>(dst + k * n * n, n, n) = llt.matrixL();
    });
  });
  if (failed) c.fail("Cholesky decomposition was not successful. The input might not be valid.");
}

void k_Qr(OpCall& c) {
  const Tensor& a = c.in[0];
  Tensor& q = c.alloc(0);
  Tensor& r = c.alloc(1);
  const int64_t m = rows_of(a), n = cols_of(a), p = cols_of(q), batch = batch_of(a);
  JF_SWITCH_CLAIMED(op_types(OpId::Qr), a.dtype(), H, {
    using T = std::conditional_t<kEigenHalf<H>, float, H>;
    Tensor af = a, qf = q, rf = r;
    if constexpr (kEigenHalf<H>) {
      af = widen_to_float<H>(a);
      qf = Tensor::empty(DType::kFloat32, q.shape());
      rf = Tensor::empty(DType::kFloat32, r.shape());
    }
    const T* src = af.data<T>();
    T* pq = qf.data<T>();
    T* pr = rf.data<T>();
    each_matrix(batch, static_cast<double>(m) * n * std::max<int64_t>(m, n) + 1.0, [&](int64_t k) {
      Map<T> qk(pq + k * m * p, m, p);
      Map<T> rk(pr + k * p * n, p, n);
      if (!m || !n) {
        qk.setIdentity();
        rk.setZero();
        return;
      }
      Eigen::HouseholderQR<Mat<T>> qr(MapC<T>(src + k * m * n, m, n));
      qk = qr.householderQ() * Mat<T>::Identity(m, p);
      rk = qr.matrixQR().topRows(p).template triangularView<Eigen::Upper>();
    });
    if constexpr (kEigenHalf<H>) {
      round_from_float<H>(qf, q);
      round_from_float<H>(rf, r);
    }
  });
}

void k_Svd(OpCall& c) {
  const Tensor& a = c.in[0];
  Tensor& s = c.alloc(0);
  Tensor& u = c.alloc(1);
  Tensor& v = c.alloc(2);
  const int64_t m = rows_of(a), n = cols_of(a), p = std::min(m, n), batch = batch_of(a);
  const bool uv = c.attrs.get<bool>("compute_uv", true);
  const bool full = c.attrs.get<bool>("full_matrices", false);
  const int64_t uc = full ? m : p, vc = full ? n : p;
  JF_SWITCH_CLAIMED(op_types(OpId::Svd), a.dtype(), T, {
    using R = typename Eigen::NumTraits<T>::Real;
    const T* src = a.data<T>();
    R* ps = s.data<R>();
    T* pu = uv ? u.data<T>() : nullptr;
    T* pv = uv ? v.data<T>() : nullptr;
    each_matrix(batch, static_cast<double>(m) * n * std::max<int64_t>(m, n) * 4 + 1.0, [&](int64_t k) {
      if (!p) {
        if (uv) {
          Map<T>(pu + k * m * uc, m, uc).setIdentity();
          Map<T>(pv + k * n * vc, n, vc).setIdentity();
        }
        return;
      }
      const unsigned opts = !uv    ? 0u
                            : full ? (Eigen::ComputeFullU | Eigen::ComputeFullV)
                                   : (Eigen::ComputeThinU | Eigen::ComputeThinV);
      Mat<T> x = MapC<T>(src + k * m * n, m, n);
      Eigen::BDCSVD<Mat<T>> svd(x, opts);
      Eigen::Map<Eigen::Matrix<R, Eigen::Dynamic, 1>>(ps + k * p, p) = svd.singularValues();
      if (uv) {
        Map<T>(pu + k * m * uc, m, uc) = svd.matrixU();
        Map<T>(pv + k * n * vc, n, vc) = svd.matrixV();
      }
    });
  });
}

void k_SelfAdjointEigV2(OpCall& c) {
  const Tensor& a = c.in[0];
  Tensor& e = c.alloc(0);
  Tensor& v = c.alloc(1);
  const int64_t n = rows_of(a), batch = batch_of(a);
  const bool compute_v = c.attrs.get<bool>("compute_v", true);
  JF_SWITCH_CLAIMED(op_types(OpId::SelfAdjointEigV2), a.dtype(), T, {
    const T* src = a.data<T>();
    T* pe = e.data<T>();
    T* pv = compute_v ? v.data<T>() : nullptr;
    each_matrix(batch, cube(n) * 4, [&](int64_t k) {
      if (!n) return;
      Eigen::SelfAdjointEigenSolver<Mat<T>> es(
          MapC<T>(src + k * n * n, n, n), compute_v ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
      Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(pe + k * n, n) = es.eigenvalues().template cast<T>();
      if (compute_v) Map<T>(pv + k * n * n, n, n) = es.eigenvectors();
    });
  });
}

}  // namespace jf
