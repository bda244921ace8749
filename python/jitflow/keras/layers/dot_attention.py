"""Keras 3's Attention (Luong-style: dot or concat scores) and AdditiveAttention (Bahdanau-style)
over inputs [query, value] or [query, value, key]: scores [batch, Tq, Tv], masked positions of
the value (or the causal mask) lowered by 1e9 before the softmax, dropout on the weights in
training, outputs weights @ value, zeroed where the query is masked. And EinsumDense, the dense
layer written as an einsum equation."""
import re

from ...core import dtypes as _dt
from ...ops import basic_ops as _ops
from ...ops import einsum_ops as _einsum
from ...ops import nn_ops as _nn
from .. import activations, constraints, initializers, regularizers
from .core import SeedState, _serialize_initializer, stateless_dropout
from .layer import Layer


class _BaseDenseAttention(Layer):
    def __init__(self, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.dropout, self.seed = dropout, seed
        self._jf_seed_state = SeedState(seed) if dropout > 0 else None
        self.supports_masking = True

    def _validate(self, inputs, mask=None):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer must be called on a list of inputs, namely [query, value] "
                             f"or [query, value, key]. Received: inputs={inputs}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or len(mask) not in (2, 3)):
            raise ValueError(f"{type(self).__name__} layer mask must be a list of length 2, namely [query_mask, "
                             f"value_mask]. Received: mask={mask}.")

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, mask=None, training=False, return_attention_scores=False, use_causal_mask=False):
        self._validate(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._scores(q, k)
        keep = None if v_mask is None else _ops.expand_dims(_ops.cast(v_mask, _dt.bool), -2)
        if use_causal_mask:
            dims = _ops.shape(scores)
            rows = _ops.expand_dims(_ops.range(dims[-2]), 1)
            cols = _ops.expand_dims(_ops.range(dims[-1]), 0)
            causal = _ops.expand_dims(rows >= cols, 0)
            keep = causal if keep is None else _ops.logical_and(keep, causal)
        if keep is not None:
            big = _ops.convert_to_tensor(1e9, scores.dtype)
            scores = _ops.where(keep, scores, scores - big)
        weights = _nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = stateless_dropout(weights, self.dropout, self._jf_seed_state)
        out = _ops.matmul(weights, v)
        if q_mask is not None:
            out = _ops.where(_ops.expand_dims(_ops.cast(q_mask, _dt.bool), -1), out, _ops.zeros([], out.dtype))
        return (out, weights) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        if mask is None or mask[0] is None:
            return None
        return _ops.convert_to_tensor(mask[0])

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout, "seed": self.seed})
        return config


