"""Keras 3's merge layers beyond Add and Concatenate: Subtract, Multiply, Average, Maximum,
Minimum and Dot (a batched dot product over chosen axes), with their functional forms."""
from ...ops import basic_ops as _ops
from ...ops import nn_ops as _nn
from .core import _Merge


class _Reduce(_Merge):
    """Elementwise fold of the inputs with _jf_fold(a, b), broadcasting as Keras does."""

    def call(self, inputs):
        self._check(inputs)
        out = inputs[0]
        for x in inputs[1:]:
            out = type(self)._jf_fold(out, x)
        return out


class Subtract(_Merge):
    """inputs[0] - inputs[1], for exactly two inputs."""

    def call(self, inputs):
        self._check(inputs)
        if len(inputs) != 2:
            raise ValueError(f"A `Subtract` layer should be called on exactly 2 inputs. Received: inputs={inputs}")
        return inputs[0] - inputs[1]


class Multiply(_Reduce):
    """The elementwise product of the inputs."""

    _jf_fold = staticmethod(_ops.multiply)


class Maximum(_Reduce):
    """The elementwise maximum of the inputs."""

    _jf_fold = staticmethod(_ops.maximum)


class Minimum(_Reduce):
    """The elementwise minimum of the inputs."""

    _jf_fold = staticmethod(_ops.minimum)


class Average(_Reduce):
    """The elementwise mean of the inputs."""

    _jf_fold = staticmethod(_ops.add)

    def call(self, inputs):
        return super().call(inputs) / len(inputs)


class Dot(_Merge):
    """Batched dot product of two inputs over axes (an int, or one per input; the batch axis 0
    never contracts); normalize=True takes the cosine. Keras's batch_dot: the result keeps
    each input's other axes, and a result of rank 1 becomes [batch, 1]."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int) and not (isinstance(axes, (list, tuple)) and len(axes) == 2
                                               and all(isinstance(a, int) for a in axes)):
            raise TypeError(f"Invalid type/value for `axes` argument. Expected an integer or a list of two "
                            f"integers. Received: axes={axes}")
        self.axes = axes
        self.normalize = normalize

    def call(self, inputs):
        self._check(inputs)
        if len(inputs) != 2:
            raise ValueError(f"A `Dot` layer should be called on exactly 2 inputs. Received: inputs={inputs}")
        x, y = inputs
        axes = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
        axes = [a % len(t.shape) for a, t in zip(axes, (x, y))]
        if 0 in axes:
            raise ValueError("Cannot perform batch_dot over the batch axis (axis 0).")
        if x.shape[axes[0]] is not None and y.shape[axes[1]] is not None and x.shape[axes[0]] != y.shape[axes[1]]:
            raise ValueError(f"Incompatible input shapes: axis values {x.shape[axes[0]]} (at axis {axes[0]}) != "
                             f"{y.shape[axes[1]]} (at axis {axes[1]}). Full input shapes: {tuple(x.shape)}, "
                             f"{tuple(y.shape)}")
        if self.normalize:
            x = _nn.l2_normalize(x, axis=axes[0])
            y = _nn.l2_normalize(y, axis=axes[1])
        return _batch_dot(x, y, axes[0], axes[1])

    def get_config(self):
        config = super().get_config()
        config.update({"axes": self.axes, "normalize": self.normalize})
        return config


def _batch_dot(x, y, ax, ay):
    """[b, *rest_x] . [b, *rest_y] over x's axis ax and y's ay: one batched matmul of
    [b, Px, K] and [b, K, Py], reshaped to [b, *rest_x, *rest_y] (at least [b, 1])."""
    rx = [d for d in range(1, len(x.shape)) if d != ax]
    ry = [d for d in range(1, len(y.shape)) if d != ay]
    xs, ys = _ops.shape(x), _ops.shape(y)
    x2 = _ops.reshape(_ops.transpose(x, [0, *rx, ax]), [xs[0], -1, xs[ax]])
    y2 = _ops.reshape(_ops.transpose(y, [0, ay, *ry]), [ys[0], ys[ay], -1])
    out = _ops.matmul(x2, y2)
    dims = [xs[0], *[xs[d] for d in rx], *[ys[d] for d in ry]]
    if len(dims) == 1:
        dims.append(1)
    return _ops.reshape(out, _ops.stack(dims))


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    return Minimum(**kwargs)(inputs)


def dot(inputs, axes=-1, **kwargs):
    return Dot(axes=axes, **kwargs)(inputs)
