"""Gradients of the decompositions and solvers, the standard adjoint formulas TF's linalg_grad
uses (adjoint: the conjugate transpose, the transpose of a real matrix): det and slogdet
through the inverse adjoint, inv and the solves through solves with the adjoint, Cholesky
through triangular solves of its factor, QR (M >= N, reduced; TF's extra term for complex
matrices), the self-adjoint eigensolver (lower triangle read) and the SVD (TF's extra
term for complex matrices too)."""
from ..ops import basic_ops as ops
from ..ops import complex_ops as cx
from ..ops import decomp_ops as la
from ..ops import linalg_ops as lo
from .registry import register_gradient
from .shapes import is_float

T = lo.adjoint


def _mm(a, b, ta=False, tb=False):
    return ops.matmul(a, b, adjoint_a=ta, adjoint_b=tb)


def _col(x):
    return ops.expand_dims(ops.expand_dims(x, -1), -1)


@register_gradient("MatrixDeterminant")
def _det_grad(op, g):
    a, d = op.inputs[0], op.outputs[0]
    return [_col(g * d) * la.inv(a, adjoint=True)]


@register_gradient("LogMatrixDeterminant")
def _slogdet_grad(op, g_sign, g_log):
    if g_log is None:
        return [None]
    return [_col(g_log) * la.inv(op.inputs[0], adjoint=True)]


@register_gradient("MatrixInverse")
def _inv_grad(op, g):
    ainv = op.outputs[0]
    if op.get_attr("adjoint", False):
        return [-_mm(ainv, _mm(g, ainv, ta=False, tb=True), ta=True)]  # (-A^-T G^T A^-T)^T
    return [-_mm(ainv, _mm(g, ainv, tb=True), ta=True)]


def _solve_grads(op, g, solver):
    a, x = op.inputs[0], op.outputs[0]
    adjoint = op.get_attr("adjoint", False)
    gb = solver(a, g, not adjoint)
    ga = -_mm(x, gb, tb=True) if adjoint else -_mm(gb, x, tb=True)
    return ga, gb


@register_gradient("MatrixSolve")
def _solve_grad(op, g):
    ga, gb = _solve_grads(op, g, lambda a, r, adj: la.solve(a, r, adjoint=adj))
    return [ga, gb]


@register_gradient("MatrixTriangularSolve")
def _triangular_solve_grad(op, g):
    lower = op.get_attr("lower", True)
    ga, gb = _solve_grads(op, g, lambda a, r, adj: la.triangular_solve(a, r, lower=lower, adjoint=adj))
    ga = lo.band_part(ga, -1, 0) if lower else lo.band_part(ga, 0, -1)
    return [ga, gb]


@register_gradient("Cholesky")
def _cholesky_grad(op, g):
    fac = op.outputs[0]
    eye = lo.set_diag(ops.zeros_like(fac), ops.ones_like(lo.diag_part(fac)))
    l_inv = la.triangular_solve(fac, eye, lower=True)
    middle = _mm(fac, g, ta=True)
    middle = lo.set_diag(middle, 0.5 * lo.diag_part(middle))
    middle = lo.band_part(middle, -1, 0)
    ga = _mm(_mm(l_inv, middle, ta=True), l_inv)
    return [0.5 * (ga + T(ga))]


def _solve_r(x, r):
    """x r^-H for upper-triangular r (TF's helper: a triangular solve with r, adjoint)."""
    return T(la.triangular_solve(r, T(x), lower=False, adjoint=False))


def _qr_grad_tall(q, r, dq, dr):
    qdq = _mm(q, dq, ta=True)
    rdr = _mm(r, dr, tb=True)
    tril = lo.band_part((qdq - T(qdq)) + (rdr - T(rdr)), -1, 0)
    grad = _mm(q, dr + _solve_r(tril, r)) + _solve_r(dq - _mm(q, qdq), r)
    if q.dtype.is_complex:  # TF's correction: the imaginary part of diag(r dr^H - dq^H q)
        m = rdr - T(qdq)
        eyem = lo.set_diag(ops.zeros_like(m), lo.diag_part(m))
        correction = eyem - ops.cast(cx.real(eyem), q.dtype)
        grad = grad + _solve_r(_mm(q, T(correction)), r)
    return grad


