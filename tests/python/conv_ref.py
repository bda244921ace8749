"""float64 numpy references for convolution and pooling, by direct loops over output positions
and window taps (NHWC; callers transpose NCHW): TF's window arithmetic (SAME pads the
difference, the smaller half before), a max pool that skips NaN and starts from the dtype's
lowest value, an average over the window's elements inside the input, a max-pool gradient
to the window's first largest element."""
import ml_dtypes
import numpy as np


def _is_float(dt):
    return dt.kind == "f" or dt == np.dtype(ml_dtypes.bfloat16)


def _lowest(dt):
    """The max pools' start: the dtype's lowest finite value."""
    return ml_dtypes.finfo(dt).min if _is_float(dt) else np.iinfo(dt).min


def out_and_pad(n, k, s, d, padding):
    """Output size and padding before, for one spatial dim; padding is "SAME", "VALID" or a
    (before, after) pair."""
    eff = (k - 1) * d + 1
    if padding == "VALID":
        lo = hi = 0
    elif padding == "SAME":
        out = -(-n // s)
        need = max((out - 1) * s + eff - n, 0)
        lo, hi = need // 2, need - need // 2
    else:
        lo, hi = padding
    return max((n + lo + hi - eff) // s + 1, 0), lo


def _geometry(x_shape, k, strides, dilations, padding):
    pads = padding if isinstance(padding, str) else None
    dims = []
    for i in range(2):
        p = pads if pads else padding[i]
        dims.append(out_and_pad(x_shape[1 + i], k[i], strides[i], dilations[i], p))
    return dims


def _taps(x_shape, k, strides, dilations, padding):
    """(oh, ow, kh, kw, ih, iw) for every tap of every output position that reads the input."""
    (oh_n, pt), (ow_n, pl) = _geometry(x_shape, k, strides, dilations, padding)
    for oh in range(oh_n):
        for ow in range(ow_n):
            for kh in range(k[0]):
                ih = oh * strides[0] - pt + kh * dilations[0]
                if not 0 <= ih < x_shape[1]:
                    continue
                for kw in range(k[1]):
                    iw = ow * strides[1] - pl + kw * dilations[1]
                    if 0 <= iw < x_shape[2]:
                        yield oh, ow, kh, kw, ih, iw


def conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """NHWC x, HWIO w; padding "SAME", "VALID" or [(top, bottom), (left, right)]."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    (oh_n, _), (ow_n, _) = _geometry(x.shape, w.shape[:2], strides, dilations, padding)
    y = np.zeros((x.shape[0], oh_n, ow_n, w.shape[3]))
    for oh, ow, kh, kw, ih, iw in _taps(x.shape, w.shape[:2], strides, dilations, padding):
        y[:, oh, ow, :] += x[:, ih, iw, :] @ w[kh, kw]
    return y


def conv2d_input_grad(x_shape, w, dy, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    w = np.asarray(w, np.float64)
    dy = np.asarray(dy, np.float64)
    dx = np.zeros(x_shape)
    for oh, ow, kh, kw, ih, iw in _taps(x_shape, w.shape[:2], strides, dilations, padding):
        dx[:, ih, iw, :] += dy[:, oh, ow, :] @ w[kh, kw].T
    return dx


def conv2d_filter_grad(x, w_shape, dy, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    x = np.asarray(x, np.float64)
    dy = np.asarray(dy, np.float64)
    dw = np.zeros(w_shape)
    for oh, ow, kh, kw, ih, iw in _taps(x.shape, w_shape[:2], strides, dilations, padding):
        dw[kh, kw] += x[:, ih, iw, :].T @ dy[:, oh, ow, :]
    return dw


def _windows(x_shape, k, strides, padding):
    """(oh, ow, rows, cols) of each window, clipped to the input."""
    (oh_n, pt), (ow_n, pl) = _geometry(x_shape, k, strides, (1, 1), padding)
    for oh in range(oh_n):
        h0 = oh * strides[0] - pt
        rows = range(max(h0, 0), min(h0 + k[0], x_shape[1]))
        for ow in range(ow_n):
            w0 = ow * strides[1] - pl
            yield oh, ow, rows, range(max(w0, 0), min(w0 + k[1], x_shape[2]))


def _out(x_shape, k, strides, padding):
    (oh_n, _), (ow_n, _) = _geometry(x_shape, k, strides, (1, 1), padding)
    return (x_shape[0], oh_n, ow_n, x_shape[3])


def max_pool(x, k, strides, padding):
    x = np.asarray(x)
    lowest = _lowest(x.dtype)
    y = np.zeros(_out(x.shape, k, strides, padding), np.float64 if _is_float(x.dtype) else x.dtype)
    for oh, ow, rows, cols in _windows(x.shape, k, strides, padding):
        win = x[:, rows.start:rows.stop, cols.start:cols.stop, :].astype(y.dtype)
        if _is_float(x.dtype):
            win = np.where(np.isnan(win), -np.inf, win)
        y[:, oh, ow, :] = np.maximum(win.max(axis=(1, 2)), lowest)
    return y


def avg_pool(x, k, strides, padding):
    x = np.asarray(x, np.float64)
    y = np.zeros(_out(x.shape, k, strides, padding))
    for oh, ow, rows, cols in _windows(x.shape, k, strides, padding):
        y[:, oh, ow, :] = x[:, rows.start:rows.stop, cols.start:cols.stop, :].mean(axis=(1, 2))
    return y


def max_pool_grad(x, g, k, strides, padding):
    x = np.asarray(x)
    g = np.asarray(g, np.float64)
    dx = np.zeros(x.shape)
    for oh, ow, rows, cols in _windows(x.shape, k, strides, padding):
        for n in range(x.shape[0]):
            for c in range(x.shape[3]):
                best = None
                for h in rows:
                    for w in cols:
                        if best is None or x[n, best[0], best[1], c] < x[n, h, w, c]:
                            best = (h, w)
                if best is not None:
                    dx[n, best[0], best[1], c] += g[n, oh, ow, c]
    return dx


def avg_pool_grad(x_shape, g, k, strides, padding):
    g = np.asarray(g, np.float64)
    dx = np.zeros(x_shape)
    for oh, ow, rows, cols in _windows(x_shape, k, strides, padding):
        count = len(rows) * len(cols)
        dx[:, rows.start:rows.stop, cols.start:cols.stop, :] += g[:, oh:oh + 1, ow:ow + 1, :] / count
    return dx


def nchw(x):
    return np.transpose(x, (0, 3, 1, 2))


def nhwc(x):
    return np.transpose(x, (0, 2, 3, 1))


# Depthwise: channel c of the input with its filters [h, w, c, :] gives outputs c * M + m.
def depthwise(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    return np.concatenate([conv2d(x[..., c:c + 1], w[:, :, c:c + 1, :], strides, padding, dilations)
                           for c in range(x.shape[3])], axis=3)


def depthwise_input_grad(x_shape, w, dy, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    m = w.shape[3]
    return np.concatenate([conv2d_input_grad((*x_shape[:3], 1), w[:, :, c:c + 1, :], dy[..., c * m:(c + 1) * m],
                                             strides, padding, dilations) for c in range(x_shape[3])], axis=3)


def depthwise_filter_grad(x, w_shape, dy, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    m = w_shape[3]
    return np.concatenate([conv2d_filter_grad(x[..., c:c + 1], (*w_shape[:2], 1, m), dy[..., c * m:(c + 1) * m],
                                              strides, padding, dilations) for c in range(x.shape[3])], axis=2)


# 3-D: sums of 2-D convolutions of depth slices (NDHWC x, DHWIO w).
def conv3d(x, w, strides=(1, 1, 1), padding="VALID", dilations=(1, 1, 1)):
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    od, pd = out_and_pad(x.shape[1], w.shape[0], strides[0], dilations[0],
                         padding if isinstance(padding, str) else padding[0])
    pad2 = padding if isinstance(padding, str) else padding[1:]
    y = None
    for o in range(od):
        acc = 0
        for kd in range(w.shape[0]):
            i = o * strides[0] - pd + kd * dilations[0]
            if 0 <= i < x.shape[1]:
                acc = acc + conv2d(x[:, i], w[kd], strides[1:], pad2, dilations[1:])
        if isinstance(acc, int):  # no tap inside the input: the 2-D output's shape, zeros
            acc = np.zeros_like(conv2d(x[:, 0], w[0], strides[1:], pad2, dilations[1:]))
        y = acc[:, None] if y is None else np.concatenate([y, acc[:, None]], 1)
    return y


def conv3d_input_grad(x_shape, w, dy, strides=(1, 1, 1), padding="VALID", dilations=(1, 1, 1)):
    dx = np.zeros(x_shape)
    od, pd = out_and_pad(x_shape[1], w.shape[0], strides[0], dilations[0], padding)
    for o in range(od):
        for kd in range(w.shape[0]):
            i = o * strides[0] - pd + kd * dilations[0]
            if 0 <= i < x_shape[1]:
                dx[:, i] += conv2d_input_grad((x_shape[0], *x_shape[2:]), w[kd], dy[:, o], strides[1:], padding,
                                              dilations[1:])
    return dx


def conv3d_filter_grad(x, w_shape, dy, strides=(1, 1, 1), padding="VALID", dilations=(1, 1, 1)):
    dw = np.zeros(w_shape)
    od, pd = out_and_pad(x.shape[1], w_shape[0], strides[0], dilations[0], padding)
    for o in range(od):
        for kd in range(w_shape[0]):
            i = o * strides[0] - pd + kd * dilations[0]
            if 0 <= i < x.shape[1]:
                dw[kd] += conv2d_filter_grad(x[:, i], w_shape[1:], dy[:, o], strides[1:], padding, dilations[1:])
    return dw


def _windows3(shape, k, strides, padding):
    """(output index, window slices) of each 3-D window over an NDHWC shape, clipped."""
    dims = [out_and_pad(shape[1 + i], k[i], strides[i], 1, padding) for i in range(3)]
    for o in np.ndindex(*[d[0] for d in dims]):
        sl = []
        for i in range(3):
            start = o[i] * strides[i] - dims[i][1]
            sl.append(slice(max(start, 0), min(start + k[i], shape[1 + i])))
        yield o, sl


def pool3d(x, k, strides, padding, kind):
    x = np.asarray(x)
    dims = [out_and_pad(x.shape[1 + i], k[i], strides[i], 1, padding)[0] for i in range(3)]
    y = np.zeros((x.shape[0], *dims, x.shape[4]))
    lowest = _lowest(x.dtype)
    for o, sl in _windows3(x.shape, k, strides, padding):
        win = x[:, sl[0], sl[1], sl[2], :].astype(np.float64)
        if kind == "max":
            y[(slice(None), *o)] = np.maximum(np.where(np.isnan(win), -np.inf, win).max(axis=(1, 2, 3)), lowest)
        else:
            y[(slice(None), *o)] = win.mean(axis=(1, 2, 3))
    return y


def max_pool3d_grad(x, g, k, strides, padding):
    dx = np.zeros(x.shape)
    for o, sl in _windows3(x.shape, k, strides, padding):
        for n in range(x.shape[0]):
            for c in range(x.shape[4]):
                win = x[n, sl[0], sl[1], sl[2], c]
                best = None
                for idx in np.ndindex(*win.shape):
                    if best is None or win[best] < win[idx]:
                        best = idx
                pos = tuple(s.start + b for s, b in zip(sl, best))
                dx[(n, *pos, c)] += g[(n, *o, c)]
    return dx


def avg_pool3d_grad(x_shape, g, k, strides, padding):
    dx = np.zeros(x_shape)
    for o, sl in _windows3(x_shape, k, strides, padding):
        count = np.prod([s.stop - s.start for s in sl])
        dx[:, sl[0], sl[1], sl[2], :] += g[(slice(None), *o)][:, None, None, None, :] / count
    return dx


def max_pool3d_grad_grad(x, gg, k, strides, padding):
    """gg (x's shape) read at each window's first maximum: MaxPoolGrad's adjoint in its gradient."""
    dims = [out_and_pad(x.shape[1 + i], k[i], strides[i], 1, padding)[0] for i in range(3)]
    y = np.zeros((x.shape[0], *dims, x.shape[4]))
    for o, sl in _windows3(x.shape, k, strides, padding):
        for n in range(x.shape[0]):
            for c in range(x.shape[4]):
                win = x[n, sl[0], sl[1], sl[2], c]
                best = None
                for idx in np.ndindex(*win.shape):
                    if best is None or win[best] < win[idx]:
                        best = idx
                if best is not None:
                    y[(n, *o, c)] = gg[(n, *(s.start + b for s, b in zip(sl, best)), c)]
    return y


def max_pool_grad_grad(x, gg, k, strides, padding):
    """The 2-D form: a 3-D pool of depth 1."""
    return max_pool3d_grad_grad(np.asarray(x)[:, None], np.asarray(gg)[:, None], (1, *k), (1, *strides),
                                padding)[:, 0]
