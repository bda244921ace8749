// Shape inference for the decompositions and solvers (batches of matrices in the last two
// dims): determinants, inverse, solves, Cholesky, QR, SVD and the symmetric eigensolver. TF's
// op definitions and error texts are the reference.
#include <algorithm>

#include "ir/shape_fns.h"

namespace jf {
namespace {

// The input's [..., M, N] after the rank and dtype checks; `square` requires M == N.
const Shape& matrices(OpCall& c, size_t i, bool square) {
  c.check_claimed(i, i > 0);
  const Shape& s = c.in[i].shape();
  if (s.rank() < 2) c.fail("Shape must be at least rank 2 but is rank ", s.rank());
  const int64_t m = s[s.rank() - 2], n = s[s.rank() - 1];
  if (square && m >= 0 && n >= 0 && m != n)
    c.fail("Dimensions must be equal, but are ", m, " and ", n, " for input shape ", s.str());
  return s;
}

Shape batch_of(const Shape& s) {
  Shape b = s;
  b.erase(s.rank() - 1);
  b.erase(s.rank() - 2);
  return b;
}

Shape with(Shape b, std::initializer_list<int64_t> tail) {
  for (int64_t d : tail) b.push_back(d);
  return b;
}

int64_t min_dim(int64_t a, int64_t b) { return a < 0 || b < 0 ? -1 : std::min(a, b); }

}  // namespace

// MatrixDeterminant: [..., M, M] -> [...]
void infer_det(OpCall& c) {
  const Shape& s = matrices(c, 0, true);
  c.add_output(c.in[0].dtype(), batch_of(s));
}

// LogMatrixDeterminant: sign and log|det|, both [...]
void infer_slogdet(OpCall& c) {
  const Shape& s = matrices(c, 0, true);
  c.add_output(c.in[0].dtype(), batch_of(s));
  c.add_output(c.in[0].dtype(), batch_of(s));
}

// MatrixInverse, Cholesky: [..., M, M] -> the same
void infer_square_same(OpCall& c) {
  const Shape& s = matrices(c, 0, true);
  c.add_output(c.in[0].dtype(), s);
}

// MatrixSolve / MatrixTriangularSolve (matrix [..., M, M], rhs [..., M, K]) -> [..., M, K]; the
// batch dims are equal (the Python wrappers broadcast them first).
void infer_solve(OpCall& c) {
  const Shape& a = matrices(c, 0, true);
  const Shape& b = matrices(c, 1, false);
  if (c.in[0].dtype() != c.in[1].dtype())
    c.fail_type("matrix and rhs must have one dtype, got ", dtype_name(c.in[0].dtype()), " and ",
                dtype_name(c.in[1].dtype()));
  const int64_t m = a[a.rank() - 1], bm = b[b.rank() - 2];
  if (m >= 0 && bm >= 0 && m != bm)
    c.fail("Input matrix and right-hand side must have the same number of rows: ", m, " vs. ", bm);
  if (a.rank() != b.rank()) c.fail("matrix and rhs must have the same rank, got ", a.str(), " and ", b.str());
  for (int d = 0; d < a.rank() - 2; ++d)
    if (a[d] >= 0 && b[d] >= 0 && a[d] != b[d])
      c.fail("matrix and rhs must have the same batch dims, got ", a.str(), " and ", b.str());
  c.add_output(c.in[0].dtype(), b);
}

// Qr: q [..., M, P], r [..., P, N], P = M with full_matrices, else min(M, N)
void infer_qr(OpCall& c) {
  const Shape& s = matrices(c, 0, false);
  const int64_t m = s[s.rank() - 2], n = s[s.rank() - 1];
  const int64_t p = c.attrs.get<bool>("full_matrices", false) ? m : min_dim(m, n);
  c.add_output(c.in[0].dtype(), with(batch_of(s), {m, p}));
  c.add_output(c.in[0].dtype(), with(batch_of(s), {p, n}));
}

// Svd: s [..., P], u [..., M, M or P], v [..., N, N or P] (empty [0] when not compute_uv)
void infer_svd(OpCall& c) {
  const Shape& s = matrices(c, 0, false);
  const int64_t m = s[s.rank() - 2], n = s[s.rank() - 1], p = min_dim(m, n);
  const bool uv = c.attrs.get<bool>("compute_uv", true);
  const bool full = c.attrs.get<bool>("full_matrices", false);
  const DType dt = c.in[0].dtype();  // the singular values of a complex matrix are real
  c.add_output(dt == DType::kComplex64    ? DType::kFloat32
               : dt == DType::kComplex128 ? DType::kFloat64
                                          : dt,
               with(batch_of(s), {p}));
  c.add_output(c.in[0].dtype(), uv ? with(batch_of(s), {m, full ? m : p}) : Shape{0});
  c.add_output(c.in[0].dtype(), uv ? with(batch_of(s), {n, full ? n : p}) : Shape{0});
}

// SelfAdjointEigV2: e [..., M], v [..., M, M] (empty [0] when not compute_v)
void infer_eigh(OpCall& c) {
  const Shape& s = matrices(c, 0, true);
  const int64_t m = s[s.rank() - 1];
  c.add_output(c.in[0].dtype(), with(batch_of(s), {m}));
  c.add_output(c.in[0].dtype(), c.attrs.get<bool>("compute_v", true) ? s : Shape{0});
}

}  // namespace jf
