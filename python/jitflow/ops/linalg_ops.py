"""jf.linalg's index-map and composed ops: matvec, matrix_transpose/adjoint, band_part, diag,
diag_part, set_diag, trace and norm, as TF 2 defines them. The diagonal and band ops are masks
from index compares (constants when the dims are known, so they fold) and a select, which
fuses into the loops around it; diagonals are read by a masked sum along the rows. All trace
with unknown dims, compile and differentiate through their parts."""
import numbers

import numpy as np

from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from .dispatch import OP, run, run_n, static_value, to_tensor
from .einsum_ops import dims, eq_mask
from .stats_ops import reduce_any as _any


def _need_matrix(x, op):
    if len(x.shape) < 2:
        raise InvalidArgumentError(f"input must be at least 2-dim, received shape: {list(x.shape)} [Op:{op}]")


def _plain(name, default):
    return None if name == default else name


@export("linalg.matvec")
def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """a @ b[..., None], squeezed: a batch of matrices times a batch of vectors."""
    a, b = to_tensor(a), to_tensor(b)
    y = _ops.matmul(a, _ops.expand_dims(b, -1), transpose_a=transpose_a or adjoint_a)
    return _ops.squeeze(y, [-1], name=name)


@export("linalg.matrix_transpose", "linalg.transpose")
def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """The last two dims swapped, and with conjugate=True a complex value conjugated."""
    a = to_tensor(a)
    rank = len(a.shape)
    if rank < 2:
        raise ValueError(f"Argument `a` should be a (batch) matrix with rank >= 2.  Received `a` = {a} "
                         f"with shape: {a.shape}")
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    if conjugate and a.dtype.is_complex:
        a = run(OP["Conj"], (a,), None, None)
    return _ops.transpose(a, perm, name=_plain(name, "matrix_transpose"))


@export("linalg.adjoint")
def adjoint(matrix, name=None):
    return matrix_transpose(matrix, name=name or "matrix_transpose", conjugate=True)


def _placed(mask, rank):
    """A [rows, cols] mask reshaped to broadcast against a rank-`rank` batch of matrices."""
    if rank == 2:
        return mask
    return _ops.reshape(mask, [1] * (rank - 2) + dims(mask))


def _scalar(v):
    s = static_value(v) if isinstance(v, Tensor) else v
    return None if s is None else int(np.asarray(s))


@export("linalg.band_part")
def band_part(input, num_lower, num_upper, name=None):
    """input with the entries outside the band (num_lower below and num_upper above the main
    diagonal; negative keeps that whole triangle) set to zero."""
    x = to_tensor(input)
    _need_matrix(x, "MatrixBandPart")
    ds = dims(x)
    m, n = ds[-2], ds[-1]
    lo, hi = _scalar(num_lower), _scalar(num_upper)
    for v, what, lim in ((lo, "num_lower", m), (hi, "num_upper", n)):
        if v is not None and isinstance(lim, int) and v > lim:
            raise InvalidArgumentError(f"{what} must be negative or less or equal to number of "
                                       f"{'rows' if what == 'num_lower' else 'columns'} ({lim}) got: {v}")
    if isinstance(m, int) and isinstance(n, int) and lo is not None and hi is not None:
        diff = np.arange(n)[None, :] - np.arange(m)[:, None]  # column - row
        keep = ((lo < 0) | (-diff <= lo)) & ((hi < 0) | (diff <= hi))
        mask = _ops.constant(keep)
    else:
        i = _ops.expand_dims(_ops.range(m), 1)
        j = _ops.expand_dims(_ops.range(n), 0)
        lo_t = _ops.cast(to_tensor(num_lower), _dt.int32)
        hi_t = _ops.cast(to_tensor(num_upper), _dt.int32)
        below = _ops.logical_or(_ops.less(lo_t, 0), _ops.less_equal(i - j, lo_t))
        above = _ops.logical_or(_ops.less(hi_t, 0), _ops.less_equal(j - i, hi_t))
        mask = _ops.logical_and(below, above)
    return _ops.where(_placed(mask, len(ds)), x, _ops.zeros_like(x), name=name)


