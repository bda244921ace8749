"""More of tf.nn and tf.linalg as compositions of jitflow's ops: crelu, local response
normalization, sufficient statistics and (weighted) moments, log_poisson_loss, atrous (dilated)
convolutions, conv_transpose by rank, space_to_batch / batch_to_space, max_pool_with_argmax;
and pinv, matrix_rank, cross, logdet, normalize, tensor_diag, tensor_diag_part and expm."""
import numpy as np

from ..core import dtypes as _dt
from ..core.export import export
from . import array_ops as _array
from . import basic_ops as _ops
from . import conv_ops as _conv
from . import decomp_ops as _decomp
from . import linalg_ops as _linalg
from .dispatch import to_tensor

# ---- tf.nn -----------------------------------------------------------------------------------


@export("nn.crelu")
def crelu(features, name=None, axis=-1):
    """relu of x and of -x, concatenated along axis."""
    x = to_tensor(features)
    return _ops.concat([_ops.relu(x), _ops.relu(-x)], axis=axis)


@export("nn.local_response_normalization", "nn.lrn")
def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, name=None):
    """x / (bias + alpha * sum of squares over the 2 depth_radius + 1 neighbouring channels)^beta."""
    x = to_tensor(input)
    sq = _ops.square(x)
    c = x.shape[-1]
    if c is None:
        raise NotImplementedError("jitflow's nn.local_response_normalization needs the depth when tracing")
    padded = _array.pad(sq, [[0, 0]] * (len(x.shape) - 1) + [[depth_radius, depth_radius]])
    window = _ops.add_n([padded[..., k:k + c] for k in range(2 * depth_radius + 1)])
    def const(v):
        return _ops.convert_to_tensor(float(v), x.dtype)
    return x / _ops.pow(const(bias) + const(alpha) * window, const(beta))


@export("nn.sufficient_statistics")
def sufficient_statistics(x, axes, shift=None, keepdims=False, name=None):
    """(count, sum of x - shift, sum of squares of x - shift, shift) over axes."""
    x = to_tensor(x)
    dims = _ops.shape(x)
    count = _ops.cast(_ops.reduce_prod(_ops.stack([dims[a] for a in axes])), x.dtype)
    y = x - shift if shift is not None else x
    return (count, _ops.reduce_sum(y, axis=axes, keepdims=keepdims),
            _ops.reduce_sum(_ops.square(y), axis=axes, keepdims=keepdims), shift)


@export("nn.normalize_moments")
def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    divisor = _ops.reciprocal(counts)
    shifted_mean = mean_ss * divisor
    mean = shifted_mean + shift if shift is not None else shifted_mean
    return mean, variance_ss * divisor - _ops.square(shifted_mean)


@export("nn.weighted_moments")
def weighted_moments(x, axes, frequency_weights, keepdims=False, name=None):
    """The frequency-weighted mean and variance of x over axes."""
    x = to_tensor(x)
    w = _ops.cast(to_tensor(frequency_weights), x.dtype)
    wsum = _ops.reduce_sum(w * _ops.ones_like(x), axis=axes, keepdims=True)
    mean = _ops.reduce_sum(w * x, axis=axes, keepdims=True) / wsum
    var = _ops.reduce_sum(w * _ops.square(x - mean), axis=axes, keepdims=True) / wsum
    if not keepdims:
        mean, var = _ops.squeeze(mean, axes), _ops.squeeze(var, axes)
    return mean, var


@export("nn.log_poisson_loss")
def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - targets * log_input, plus Stirling's term where targets > 1 with
    compute_full_loss."""
    z, c = to_tensor(targets), to_tensor(log_input)
    loss = _ops.exp(c) - c * z
    if compute_full_loss:
        stirling = z * _ops.log(z) - z + 0.5 * _ops.log(2.0 * np.pi * z)
        loss = loss + _ops.where(z > 1, stirling, _ops.zeros_like(z))
    return loss


@export("nn.atrous_conv2d")
def atrous_conv2d(value, filters, rate, padding, name=None):
    return _conv.conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1])


@export("nn.atrous_conv2d_transpose")
def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    return _conv.conv2d_transpose(value, filters, output_shape, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1])


@export("nn.conv_transpose")
def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None, dilations=None,
                   name=None):
    """conv1d_transpose, conv2d_transpose or conv3d_transpose by the input's rank."""
    rank = len(to_tensor(input).shape) - 2
    fn = {1: _conv.conv1d_transpose, 2: _conv.conv2d_transpose, 3: _conv.conv3d_transpose}.get(rank)
    if fn is None:
        raise ValueError(f"`input` must have rank 3, 4 or 5, got rank {rank + 2}")
    fmt = data_format or ("NWC", "NHWC", "NDHWC")[rank - 1]
    return fn(input, filters, output_shape, strides, padding=padding, data_format=fmt, dilations=dilations)


