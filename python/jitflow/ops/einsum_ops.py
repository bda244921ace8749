"""jf.einsum and jf.tensordot, composed as TF's Einsum kernel computes them: each operand's
repeated labels become a diagonal and its labels used nowhere else are summed away, then the
operands are contracted pairwise from the left, each pair transposed and reshaped into one
batched matrix product and reshaped back. Built from transpose, reshape, (Batch)MatMul,
select and reduce_sum, so einsum traces with unknown dims, compiles and differentiates through
its parts."""

import re

import numpy as np

from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from . import basic_ops as _ops
from .dispatch import to_tensor

_TERM = re.compile(r"^[A-Za-z]*(\.\.\.)?[A-Za-z]*$")
_EINSUM_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)


def dims(x):
    """x's dims: ints where the trace knows them, else scalar int32 tensors of its shape."""
    static = list(x.shape)
    if all(d is not None for d in static):
        return static
    dyn = _ops.shape(x)
    return [d if d is not None else dyn[i] for i, d in enumerate(static)]


def prod(ds):
    """The product of dims, an int when all are known."""
    out = 1
    for d in ds:
        out = out * d
    return out


def eq_mask(n, m, offset=0):
    """Boolean [n, m], true where column - row == offset: a constant when n, m and offset are
    known when tracing (so it folds), else compared from ranges."""
    if isinstance(n, int) and isinstance(m, int):
        diff = np.arange(m)[None, :] - np.arange(n)[:, None]
        if isinstance(offset, Tensor):
            return _ops.equal(_ops.constant(diff.astype(np.int32)), _ops.cast(offset, _dt.int32))
        return _ops.constant(diff == offset)
    i = _ops.expand_dims(_ops.range(n), 1)
    j = _ops.expand_dims(_ops.range(m), 0)
    return _ops.equal(j - i, offset)


def _transpose(x, labels, order):
    if list(labels) == list(order):
        return x
    return _ops.transpose(x, [labels.index(c) for c in order])


def _reshape(x, shape):
    if all(isinstance(d, int) for d in shape) and list(x.shape) == list(shape):
        return x
    return _ops.reshape(x, shape)


def _parse(equation, n):
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ValueError(f"Subscripts have incorrect format: {equation}")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if not all(_TERM.match(t) for t in terms) or (arrow and not _TERM.match(out)):
        raise ValueError(f"Subscripts have incorrect format: {equation}")
    if len(terms) != n:
        raise ValueError(f'Got {n} inputs for equation "{equation}", expecting {len(terms)}')
    letters = [c for t in terms for c in t if c != "."]
    if not arrow:
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        out = ("..." if any("..." in t for t in terms) else "") + "".join(once)
    else:
        named = out.replace("...", "")
        for c in named:
            if named.count(c) > 1:
                raise ValueError(f"Output subscripts contain a label appearing more than once: {equation}")
            if c not in letters:
                raise ValueError(
                    f"Output subscripts contain the label {c} not present in the input subscripts."
                )
    return terms, out


def _expand_ellipses(terms, out, xs):
    """Labels per operand with '...' replaced by private labels for the broadcast dims (aligned
    from the right, as numpy), and the output's labels."""
    widths = []
    for i, (t, x) in enumerate(zip(terms, xs)):
        named = len(t.replace("...", ""))
        rank = len(x.shape)
        if "..." in t:
            if rank < named:
                raise InvalidArgumentError(
                    f"Expected input {i} to have rank at least {named} but got: {rank}"
                )
            widths.append(rank - named)
        else:
            if rank != named:
                raise InvalidArgumentError(f"Expected input {i} to have rank {named} but got: {rank}")
            widths.append(0)
    e = max(widths) if widths else 0
    ell = [chr(0x100 + k) for k in range(e)]
    labels = [t.replace("...", "".join(ell[e - w :])) for t, w in zip(terms, widths)]
    if "..." in out:
        out = out.replace("...", "".join(ell))
    elif e and any(w for w in widths):
        raise InvalidArgumentError(
            f"Output contains {e} broadcasting dimension(s) but no ellipsis (...) was "
            "found in the output subscripts."
        )
    return labels, out


def _check_sizes(labels, xs):
    seen = {}
    for lab, x in zip(labels, xs):
        for axis, (c, d) in enumerate(zip(lab, x.shape)):
            if d is None:
                continue
            want = seen.setdefault(c, d)
            broadcast = ord(c) >= 0x100 and 1 in (want, d)
            if want != d and not broadcast:
                raise InvalidArgumentError(
                    f"Expected dimension {want} at axis {axis} of the input shaped "
                    f"{list(x.shape)} but got dimension {d}"
                )
            if broadcast:
                seen[c] = max(want, d)


def _diagonal(x, lab):
    """x with each repeated label's axes reduced to their diagonal."""
    while True:
        dup = next((c for c in lab if lab.count(c) > 1), None)
        if dup is None:
            return x, lab
        a = lab.index(dup)
        b = lab.index(dup, a + 1)
        perm = [k for k in range(len(lab)) if k != b] + [b]
        if perm != list(range(len(lab))):
            x = _ops.transpose(x, perm)
        lab = "".join(c for k, c in enumerate(lab) if k != b)
        ds = dims(x)
        shape = [1] * len(ds)
        shape[a] = shape[-1] = ds[a]
        mask = _ops.reshape(eq_mask(ds[a], ds[a]), shape)
        x = _ops.reduce_sum(_ops.where(mask, x, _ops.zeros_like(x)), -1)