def _k_pair(k):
    if isinstance(k, Tensor):
        k = k.numpy().tolist() if not k._is_symbolic else static_value(k).tolist()
    if isinstance(k, (list, tuple, np.ndarray)):
        k = [int(v) for v in np.asarray(k).reshape(-1)]
        if len(k) == 1:
            return k[0], k[0]
        if len(k) != 2 or k[0] > k[1]:
            raise InvalidArgumentError("k[0] must not be larger than k[1]: " + str(k))
        return k[0], k[1]
    return int(k), int(k)


def _one_diag(x, k, m, n):
    """The k-th diagonal of x [..., m, n] (length min(m, n - k) for k >= 0, min(m + k, n) below)."""
    rank = len(x.shape)
    picked = _ops.where(_placed(eq_mask(m, n, k), rank), x, _ops.zeros_like(x))
    rows = _any(picked, -1) if x.dtype == _dt.bool else _ops.reduce_sum(picked, -1)
    start = max(-k, 0)
    length = _ops.minimum(m, n - k) if not (isinstance(m, int) and isinstance(n, int)) else min(m, n - k)
    if isinstance(length, int):
        if start == 0 and length == m:
            return rows
        return rows[..., start:start + length]
    return rows[..., start:start + length]


def _align_pad(d, k, length, max_len, align, padding_value):
    """Diagonal d padded to max_len by TF's alignment rule ("RIGHT_LEFT": superdiagonals and
    the main one right-aligned, subdiagonals left-aligned)."""
    extra = max_len - length
    if extra == 0:
        return d
    sup, sub = align.split("_")
    side = sup if k >= 0 else sub
    pads = [[0, 0]] * (len(d.shape) - 1) + [[extra, 0] if side == "RIGHT" else [0, extra]]
    return _array.pad(d, pads, constant_values=padding_value)


def _check_align(align):
    if align not in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        raise ValueError(f"align must be one of LEFT_RIGHT, RIGHT_LEFT, LEFT_LEFT, RIGHT_RIGHT, got {align}")


@export("linalg.diag_part")
def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):
    """The k-th diagonal of each matrix; for k = (lo, hi) the diagonals hi down to lo stacked
    along a new axis, padded to the longest with padding_value as `align` says."""
    x = to_tensor(input)
    _need_matrix(x, "MatrixDiagPartV3")
    _check_align(align)
    ds = dims(x)
    m, n = ds[-2], ds[-1]
    lo, hi = _k_pair(k)
    for v in (lo, hi):
        if isinstance(m, int) and isinstance(n, int) and not (-m <= v <= n):
            which = "lower" if v == lo else "upper"
            raise InvalidArgumentError(f"{which}_diag_index is out of bound: {v}. It must be between {-m} and {n}")
    if lo == hi:
        return _ops.identity(_one_diag(x, lo, m, n), name=_plain(name, "diag_part"))
    if not (isinstance(m, int) and isinstance(n, int)):
        raise NotImplementedError("jitflow's linalg.diag_part with a range of k needs the matrix dims when tracing")
    max_len = max(min(m + min(d, 0), n - max(d, 0)) for d in range(lo, hi + 1))
    parts = []
    for d in range(hi, lo - 1, -1):
        length = min(m + min(d, 0), n - max(d, 0))
        parts.append(_align_pad(_one_diag(x, d, m, n), d, length, max_len, align, padding_value))
    return _ops.stack(parts, axis=-2, name=_plain(name, "diag_part"))


def _known(*vs):
    return all(isinstance(v, int) for v in vs)


def _diag_length(m, n, d):
    """Diagonal d's length in an m x n matrix (a tensor when the dims are known only at run time)."""
    if _known(m, n):
        return min(m + min(d, 0), n - max(d, 0))
    return _ops.minimum(m + min(d, 0), n - max(d, 0))


def _unaligned(row, d, length, max_len, align):
    """Diagonal d's own `length` values out of a row padded to max_len as `align` says."""
    if _known(length, max_len) and length == max_len:
        return row
    sup, sub = align.split("_")
    return row[..., max_len - length:] if (sup if d >= 0 else sub) == "RIGHT" else row[..., :length]


