"""Keras 3's ConvLSTM2D: an LSTM whose gates are convolutions, over [batch, time, rows, cols,
channels] (channels_last). Each step: z = conv(x, kernel) + conv(h, recurrent_kernel, 'same')
+ bias, split into the gates i, f, c, o (Keras's order); c' = f c + i tanh(c~), h' = o tanh(c')."""
from ... import _C
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops.conv_ops import conv2d
from ...tracing.control_flow import while_loop
from ...tracing.tensor_array import TensorArray
from .. import activations, initializers, regularizers
from .layer import Layer


def _pair(v):
    return (int(v), int(v)) if isinstance(v, int) else tuple(int(x) for x in v)


class ConvLSTM2D(Layer):
    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if data_format not in (None, "channels_last"):
            raise NotImplementedError("jitflow's ConvLSTM2D takes channels_last inputs")
        if dropout or recurrent_dropout or stateful:
            raise NotImplementedError("jitflow's ConvLSTM2D does not implement dropout, recurrent_dropout or "
                                      "stateful yet")
        self.filters, self.kernel_size = int(filters), _pair(kernel_size)
        self.strides, self.dilation_rate = _pair(strides), _pair(dilation_rate)
        self.padding = padding.lower()
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias, self.unit_forget_bias = use_bias, unit_forget_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards

    def build(self, input_shape):
        channels, f = input_shape[-1], self.filters
        self.kernel = self.add_weight(shape=(*self.kernel_size, channels, 4 * f), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(*self.kernel_size, f, 4 * f),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer, name="recurrent_kernel")
        if self.use_bias:
            base = self.bias_initializer

            def forget_ones(shape, dtype=None):
                return _ops.concat([base((f,), dtype=dtype), _ops.ones([f], dtype), base((2 * f,), dtype=dtype)], 0)
            self.bias = self.add_weight(shape=(4 * f,), initializer=forget_ones if self.unit_forget_bias else base,
                                        regularizer=self.bias_regularizer, name="bias")
        else:
            self.bias = None
        self.built = True

    def _input_conv(self, x):
        z = conv2d(x, self.kernel, strides=[1, *self.strides, 1], padding=self.padding.upper(),
                   dilations=[1, *self.dilation_rate, 1])
        return z + self.bias if self.use_bias else z

    def _step(self, z_x, h, c):
        z = z_x + conv2d(h, self.recurrent_kernel, strides=[1, 1, 1, 1], padding="SAME")
        zi, zf, zc, zo = _ops.split(z, 4, axis=-1)
        i, f, o = self.recurrent_activation(zi), self.recurrent_activation(zf), self.recurrent_activation(zo)
        c = f * c + i * self.activation(zc)
        return o * self.activation(c), c

    def call(self, inputs, initial_state=None, training=False):
        x = _ops.cast(inputs, self._jf_dtype)
        frames = _ops.transpose(x, [1, 0, 2, 3, 4])  # [time, batch, rows, cols, channels]
        if self.go_backwards:
            frames = _array.reverse(frames, [0])
        steps = x.shape[1]
        if initial_state is None:
            zero = _ops.zeros_like(self._input_conv(frames[0])[..., :self.filters])
            h, c = zero, zero
        else:
            h, c = initial_state
        if steps is not None and (not _C.is_tracing() or steps <= 32):  # unrolled; else a loop
            outputs = []
            for t in range(steps):
                h, c = self._step(self._input_conv(frames[t]), h, c)
                outputs.append(h)
            seq = _ops.stack(outputs, axis=1) if self.return_sequences else None
        else:
            n = _ops.shape(frames)[0]
            inputs_ta = TensorArray(frames.dtype, size=n).unstack(frames)
            outs = TensorArray(h.dtype, size=n)

            def body(t, h, c, outs):
                h, c = self._step(self._input_conv(inputs_ta.read(t)), h, c)
                return t + 1, h, c, outs.write(t, h)
            _, h, c, outs = while_loop(lambda t, *_: t < n, body, (_ops.constant(0), h, c, outs))
            seq = _ops.transpose(outs.stack(), [1, 0, 2, 3, 4]) if self.return_sequences else None
        out = seq if self.return_sequences else h
        return [out, h, c] if self.return_state else out

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
                       "padding": self.padding, "dilation_rate": self.dilation_rate,
                       "activation": activations.serialize(self.activation),
                       "recurrent_activation": activations.serialize(self.recurrent_activation),
                       "use_bias": self.use_bias, "unit_forget_bias": self.unit_forget_bias,
                       "return_sequences": self.return_sequences, "return_state": self.return_state,
                       "go_backwards": self.go_backwards})
        return config