class Attention(_BaseDenseAttention):
    """scores = q k^T (times a learned scalar with use_scale), or with score_mode='concat'
    c * sum(tanh(q_i + k_j)) (the scale inside the tanh)."""

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Invalid value for argument score_mode. Expected one of {{'dot', 'concat'}}. "
                             f"Received: score_mode={score_mode}")
        self.use_scale, self.score_mode = use_scale, score_mode

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale") if self.use_scale else None
        self.concat_score_weight = (self.add_weight(shape=(), initializer="ones", name="concat_score_weight")
                                    if self.score_mode == "concat" else None)
        self.built = True

    def _scores(self, q, k):
        if self.score_mode == "dot":
            scores = _ops.matmul(q, k, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        s = _ops.expand_dims(q, -2) + _ops.expand_dims(k, -3)
        if self.scale is not None:
            s = self.scale * s
        return self.concat_score_weight * _ops.reduce_sum(_ops.tanh(s), axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update({"use_scale": self.use_scale, "score_mode": self.score_mode})
        return config


class AdditiveAttention(_BaseDenseAttention):
    """scores = sum over features of scale * tanh(q_i + k_j), scale a learned [dim] vector."""

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        super().__init__(dropout=dropout, **kwargs)
        self.use_scale = use_scale

    def build(self, input_shape):
        dim = input_shape[0][-1]
        self.scale = self.add_weight(shape=(dim,), initializer="glorot_uniform", name="scale") if self.use_scale \
            else None
        self.built = True

    def _scores(self, q, k):
        t = _ops.tanh(_ops.expand_dims(q, -2) + _ops.expand_dims(k, -3))
        return _ops.reduce_sum(self.scale * t if self.scale is not None else t, axis=-1)

    def get_config(self):
        config = super().get_config()
        config["use_scale"] = self.use_scale
        return config


def _einsum_shapes(equation, bias_axes, input_shape, output_shape):
    """(kernel shape, bias shape or None, full output shape) of an EinsumDense as Keras works them
    out: "ab,bc->ac" or with a leading "..." on the input and output."""
    plain = equation.replace("...", "0")
    m = re.fullmatch(r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", plain)
    left = False
    if m is None:
        m = re.fullmatch(r"0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)", plain)
        left = True
    if m is None:
        raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the form "
                         f"[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")
    in_spec, w_spec, out_spec = m.groups()
    elided = len(input_shape) - len(in_spec)
    out = [output_shape] if isinstance(output_shape, int) else list(output_shape)
    out.insert(0, input_shape[0])
    if left:
        for i in range(1, elided):
            out.insert(1, input_shape[i])
        in_pos = {c: i + elided - len(input_shape) for i, c in enumerate(in_spec)}
        out_pos = {c: i + elided for i, c in enumerate(out_spec)}
    else:
        in_pos = {c: i for i, c in enumerate(in_spec)}
        out_pos = {c: i for i, c in enumerate(out_spec)}
    for c in in_spec:
        if c in out_pos and out[out_pos[c]] is not None and out[out_pos[c]] != input_shape[in_pos[c]]:
            raise ValueError(f"Input shape and output shape do not match at shared dimension '{c}'. Input shape is "
                             f"{input_shape[in_pos[c]]}, and output shape is {out[out_pos[c]]}.")
    kernel = []
    for c in w_spec:
        if c in in_pos:
            kernel.append(input_shape[in_pos[c]])
        elif c in out_pos:
            kernel.append(out[out_pos[c]])
        else:
            raise ValueError(f"Weight dimension '{c}' did not have a match in either the input spec '{in_spec}' or "
                             f"the output spec '{out_spec}'. For this layer, the weight must be fully specified.")
    bias = None
    if bias_axes:
        for c in bias_axes:
            if c not in out_spec:
                raise ValueError(f"Bias dimension '{c}' was requested, but is not part of the output spec "
                                 f"'{out_spec}'")
        first = min(out_spec.find(c) for c in bias_axes)
        bias = [out[out_pos[c]] if c in bias_axes else 1 for c in out_spec[first:]]
        if not left:
            bias += [1] * elided
    return kernel, bias, out


class EinsumDense(Layer):
    """activation(einsum(equation, x, kernel) + bias), the kernel's and bias's shapes read from
    the equation, the input shape and output_shape (the output's dims after the batch)."""

    def __init__(self, equation, output_shape, activation=None, bias_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, lora_rank=None, lora_alpha=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if lora_rank:
            raise NotImplementedError("jitflow's EinsumDense does not implement LoRA (lora_rank) yet")
        self.equation, self.bias_axes = equation, bias_axes
        self.partial_output_shape = (output_shape,) if isinstance(output_shape, int) else tuple(output_shape)
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape):
        kernel, bias, out = _einsum_shapes(self.equation, self.bias_axes, tuple(input_shape),
                                           self.partial_output_shape)
        self.full_output_shape = tuple(out)
        self.kernel = self.add_weight(shape=kernel, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.bias = None if bias is None else self.add_weight(shape=bias, initializer=self.bias_initializer,
                                                              regularizer=self.bias_regularizer,
                                                              constraint=self.bias_constraint, name="bias")
        self.built = True

    def call(self, inputs):
        y = _einsum.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def get_config(self):
        config = super().get_config()
        config.update({"output_shape": self.partial_output_shape, "equation": self.equation,
                       "activation": activations.serialize(self.activation), "bias_axes": self.bias_axes,
                       "kernel_initializer": _serialize_initializer(self.kernel_initializer),
                       "bias_initializer": _serialize_initializer(self.bias_initializer),
                       "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                       "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                       "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                       "kernel_constraint": constraints.serialize(self.kernel_constraint),
                       "bias_constraint": constraints.serialize(self.bias_constraint)})
        return config