def _diags_matrix(diagonal, lo, hi, m, n, fill, align):
    """[..., m, n] holding the diagonals hi down to lo of `diagonal` [..., hi - lo + 1, max_len]
    (each aligned in its row as `align` says), fill elsewhere: one masked select per diagonal
    (they never overlap)."""
    max_len = dims(diagonal)[-1]
    out = fill
    for i, d in enumerate(range(hi, lo - 1, -1)):
        vals = _unaligned(diagonal[..., i, :], d, _diag_length(m, n, d), max_len, align)
        out = _diag_matrix(vals, d, m, n, out)
    return out


def _diag_matrix(diagonal, k, m, n, fill):
    """[..., m, n] with diagonal on the k-th diagonal and fill elsewhere. Row i holds
    diagonal[i] at column i + k (k >= 0), column j holds diagonal[j] at row j - k (k < 0): the
    diagonal padded to a whole column (or row) of values, then selected by the mask."""
    rank = len(diagonal.shape) + 1
    extra = (m if k >= 0 else n) - dims(diagonal)[-1]
    vals = diagonal
    if not (isinstance(extra, int) and extra == 0):
        vals = _array.pad(diagonal, [[0, 0]] * (rank - 2) + [[0, extra]])
    vals = _ops.expand_dims(vals, -1 if k >= 0 else -2)
    return _ops.where(_placed(eq_mask(m, n, k), rank), vals, fill)


@export("linalg.diag")
def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """A batch of matrices with `diagonal` on the k-th diagonal and padding_value elsewhere;
    num_rows/num_cols default to the smallest square (or, off the main diagonal, the smallest)
    matrix that holds it."""
    d = to_tensor(diagonal)
    _check_align(align)
    lo, hi = _k_pair(k)
    if len(d.shape) < 1:
        raise InvalidArgumentError("MatrixDiagV3: diagonal must be at least 1-dim, received shape: []")
    if lo != hi:
        num = hi - lo + 1
        if len(d.shape) < 2 or (d.shape[-2] is not None and d.shape[-2] != num):
            raise InvalidArgumentError(f"MatrixDiagV3: The number of diagonals provided in the input does not "
                                       f"match the lower_diag_index and upper_diag_index range. Expected {num}")
    length = dims(d)[-1]
    m, n = _scalar(num_rows), _scalar(num_cols)
    if m is None or n is None:
        raise NotImplementedError("jitflow's linalg.diag needs num_rows and num_cols known when tracing")
    # TF's smallest matrix holding the diagonals: rows from the highest, columns from the lowest.
    min_rows, min_cols = length - min(hi, 0), length + max(lo, 0)
    if m < 0 and n < 0:  # a square
        m = n = max(min_rows, min_cols) if _known(min_rows, min_cols) else _ops.maximum(min_rows, min_cols)
    elif m < 0:
        m = min_rows
    elif n < 0:
        n = min_cols
    if isinstance(length, int) and isinstance(m, int) and isinstance(n, int) and (
            m < min_rows or n < min_cols or (m != min_rows and n != min_cols)):
        raise InvalidArgumentError("MatrixDiagV3: The number of rows or columns is not consistent with the "
                                   f"specified d_lower, d_upper, and diagonal. num_rows {m} num_cols {n}")
    fill = _ops.cast(to_tensor(padding_value), d.dtype)
    if lo != hi:
        fill = _ops.broadcast_to(fill, _ops.concat([_ops.shape(d)[:-2], [m, n]], 0))
        return _ops.identity(_diags_matrix(d, lo, hi, m, n, fill, align), name=_plain(name, "diag"))
    return _ops.identity(_diag_matrix(d, lo, m, n, fill), name=_plain(name, "diag"))


