"""jf.linalg's decompositions and solvers as TF 2 exposes them: det, slogdet, inv, solve,
triangular_solve (batch dims broadcast, as TF's wrapper does), cholesky, cholesky_solve, qr,
svd, eigh/eigvalsh and lstsq. Each decomposition is one op on an Eigen kernel (a library step
when compiled); lstsq is composed from them as TF composes it (Cholesky of the regularized
normal equations when fast, else the SVD's pseudo-inverse)."""
from ..core.export import export
from . import basic_ops as _ops
from .array_ops import eye
from .dispatch import OP, run, run_n, to_tensor
from .einsum_ops import dims
from .linalg_ops import matrix_transpose


def _matrix(x, what="input"):
    x = to_tensor(x)
    if len(x.shape) < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {len(x.shape)}")
    return x


@export("linalg.det")
def det(input, name=None):
    return run(OP["MatrixDeterminant"], (_matrix(input),), None, name)


@export("linalg.slogdet")
def slogdet(input, name=None):
    """(sign, log|det|) of each matrix; log|det| is summed from the LU factors, so it stays
    finite where det itself would overflow."""
    sign, logdet = run_n(OP["LogMatrixDeterminant"], (_matrix(input),), None, name)
    return sign, logdet


@export("linalg.inv")
def inv(input, adjoint=False, name=None):
    return run(OP["MatrixInverse"], (_matrix(input),), {"adjoint": bool(adjoint)}, name)


@export("linalg.solve")
def solve(matrix, rhs, adjoint=False, name=None):
    return run(OP["MatrixSolve"], (_matrix(matrix), _matrix(rhs)), {"adjoint": bool(adjoint)}, name)


def _broadcast_batch(a, b):
    """a and b with their batch dims (all but the last two) broadcast against each other: each
    plus zeros shaped like the other's batch (gradients then sum over the broadcast dims)."""
    if list(a.shape[:-2]) == list(b.shape[:-2]) and None not in a.shape[:-2]:
        return a, b
    def batch_zeros(x):  # zeros of shape batch + [1, 1], even for 0x0 matrices
        return _ops.zeros_like(_ops.reduce_sum(x, [-2, -1], keepdims=True))
    return a + batch_zeros(b), b + batch_zeros(a)


@export("linalg.triangular_solve")
def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """x with matrix @ x = rhs (or adjoint(matrix) @ x), reading only matrix's lower (or upper)
    triangle; batch dims broadcast."""
    a, b = _broadcast_batch(_matrix(matrix), _matrix(rhs))
    return run(OP["MatrixTriangularSolve"], (a, b), {"lower": bool(lower), "adjoint": bool(adjoint)}, name)


@export("linalg.cholesky")
def cholesky(input, name=None):
    return run(OP["Cholesky"], (_matrix(input),), None, name)


@export("linalg.cholesky_solve")
def cholesky_solve(chol, rhs, name=None):
    """x with (chol @ chol^T) x = rhs: two triangular solves."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    x = triangular_solve(chol, y, lower=True, adjoint=True)
    return _ops.identity(x, name=name) if name else x


@export("linalg.qr")
def qr(input, full_matrices=False, name=None):
    q, r = run_n(OP["Qr"], (_matrix(input),), {"full_matrices": bool(full_matrices)}, name)
    return q, r


@export("linalg.svd", "svd")
def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular values (descending), and with compute_uv u and v (tensor = u diag(s) v^T)."""
    s, u, v = run_n(OP["Svd"], (_matrix(tensor),),
                    {"compute_uv": bool(compute_uv), "full_matrices": bool(full_matrices)}, name)
    return (s, u, v) if compute_uv else s


@export("linalg.eigh")
def eigh(tensor, name=None):
    """Eigenvalues (ascending) and eigenvectors (columns) of each self-adjoint matrix, read
    from its lower triangle."""
    e, v = run_n(OP["SelfAdjointEigV2"], (_matrix(tensor),), {"compute_v": True}, name)
    return e, v


@export("linalg.eigvalsh")
def eigvalsh(tensor, name=None):
    e, _ = run_n(OP["SelfAdjointEigV2"], (_matrix(tensor),), {"compute_v": False}, name)
    return e


@export("linalg.lstsq", "linalg.matrix_solve_ls")
def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """The least-squares solution of matrix @ x = rhs (minimum norm when underdetermined), with
    an l2 penalty: fast=True solves the regularized normal equations by Cholesky (TF's fast
    path: (A^T A + l2 I) x = A^T b, or x = A^T (A A^T + l2 I)^-1 b when A is wide), fast=False
    goes through the SVD (x = V diag(s / (s^2 + l2)) U^T b)."""
    a, b = _matrix(matrix), _matrix(rhs)
    if a.dtype != b.dtype:
        raise TypeError(f"matrix and rhs must have one dtype, got {a.dtype.name} and {b.dtype.name}")
    m, n = dims(a)[-2:]
    l2 = _ops.cast(to_tensor(l2_regularizer), a.dtype)
    if fast:
        if not isinstance(m, int) or not isinstance(n, int):
            raise NotImplementedError("jitflow's linalg.lstsq needs the matrix dims known when tracing")
        at = matrix_transpose(a)
        if m >= n:
            gram = _ops.matmul(at, a) + l2 * eye(n, dtype=a.dtype)
            x = cholesky_solve(cholesky(gram), _ops.matmul(at, b))
        else:
            gram = _ops.matmul(a, at) + l2 * eye(m, dtype=a.dtype)
            x = _ops.matmul(at, cholesky_solve(cholesky(gram), b))
    else:
        s, u, v = svd(a)
        scale = s / (s * s + l2)
        scale = _ops.where(_ops.greater(s, 0), scale, _ops.zeros_like(s))
        x = _ops.matmul(v, _ops.expand_dims(scale, -1) * _ops.matmul(u, b, transpose_a=True))
    return _ops.identity(x, name=name) if name else x


__all__ = ["cholesky", "cholesky_solve", "det", "eigh", "eigvalsh", "inv", "lstsq", "qr", "slogdet", "solve", "svd",
           "triangular_solve"]