def _sum_unused(x, lab, keep):
    gone = [k for k, c in enumerate(lab) if c not in keep]
    if not gone:
        return x, lab
    return _ops.reduce_sum(x, gone), "".join(c for c in lab if c in keep)


def _reads_transposed(labels, plain, transposed):
    """Whether the product reads an operand with these labels in its transposed layout."""
    labels = list(labels)
    if labels == plain or labels == transposed:
        return labels != plain
    return bool(labels) and transposed[-1:] == labels[-1:] != plain[-1:]


def _contract(a, la, b, lb, keep):
    """a (labels la) times b (labels lb), summing the shared labels not in keep."""
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]
    da = dict(zip(la, dims(a)))
    db = dict(zip(lb, dims(b)))
    # Each operand is laid out [batch, rows, cols] for the product; where its own order is
    # [batch, cols, rows] the matmul reads it transposed instead (adj_x / adj_y, as TF's
    # kernel), saving a transpose. An operand transposed either way keeps its last label last
    # where a layout allows: the copy then moves whole rows (attention's k, [b, k, h, d], goes
    # to [b, h, k, d] read transposed rather than to [b, h, d, k] gathering every element).
    ta = _reads_transposed(la, batch + free_a + summed, batch + summed + free_a)
    tb = _reads_transposed(lb, batch + summed + free_b, batch + free_b + summed)
    a = _transpose(a, la, batch + (summed + free_a if ta else free_a + summed))
    b = _transpose(b, lb, batch + (free_b + summed if tb else summed + free_b))
    k = prod(da[c] for c in summed)
    fa, fb = prod(da[c] for c in free_a), prod(db[c] for c in free_b)
    a = _reshape(a, [da[c] for c in batch] + ([k, fa] if ta else [fa, k]))
    b = _reshape(b, [db[c] for c in batch] + ([fb, k] if tb else [k, fb]))
    r = _ops.matmul(a, b, transpose_a=ta, transpose_b=tb)
    out_batch = dims(r)[: len(batch)]
    r = _reshape(r, out_batch + [da[c] for c in free_a] + [db[c] for c in free_b])
    return r, "".join(batch + free_a + free_b)


@export("einsum", "linalg.einsum")
def einsum(equation, *inputs, **kwargs):
    """TF 2's einsum: explicit or implicit output, '...' broadcasting, repeated labels on one
    operand as its diagonal, any number of operands contracted pairwise from the left."""
    name = kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(
            f"Invalid keyword arguments for this function: {', '.join(sorted(kwargs))}. "
            "Valid arguments: name, optimize"
        )
    xs = [to_tensor(x) for x in inputs]
    terms, out = _parse(equation, len(xs))
    for x in xs:
        if x.dtype not in _EINSUM_TYPES:
            raise TypeError(
                f"Value passed to parameter 'inputs' has DataType {x.dtype.name} not in list of "
                "allowed values: float32, float64, int32, int64"
            )
        if x.dtype != xs[0].dtype:
            raise TypeError(
                f"einsum: all inputs must have one dtype, got {xs[0].dtype.name} and {x.dtype.name}"
            )
    labels, out = _expand_ellipses(terms, out, xs)
    _check_sizes(labels, xs)
    ops = []
    for k, (x, lab) in enumerate(zip(xs, labels)):
        x, lab = _diagonal(x, lab)
        elsewhere = set(out).union(*(set(m) for j, m in enumerate(labels) if j != k))
        ops.append(_sum_unused(x, lab, elsewhere))
    x, lab = ops[0]
    for k in range(1, len(ops)):
        keep = set(out).union(*(set(lb) for _, lb in ops[k + 1 :]))
        x, lab = _contract(x, lab, ops[k][0], ops[k][1], keep)
    x, lab = _sum_unused(x, lab, set(out))
    y = _transpose(x, lab, list(out))
    if y is xs[0] or name:
        y = _ops.identity(y, name=name)
    return y


def _axes_list(v, rank, which):
    if isinstance(v, Tensor):
        v = v.numpy()
    v = np.asarray(v).reshape(-1).tolist()
    return [int(a) + rank if int(a) < 0 else int(a) for a in v]


@export("tensordot", "linalg.tensordot")
def tensordot(a, b, axes, name=None):
    """Sums a's axes axes[0] against b's axes[1] (or a's last `axes` against b's first), the
    other axes of a then of b remaining: an einsum of those labels."""
    a, b = to_tensor(a), to_tensor(b)
    ra, rb = len(a.shape), len(b.shape)
    if isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {axes}.")
        if axes > ra or axes > rb:
            raise ValueError(
                f"`axes` must not be larger than the number of dimensions of tensor "
                f"{a if axes > ra else b}.  Received {axes}, vs tensor dimensions "
                f"{ra if axes > ra else rb}."
            )
        ax_a, ax_b = list(range(ra - axes, ra)), list(range(axes))
    else:
        axes = list(axes)
        if len(axes) != 2:
            raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
        ax_a, ax_b = _axes_list(axes[0], ra, "a"), _axes_list(axes[1], rb, "b")
        if len(ax_a) != len(ax_b):
            raise ValueError(f"Different number of contraction axes `a` and `b`, {len(ax_a)} != {len(ax_b)}.")
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [
        chr(c) for c in range(ord("A"), ord("Z") + 1)
    ]
    la = letters[:ra]
    lb = letters[ra : ra + rb]
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out = [c for k, c in enumerate(la) if k not in ax_a] + [c for k, c in enumerate(lb) if k not in ax_b]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b, name=name)


__all__ = ["dims", "einsum", "eq_mask", "prod", "tensordot"]
