"""MultiHeadAttention with Keras 3's weights (query/key/value kernels [dim, heads, key_dim] with
[heads, key_dim] biases, attention_output [heads, value_dim, dim]) and call signature, built on
matmul, transpose and softmax (einsum is not available): scores = softmax(q k^T / sqrt(key_dim)),
masked by attention_mask and use_causal_mask, dropped out in training."""
import math

from ...core import dtypes as _dt
from ...ops import basic_ops as _ops
from ...ops import nn_ops as _nn
from .. import constraints, initializers, regularizers
from .core import SeedState, _serialize_initializer, stateless_dropout
from .layer import Layer, get_mask


class _HeadsDense(Layer):
    """x [..., dim] -> [..., heads, size] (or, as the output projection, [..., heads, size] ->
    [..., out]) with Keras's EinsumDense weight shapes."""

    supports_masking = True  # the attention layer handles the masks

    def __init__(self, heads, size, out_dim=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.heads, self.size, self.out_dim, self.use_bias = heads, size, out_dim, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape):
        if self.out_dim is None:
            kshape, bshape = (input_shape[-1], self.heads, self.size), (self.heads, self.size)
        else:
            kshape, bshape = (self.heads, self.size, self.out_dim), (self.out_dim,)
        self.kernel = self.add_weight(shape=kshape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.bias = self.add_weight(shape=bshape, initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None
        self.built = True

    def call(self, x):
        k = self.kernel
        lead = [d if d is not None else _ops.shape(x)[i] for i, d in enumerate(x.shape[:-1 if self.out_dim is None
                                                                                      else -2])]
        if self.out_dim is None:
            y = _ops.matmul(_ops.reshape(x, [-1, k.shape[0]]), _ops.reshape(k, [k.shape[0], -1]))
            y = _ops.reshape(y, [*lead, self.heads, self.size])
        else:
            y = _ops.matmul(_ops.reshape(x, [-1, self.heads * self.size]), _ops.reshape(k, [-1, self.out_dim]))
            y = _ops.reshape(y, [*lead, self.out_dim])
        return y + self.bias if self.use_bias else y


class MultiHeadAttention(Layer):
    supports_masking = True  # the output keeps the query's mask

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 attention_axes=None, flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, seed=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if attention_axes is not None:
            raise NotImplementedError("jitflow's MultiHeadAttention attends over the sequence axis only "
                                      "(attention_axes is not implemented yet)")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim else self.key_dim
        self.dropout, self.use_bias, self.seed = float(dropout), use_bias, seed
        self._jf_seed_state = SeedState(seed)
        self._output_shape = output_shape
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.bias_constraint = constraints.get(bias_constraint)

    def _dense(self, size, name, out_dim=None):
        return _HeadsDense(self.num_heads, size, out_dim, self.use_bias, self.kernel_initializer,
                           self.bias_initializer, self.kernel_regularizer, self.bias_regularizer,
                           kernel_constraint=self.kernel_constraint, bias_constraint=self.bias_constraint, name=name,
                           dtype=self._jf_dtype)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        out = self._output_shape
        out_dim = query_shape[-1] if out is None else (out if isinstance(out, int) else out[-1])
        self._query_dense = self._dense(self.key_dim, "query")
        self._key_dense = self._dense(self.key_dim, "key")
        self._value_dense = self._dense(self.value_dim, "value")
        self._output_dense = self._dense(self.value_dim, "attention_output", out_dim)
        self._query_dense.build_from_config({"input_shape": tuple(query_shape)})
        self._key_dense.build_from_config({"input_shape": tuple(key_shape)})
        self._value_dense.build_from_config({"input_shape": tuple(value_shape)})
        self._output_dense.build_from_config(
            {"input_shape": (*tuple(query_shape)[:-1], self.num_heads, self.value_dim)})
        self.built = True

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None, use_causal_mask=False):
        # Keras masks on the inputs (Embedding(mask_zero=True) upstream) join attention_mask:
        # [B, T, 1] for the query, [B, 1, S] for the value and a key other than the value.
        query_mask = get_mask(query) if query_mask is None else query_mask
        value_mask = get_mask(value) if value_mask is None else value_mask
        if key is not None and key is not value and key_mask is None:
            key_mask = get_mask(key)
        key = value if key is None else key
        auto = None
        if query_mask is not None:
            auto = _ops.expand_dims(_ops.cast(query_mask, _dt.bool), -1)
        for m in (value_mask, key_mask):
            if m is not None:
                m = _ops.expand_dims(_ops.cast(m, _dt.bool), -2)
                auto = m if auto is None else _ops.logical_and(auto, m)
        if auto is not None:
            attention_mask = auto if attention_mask is None else _ops.logical_and(
                _ops.cast(attention_mask, _dt.bool), auto)
        q = _ops.transpose(self._query_dense(query), [0, 2, 1, 3])  # [B, H, T, D]
        k = _ops.transpose(self._key_dense(key), [0, 2, 1, 3])  # [B, H, S, D]
        v = _ops.transpose(self._value_dense(value), [0, 2, 1, 3])  # [B, H, S, Dv]
        q = q * _ops.convert_to_tensor(1.0 / math.sqrt(self.key_dim), q.dtype)
        scores = _ops.matmul(q, k, transpose_b=True)  # [B, H, T, S]
        mask = None
        if attention_mask is not None:
            mask = _ops.cast(attention_mask, _dt.bool)
        if use_causal_mask:
            t, s = _ops.shape(scores)[2], _ops.shape(scores)[3]
            causal = _ops.range(t)[:, None] >= _ops.range(s)[None, :]
            mask = causal if mask is None else _ops.logical_and(mask, causal)
        if mask is not None:
            if len(mask.shape) == 3:
                mask = _ops.expand_dims(mask, 1)
            # Keras's masked softmax: masked scores become -1e9 and their probabilities 0 (a
            # row masked everywhere gives zeros, not a uniform distribution).
            mask = _ops.logical_and(mask, _ops.ones_like(scores, dtype=_dt.bool))
            scores = _ops.where(mask, scores, _ops.convert_to_tensor(-1e9, scores.dtype))
            probs = _ops.where(mask, _nn.softmax(scores, axis=-1), _ops.zeros([], scores.dtype))
        else:
            probs = _nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            probs_used = stateless_dropout(probs, self.dropout, self._jf_seed_state)
        else:
            probs_used = probs
        context = _ops.transpose(_ops.matmul(probs_used, v), [0, 2, 1, 3])  # [B, T, H, Dv]
        out = self._output_dense(context)
        return (out, probs) if return_attention_scores else out

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads, "key_dim": self.key_dim, "value_dim": self.value_dim,
                       "dropout": self.dropout, "use_bias": self.use_bias, "output_shape": self._output_shape,
                       "attention_axes": None, "kernel_initializer": _serialize_initializer(self.kernel_initializer),
                       "bias_initializer": _serialize_initializer(self.bias_initializer),
                       "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                       "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                       "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                       "kernel_constraint": constraints.serialize(self.kernel_constraint),
                       "bias_constraint": constraints.serialize(self.bias_constraint), "seed": self.seed})
        return config