@export("space_to_batch_nd", "space_to_batch", "nn.space_to_batch")
def space_to_batch_nd(input, block_shape, paddings, name=None):
    """[batch, *spatial, *rest] zero-padded, cut into blocks of block_shape, the block offsets
    moved into the batch (TF's SpaceToBatchND)."""
    x = to_tensor(input)
    block = [int(b) for b in np.asarray(block_shape).reshape(-1)]
    pads = np.asarray(paddings, np.int64).reshape(-1, 2).tolist()
    m = len(block)
    x = _array.pad(x, [[0, 0], *pads] + [[0, 0]] * (len(x.shape) - 1 - m))
    dims = _ops.shape(x)
    rest = [dims[i] for i in range(1 + m, len(x.shape))]
    split = [dims[0]]
    for i, b in enumerate(block):
        split += [dims[1 + i] // b, b]
    y = _ops.reshape(x, _ops.stack(split + rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, 1 + 2 * m +
                                                                                         len(rest)))
    y = _ops.transpose(y, perm)
    out = [dims[0] * int(np.prod(block))] + [dims[1 + i] // b for i, b in enumerate(block)] + rest
    return _ops.reshape(y, _ops.stack(out))


@export("batch_to_space_nd", "batch_to_space", "nn.batch_to_space")
def batch_to_space_nd(input, block_shape, crops, name=None):
    """The inverse of space_to_batch_nd: block offsets moved back from the batch into space,
    then `crops` removed."""
    x = to_tensor(input)
    block = [int(b) for b in np.asarray(block_shape).reshape(-1)]
    crop = np.asarray(crops, np.int64).reshape(-1, 2).tolist()
    m = len(block)
    dims = _ops.shape(x)
    rest = [dims[i] for i in range(1 + m, len(x.shape))]
    prod = int(np.prod(block))
    y = _ops.reshape(x, _ops.stack(block + [dims[0] // prod] + [dims[1 + i] for i in range(m)] + rest))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = _ops.transpose(y, perm)
    y = _ops.reshape(y, _ops.stack([dims[0] // prod] + [dims[1 + i] * b for i, b in enumerate(block)] + rest))
    index = [slice(None)] + [slice(c0, (-c1) if c1 else None) for c0, c1 in crop]
    return y[tuple(index)]


@export("nn.max_pool_with_argmax")
def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", output_dtype=_dt.int64,
                         include_batch_in_index=False, name=None):
    """(max_pool2d, the flat index of each maximum: (y * width + x) * channels + c, plus the
    batch's offset with include_batch_in_index); ties take the first position, as TF."""
    x = to_tensor(input)
    if data_format != "NHWC":
        raise ValueError("max_pool_with_argmax supports data_format='NHWC' only, as TF")
    k = [ksize] * 2 if isinstance(ksize, int) else list(ksize)
    kh, kw = (k[1], k[2]) if len(k) == 4 else (k[0], k[-1])
    _, h, w, c = x.shape
    if None in (h, w, c):
        raise NotImplementedError("jitflow's max_pool_with_argmax needs the image size when tracing")
    pooled = _conv.max_pool2d(x, [kh, kw], strides, padding)
    # Each window offset in turn: keep the first maximum's flat pixel index.
    sh, sw = _conv_strides(strides)[1:3]
    oh, ow = pooled.shape[1], pooled.shape[2]
    pad_top = max((oh - 1) * sh + kh - h, 0) // 2 if padding == "SAME" else 0
    pad_left = max((ow - 1) * sw + kw - w, 0) // 2 if padding == "SAME" else 0
    big = np.finfo(np.float64).max
    index = np.arange(h * w).reshape(h, w)
    best_val, best_idx = None, None
    for dy in range(kh):
        for dx in range(kw):
            rows = np.arange(oh) * sh + dy - pad_top
            cols = np.arange(ow) * sw + dx - pad_left
            valid = (rows[:, None] >= 0) & (rows[:, None] < h) & (cols[None, :] >= 0) & (cols[None, :] < w)
            r, cc = np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1)
            vals = _array.gather(_array.gather(x, r.tolist(), axis=1), cc.tolist(), axis=2)
            vals = _ops.where(_ops.constant(valid[None, :, :, None]), vals,
                              _ops.fill(_ops.shape(vals), _ops.cast(-big, x.dtype)))
            flat = _ops.constant(index[r][:, cc][None, :, :, None].astype(np.int64))
            if best_val is None:
                best_val, best_idx = vals, flat + _ops.zeros_like(vals, dtype=_dt.int64)
            else:
                better = vals > best_val
                best_val = _ops.where(better, vals, best_val)
                best_idx = _ops.where(better, flat + _ops.zeros_like(best_idx), best_idx)
    arg = best_idx * c + _ops.reshape(_ops.range(c, dtype=_dt.int64), [1, 1, 1, c])
    if include_batch_in_index:
        batch = _ops.reshape(_ops.range(_ops.shape(x, out_type=_dt.int64)[0], dtype=_dt.int64), [-1, 1, 1, 1])
        arg = arg + batch * (h * w * c)
    return pooled, _ops.cast(arg, output_dtype)


def _conv_strides(strides):
    s = [strides] * 2 if isinstance(strides, int) else list(strides)
    return [1, *s[-3:-1], 1] if len(s) == 4 else [1, *s, 1]


# ---- tf.linalg --------------------------------------------------------------------------------


@export("linalg.pinv")
def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose inverse from the SVD, singular values below rcond * max dropped
    (rcond defaults to 10 * max(rows, cols) * eps, as TF)."""
    x = to_tensor(a)
    s, u, v = _decomp.svd(x, full_matrices=False)
    if rcond is None:
        rows, cols = x.shape[-2], x.shape[-1]
        rcond = 10.0 * max(rows, cols) * np.finfo(x.dtype.as_numpy_dtype).eps
    cutoff = _ops.cast(rcond, x.dtype) * _ops.reduce_max(s, axis=-1, keepdims=True)
    inv_s = _ops.where(s > cutoff, _ops.reciprocal(_ops.where(s > cutoff, s, _ops.ones_like(s))), _ops.zeros_like(s))
    return _ops.matmul(v * _ops.expand_dims(inv_s, -2), u, transpose_b=True)


@export("linalg.matrix_rank")
def matrix_rank(a, tol=None, validate_args=False, name=None):
    x = to_tensor(a)
    s = _decomp.svd(x, compute_uv=False)
    if tol is None:
        eps = np.finfo(x.dtype.as_numpy_dtype).eps
        tol = _ops.reduce_max(s, axis=-1, keepdims=True) * (max(x.shape[-2], x.shape[-1]) * eps)
    return _ops.reduce_sum(_ops.cast(s > tol, _dt.int32), axis=-1)


@export("linalg.cross")
def cross(a, b, name=None):
    """The cross product of 3-vectors along the last axis."""
    x, y = to_tensor(a), to_tensor(b)
    x0, x1, x2 = _array.unstack(x, axis=-1)
    y0, y1, y2 = _array.unstack(y, axis=-1)
    return _ops.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)


@export("linalg.logdet")
def logdet(matrix, name=None):
    """log(det) of Hermitian positive definite matrices: 2 sum(log(diag(cholesky)))."""
    chol = _decomp.cholesky(matrix)
    return 2.0 * _ops.reduce_sum(_ops.log(_linalg.diag_part(chol)), axis=-1)


@export("linalg.normalize")
def normalize(tensor, ord="euclidean", axis=None, name=None):
    """(tensor / norm, norm)."""
    x = to_tensor(tensor)
    n = _linalg.norm(x, ord=ord, axis=axis, keepdims=True)
    return x / n, n


@export("linalg.tensor_diag")
def tensor_diag(diagonal, name=None):
    """out[i..., i...] = diagonal[i...]: rank 2k from rank k."""
    d = to_tensor(diagonal)
    flat = _ops.reshape(d, [-1])
    n = flat.shape[0]
    return _ops.reshape(_linalg.diag(flat), list(d.shape) * 2) if n is not None else _linalg.diag(flat)


@export("linalg.tensor_diag_part")
def tensor_diag_part(input, name=None):
    x = to_tensor(input)
    k = len(x.shape) // 2
    half = list(x.shape[:k])
    n = int(np.prod(half))
    return _ops.reshape(_linalg.diag_part(_ops.reshape(x, [n, n])), half)


@export("linalg.expm")
def expm(input, name=None):
    """The matrix exponential by scaling and squaring with a degree-13 Padé approximant."""
    x = to_tensor(input)
    b = [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0]
    norm1 = _ops.reduce_max(_ops.reduce_sum(_ops.abs(x), axis=-2), axis=-1)
    squarings = _ops.maximum(_ops.ceil(_ops.log(norm1 / 5.371920351148152) / np.log(2.0)), 0.0)
    if x._is_symbolic:
        raise NotImplementedError("jitflow's linalg.expm needs the matrices' values (eager mode) to choose the "
                                  "number of squarings")
    scaled = x / _ops.expand_dims(_ops.expand_dims(_ops.pow(_ops.cast(2.0, x.dtype), _ops.cast(squarings, x.dtype)),
                                                   -1), -1)
    eye = _array.eye(x.shape[-1], batch_shape=list(x.shape[:-2]), dtype=x.dtype)
    a2 = _ops.matmul(scaled, scaled)
    a4 = _ops.matmul(a2, a2)
    a6 = _ops.matmul(a4, a2)
    u = _ops.matmul(scaled, _ops.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
                    + b[1] * eye)
    v = _ops.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    result = _decomp.solve(v - u, v + u)
    # Square back per matrix: each batch entry its own count.
    counts = np.asarray(squarings.numpy()).reshape(-1).astype(int)
    flat = _ops.reshape(result, [-1, x.shape[-2], x.shape[-1]])
    outs = []
    for i, k in enumerate(counts):
        r = flat[i]
        for _ in range(k):
            r = _ops.matmul(r, r)
        outs.append(r)
    return _ops.reshape(_ops.stack(outs), _ops.shape(x))