@export("linalg.set_diag")
def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):
    """input with its k-th diagonal replaced by `diagonal`."""
    x = to_tensor(input)
    d = _ops.cast(to_tensor(diagonal), x.dtype) if not isinstance(diagonal, Tensor) else diagonal
    _need_matrix(x, "MatrixSetDiagV3")
    _check_align(align)
    lo, hi = _k_pair(k)
    ds = dims(x)
    m, n = ds[-2], ds[-1]
    if lo != hi:
        want = [hi - lo + 1, max(_diag_length(m, n, v) for v in range(lo, hi + 1)) if _known(m, n) else None]
        if len(d.shape) != len(x.shape) or any(a is not None and b is not None and a != b
                                               for a, b in zip(d.shape[-2:], want)):
            raise InvalidArgumentError("Either first dimensions of diagonal don't match input.shape[:-2], or "
                                       "diagonal.shape[:-1] is not equal to the longests diagonal in range "
                                       f"[lower_diag_index:upper_diag_index].\nInput shape: {list(x.shape)}\n"
                                       f"Diagonal shape: {list(d.shape)}")
        return _ops.identity(_diags_matrix(d, lo, hi, m, n, x, align), name=_plain(name, "set_diag"))
    want = min(m + min(lo, 0), n - max(lo, 0)) if isinstance(m, int) and isinstance(n, int) else None
    if want is not None and d.shape[-1] is not None and d.shape[-1] != want:
        raise InvalidArgumentError("Either first dimensions of diagonal don't match input.shape[:-2], or "
                                   "diagonal.shape[:-1] is not equal to the longests diagonal in range "
                                   f"[lower_diag_index:upper_diag_index].\nInput shape: {list(x.shape)}\n"
                                   f"Diagonal shape: {list(d.shape)}")
    if len(d.shape) != len(x.shape) - 1:
        raise InvalidArgumentError(f"MatrixSetDiagV3: input rank must equal diagonal rank + 1, received "
                                   f"shapes {list(x.shape)} and {list(d.shape)}")
    return _ops.identity(_diag_matrix(d, lo, m, n, x), name=_plain(name, "set_diag"))


@export("linalg.trace")
def trace(x, name=None):
    """The sum of each matrix's main diagonal."""
    x = to_tensor(x)
    return _ops.reduce_sum(diag_part(x), -1, name=name)


@export("norm", "linalg.norm")
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):
    """TF 2's vector and matrix norms: euclidean/fro, 1, inf and any p > 0 for vectors; fro,
    1, inf and 2 (the largest singular value, from an SVD) for matrices (axis a pair)."""
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'")
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    is_matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix:
        if axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        supported = ["euclidean", "fro", 1, 2, np.inf]
        if ord not in supported:
            raise ValueError(f"'ord' must be a supported matrix norm in {supported}, got {ord}")
    else:
        if not (axis is None or isinstance(axis, numbers.Integral)):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        supported = ["euclidean", 1, 2, np.inf]
        if (not np.isreal(ord) or ord <= 0) and ord not in supported:
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    x = to_tensor(tensor)
    rank = len(x.shape)
    if is_matrix and ord in (2, 2.0):
        # the largest singular value, the two axes moved last for the SVD
        ax = sorted(a + rank if a < 0 else a for a in axis)
        perm = [d for d in range(rank) if d not in ax] + [a + rank if a < 0 else a for a in axis]
        s = run_n(OP["Svd"], (_ops.transpose(x, perm),), {"compute_uv": False, "full_matrices": False}, None)[0]
        y = _ops.reduce_max(s, -1)
        if keepdims:
            for a in ax:
                y = _ops.expand_dims(y, a)
        return _ops.identity(y, name=name) if name else y
    if axis is not None:
        axis = list(axis) if is_matrix else axis
        if is_matrix:
            axis = [a + rank if a < 0 else a for a in axis]
    if ord in ("fro", "euclidean", 2, 2.0):
        y = _ops.sqrt(_ops.reduce_sum(x * x, axis, keepdims=True))
    elif ord in (1, np.inf) or (is_matrix and ord in (1, np.inf)):
        y = _ops.abs(x)
        if is_matrix:
            if ord == 1:
                y = _ops.reduce_max(_ops.reduce_sum(y, axis[0], keepdims=True), axis[1], keepdims=True)
            else:
                y = _ops.reduce_max(_ops.reduce_sum(y, axis[1], keepdims=True), axis[0], keepdims=True)
        elif ord == 1:
            y = _ops.reduce_sum(y, axis, keepdims=True)
        else:
            y = _ops.reduce_max(y, axis, keepdims=True)
    else:
        y = _ops.pow(_ops.reduce_sum(_ops.pow(_ops.abs(x), ord), axis, keepdims=True), 1.0 / ord)
    if not keepdims:
        y = _ops.squeeze(y, axis if axis is not None else None)
        if axis is None:
            y = _ops.reshape(y, [])
    return _ops.identity(y, name=name) if name else y


__all__ = ["adjoint", "band_part", "diag", "diag_part", "matrix_transpose", "matvec", "norm", "set_diag", "trace"]