@register_gradient("Qr")
def _qr_grad(op, dq, dr):
    a = op.inputs[0]
    q, r = op.outputs
    m, n = r.shape[-2], r.shape[-1]
    if m is None or n is None:
        raise NotImplementedError("QrGrad not implemented with dynamic shapes")
    if m > n and q.shape[-2] == q.shape[-1]:
        raise NotImplementedError("QrGrad not implemented when nrows > ncols and full_matrices is true")
    dq = ops.zeros_like(q) if dq is None else dq
    dr = ops.zeros_like(r) if dr is None else dr
    rows = q.shape[-2]
    if rows >= n:
        return [_qr_grad_tall(q, r, dq, dr)]
    # wide: a = [x, y] with x square; r = [u, v]
    y, u = a[..., :, rows:], r[..., :, :rows]
    dv, du = dr[..., :, rows:], dr[..., :, :rows]
    dx = _qr_grad_tall(q, u, dq + _mm(y, dv, tb=True), du)
    return [ops.concat([dx, _mm(q, dv)], -1)]


def _safe_reciprocal(x, eps=1e-20):
    return x / (x * x + eps)


@register_gradient("SelfAdjointEigV2")
def _eigh_grad(op, ge, gv):
    e, v = op.outputs
    if not is_float(op.inputs[0]):  # floats and complex values
        return [None]
    inner = lo.diag(ge) if ge is not None else ops.zeros_like(op.inputs[0])
    if gv is not None:
        if not op.get_attr("compute_v", True):
            raise NotImplementedError("eigvalsh's eigenvectors have no gradient")
        f = lo.set_diag(ops.reciprocal(ops.expand_dims(e, -2) - ops.expand_dims(e, -1)), ops.zeros_like(e))
        inner = inner + f * _mm(v, gv, ta=True)
    if not op.get_attr("compute_v", True):
        _, v = la.eigh(op.inputs[0])
    ga = _mm(v, _mm(inner, v, tb=True))
    # the kernel reads the lower triangle: its gradient lives there
    ga = lo.band_part(ga + T(ga), -1, 0)
    return [lo.set_diag(ga, 0.5 * lo.diag_part(ga))]


@register_gradient("Svd")
def _svd_grad(op, gs, gu, gv):
    a = op.inputs[0]
    s = op.outputs[0]
    gs = ops.zeros_like(s) if gs is None else gs
    cplx = a.dtype.is_complex
    if cplx:  # a complex matrix's singular values are real: TF casts them to its dtype
        s, gs = ops.cast(s, a.dtype), ops.cast(gs, a.dtype)
    if not op.get_attr("compute_uv", True):
        _, u, v = la.svd(a)
        return [_mm(u, _mm(lo.diag(gs), v, tb=True))]
    m, n = a.shape[-2], a.shape[-1]
    if m is None or n is None:
        raise NotImplementedError("SVD gradient needs the matrix dims known when tracing")
    full = op.get_attr("full_matrices", False)
    u, v = op.outputs[1], op.outputs[2]
    gu = ops.zeros_like(u) if gu is None else gu
    gv = ops.zeros_like(v) if gv is None else gv
    swap = m > n
    if swap:  # work on the wide transpose
        m, n = n, m
        u, v, gu, gv = v, u, gv, gu
    if full and abs(m - n) > 1:
        raise NotImplementedError("svd gradient is not implemented for abs(m - n) > 1 when full_matrices is True")
    s_mat = lo.diag(s)
    s2 = s * s
    f = lo.set_diag(_safe_reciprocal(ops.expand_dims(s2, -2) - ops.expand_dims(s2, -1)), ops.zeros_like(s))
    s_inv = lo.diag(_safe_reciprocal(s))
    v1, gv1 = v[..., :, :m], gv[..., :, :m]
    u = u[..., :, :m]
    gu = gu[..., :, :m]
    v_gv = _mm(v1, gv1, ta=True)
    f_u = f * _mm(u, gu, ta=True)
    f_v = f * v_gv
    inner = lo.diag(gs) + _mm(f_u + T(f_u), s_mat) + _mm(s_mat, f_v + T(f_v))
    grad = _mm(u, _mm(inner, v1, tb=True))
    if m != n:
        gv1t = T(gv1)
        rest = gv1t - _mm(_mm(gv1t, v1), v1, tb=True)
        if full:
            v2, gv2 = v[..., :, m:n], gv[..., :, m:n]
            rest = rest - _mm(_mm(v1, gv2, ta=True), v2, tb=True)
        grad = grad + _mm(_mm(u, s_inv), rest)
    if cplx:  # TF's third term: the imaginary part of diag(v^H gv)
        diag_v_gv = lo.set_diag(ops.zeros_like(v_gv), lo.diag_part(v_gv))
        grad = grad + 0.5 * _mm(u, _mm(_mm(s_inv, T(diag_v_gv) - diag_v_gv), v1, tb=True))
    return [T(grad) if swap else grad]
