"""Recurrent layers with Keras 3's weight layouts and call conventions: LSTMCell (one kernel
[input, 4 * units] with gates i, f, c, o; cell(x, [h, c]) -> (h, [h, c])), GRUCell (gates z, r,
h; reset_after=True with a [2, 3 * units] bias), RNN (a cell over time: a Python loop when the
sequence length is static, jf.while_loop over TensorArrays when it is not; both compile), LSTM
and GRU."""
from ...core import dtypes as _dt
from ...core.export import export
from ...core.shapes import TensorShape
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...tracing.control_flow import while_loop
from ...tracing.tensor_array import TensorArray
from .. import activations, initializers, regularizers
from .core import _serialize_initializer, seeded
from .layer import Layer


class _CellConfig:
    def _jf_cell_config(self):
        return {"units": self.units, "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation), "use_bias": self.use_bias,
                "kernel_initializer": _serialize_initializer(self.kernel_initializer),
                "recurrent_initializer": _serialize_initializer(self.recurrent_initializer),
                "bias_initializer": _serialize_initializer(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": None, "recurrent_constraint": None, "bias_constraint": None,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout, "seed": self.seed}


@export("nn.LSTMCell")
class LSTMCell(_CellConfig, Layer):
    """One LSTM step: z = x @ kernel + h @ recurrent_kernel + bias split into i, f, c, o;
    c' = f * c + i * tanh(c~), h' = o * tanh(c')."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(**kwargs)
        if units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a positive integer, got "
                             f"{units}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.recurrent_initializer = seeded(recurrent_initializer, None if seed is None else seed + 1)
        self.bias_initializer = initializers.get(bias_initializer)
        self.unit_forget_bias = unit_forget_bias
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.dropout, self.recurrent_dropout, self.seed = float(dropout), float(recurrent_dropout), seed
        if self.dropout or self.recurrent_dropout:
            raise NotImplementedError("jitflow's LSTMCell does not implement dropout/recurrent_dropout yet")
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, input_shape):
        u = self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], 4 * u), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(u, 4 * u), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer, name="recurrent_kernel")
        if self.use_bias:
            if self.unit_forget_bias:
                base = self.bias_initializer

                def bias_init(shape, dtype=None):
                    return _ops.concat([base((u,), dtype=dtype), _ops.ones([u], dtype),
                                        base((2 * u,), dtype=dtype)], 0)
                init = bias_init
            else:
                init = self.bias_initializer
            self.bias = self.add_weight(shape=(4 * u,), initializer=init, regularizer=self.bias_regularizer,
                                        name="bias")
        else:
            self.bias = None
        self.built = True

    def call(self, inputs, states, training=False):
        h_tm1, c_tm1 = states[0], states[1]
        z = _ops.matmul(inputs, self.kernel) + _ops.matmul(h_tm1, self.recurrent_kernel)
        if self.use_bias:
            z = z + self.bias
        z0, z1, z2, z3 = _ops.split(z, 4, axis=1)
        i = self.recurrent_activation(z0)
        f = self.recurrent_activation(z1)
        c = f * c_tm1 + i * self.activation(z2)
        o = self.recurrent_activation(z3)
        h = o * self.activation(c)
        return h, [h, c]

    def get_initial_state(self, batch_size=None, dtype=None):
        dt = dtype or self._jf_dtype
        return [_ops.zeros([batch_size, self.units], dt), _ops.zeros([batch_size, self.units], dt)]

    def get_config(self):
        config = super().get_config()
        config.update(self._jf_cell_config())
        config["unit_forget_bias"] = self.unit_forget_bias
        return config


class GRUCell(_CellConfig, Layer):
    """One GRU step with Keras 3's reset_after=True default: x @ kernel + bias[0] and
    h @ recurrent_kernel + bias[1] split into z, r, h~; h~ = tanh(x_h + r * h_h);
    h' = z * h + (1 - z) * h~."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 reset_after=True, seed=None, **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(**kwargs)
        if units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a positive integer, got "
                             f"{units}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.recurrent_initializer = seeded(recurrent_initializer, None if seed is None else seed + 1)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.dropout, self.recurrent_dropout, self.seed = float(dropout), float(recurrent_dropout), seed
        if self.dropout or self.recurrent_dropout:
            raise NotImplementedError("jitflow's GRUCell does not implement dropout/recurrent_dropout yet")
        self.reset_after = reset_after
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        u = self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], 3 * u), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(u, 3 * u), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer, name="recurrent_kernel")
        if self.use_bias:
            shape = (2, 3 * u) if self.reset_after else (3 * u,)
            self.bias = self.add_weight(shape=shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, name="bias")
        else:
            self.bias = None
        self.built = True

    def call(self, inputs, states, training=False):
        h_tm1 = states[0] if isinstance(states, (list, tuple)) else states
        u = self.units
        x = _ops.matmul(inputs, self.kernel)
        if self.use_bias:
            x = x + (self.bias[0] if self.reset_after else self.bias)
        x_z, x_r, x_h = _ops.split(x, 3, axis=-1)
        if self.reset_after:
            rec = _ops.matmul(h_tm1, self.recurrent_kernel)
            if self.use_bias:
                rec = rec + self.bias[1]
            r_z, r_r, r_h = _ops.split(rec, 3, axis=-1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + r * r_h)
        else:
            rk_zr, rk_h = self.recurrent_kernel[:, :2 * u], self.recurrent_kernel[:, 2 * u:]
            r_z, r_r = _ops.split(_ops.matmul(h_tm1, rk_zr), 2, axis=-1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + _ops.matmul(r * h_tm1, rk_h))
        h = z * h_tm1 + (1 - z) * hh
        return h, ([h] if isinstance(states, (list, tuple)) else h)

    def get_initial_state(self, batch_size=None, dtype=None):
        return [_ops.zeros([batch_size, self.units], dtype or self._jf_dtype)]

    def get_config(self):
        config = super().get_config()
        config.update(self._jf_cell_config())
        config["reset_after"] = self.reset_after
        return config


class SimpleRNNCell(_CellConfig, Layer):
    """h' = activation(x @ kernel + h @ recurrent_kernel + bias); cell(x, [h]) -> (h', [h'])."""

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a positive integer, got "
                             f"{units}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = None
        self.use_bias = use_bias
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.recurrent_initializer = seeded(recurrent_initializer, None if seed is None else seed + 1)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.dropout, self.recurrent_dropout, self.seed = float(dropout), float(recurrent_dropout), seed
        if self.dropout or self.recurrent_dropout:
            raise NotImplementedError("jitflow's SimpleRNNCell does not implement dropout/recurrent_dropout yet")
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        u = self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], u), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(u, u), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer, name="recurrent_kernel")
        self.bias = self.add_weight(shape=(u,), initializer=self.bias_initializer, regularizer=self.bias_regularizer,
                                    name="bias") if self.use_bias else None

    def call(self, inputs, states, training=False):
        prev = states[0] if isinstance(states, (list, tuple)) else states
        h = _ops.matmul(inputs, self.kernel) + _ops.matmul(prev, self.recurrent_kernel)
        if self.use_bias:
            h = h + self.bias
        h = self.activation(h)
        return h, ([h] if isinstance(states, (list, tuple)) else h)

    def get_initial_state(self, batch_size=None, dtype=None):
        return [_ops.zeros([batch_size, self.units], dtype or self._jf_dtype)]

    def get_config(self):
        config = super().get_config()
        config.update(self._jf_cell_config())
        config.pop("recurrent_activation")
        return config


class RNN(Layer):
    """Runs `cell` over the time axis of [batch, time, features] inputs."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            raise NotImplementedError("jitflow's RNN takes one cell (stacked cells are not implemented yet)")
        if stateful:
            raise NotImplementedError("jitflow's RNN does not implement stateful=True yet")
        self.cell = cell
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards, self.stateful, self.unroll = go_backwards, stateful, unroll
        self.zero_output_for_mask = zero_output_for_mask

    def build(self, sequences_shape, initial_state_shape=None):
        if not self.cell.built:
            self.cell.build_from_config({"input_shape": (sequences_shape[0], *sequences_shape[2:])})
        self.built = True

    def get_initial_state(self, batch_size):
        if hasattr(self.cell, "get_initial_state"):
            return self.cell.get_initial_state(batch_size=batch_size, dtype=self._jf_dtype)
        sizes = self.cell.state_size if isinstance(self.cell.state_size, (list, tuple)) else [self.cell.state_size]
        return [_ops.zeros([batch_size, s], self._jf_dtype) for s in sizes]

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            n = len(self.cell.state_size) if isinstance(self.cell.state_size, (list, tuple)) else 1
            return [output_mask] + [None] * n
        return output_mask

    def call(self, sequences, initial_state=None, mask=None, training=False):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        batch = sequences.shape[0] if sequences.shape[0] is not None else _ops.shape(sequences)[0]
        states = list(initial_state) if initial_state is not None else self.get_initial_state(batch)
        if not isinstance(initial_state, (list, tuple)) and initial_state is not None:
            states = [initial_state]
        nested = isinstance(self.cell.state_size, (list, tuple))
        steps = sequences.shape[1]
        perm = [1, 0, *range(2, len(sequences.shape))]
        time_major = _ops.transpose(sequences, perm)
        if self.go_backwards:
            time_major = _array.reverse(time_major, [0])

        mask_tm = None
        if mask is not None:
            mask_tm = _ops.transpose(_ops.cast(mask, _dt.bool), [1, 0])
            if self.go_backwards:
                mask_tm = _array.reverse(mask_tm, [0])

        def step(x, states):
            out, new = self.cell(x, states if nested else states[0], training=training)
            return out, (list(new) if isinstance(new, (list, tuple)) else [new])

        def masked(keep, out, new, prev_out, old):
            """A masked step keeps the states and repeats the last output (zeros with
            zero_output_for_mask), as Keras's rnn does."""
            keep = _ops.expand_dims(keep, -1)
            new = [_ops.where(keep, n, o) for n, o in zip(new, old)]
            fill = _ops.zeros_like(out) if self.zero_output_for_mask else prev_out
            return _ops.where(keep, out, fill), new

        if steps is not None:
            outputs = []
            for t in range(steps):
                out, new = step(time_major[t], states)
                if mask_tm is not None:
                    out, new = masked(mask_tm[t], out, new, outputs[-1] if outputs else _ops.zeros_like(out), states)
                states = new
                outputs.append(out)
            last = outputs[-1]
            seq = _ops.stack(outputs, axis=1) if self.return_sequences else None
        else:
            n = _ops.shape(time_major)[0]
            inputs_ta = TensorArray(sequences.dtype, size=n).unstack(time_major)
            first_out, _ = step(inputs_ta.read(0), states)  # the output's shape and dtype (the cell is built)
            units = first_out.shape[-1]
            # The outputs grow by concatenation (a traced TensorArray written in a loop cannot
            # take elements whose batch dim is unknown yet).
            acc = _ops.zeros([0, _ops.shape(first_out)[0], units], first_out.dtype)

            def cond(t, *_):
                return t < n

            mask_ta = TensorArray(_dt.bool, size=n).unstack(mask_tm) if mask_tm is not None else None

            def body(t, acc, last, *states):
                out, new = step(inputs_ta.read(t), list(states))
                if mask_ta is not None:
                    out, new = masked(mask_ta.read(t), out, new, last, list(states))
                if self.return_sequences:
                    acc = _ops.concat([acc, _ops.expand_dims(out, 0)], 0)
                return (t + 1, acc, out, *new)

            invariants = (TensorShape([]), TensorShape([None, None, units]), TensorShape([None, units]),
                          *[TensorShape([None, *s.shape[1:]]) for s in states])
            res = while_loop(cond, body, (_ops.constant(0), acc, _ops.zeros_like(first_out), *states),
                             shape_invariants=invariants)
            last, states = res[2], list(res[3:])
            seq = _ops.transpose(res[1], [1, 0, 2]) if self.return_sequences else None
        output = seq if self.return_sequences else last
        if self.return_state:
            return [output, *states]
        return output

    @property
    def states(self):
        return None

    def get_config(self):
        config = super().get_config()
        config.update({"return_sequences": self.return_sequences, "return_state": self.return_state,
                       "go_backwards": self.go_backwards, "stateful": self.stateful, "unroll": self.unroll,
                       "zero_output_for_mask": self.zero_output_for_mask})
        if type(self) is RNN:
            config["cell"] = {"module": "keras.layers", "class_name": type(self.cell).__name__,
                              "config": self.cell.get_config(), "registered_name": None}
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cell = config.pop("cell")
        cells = {"LSTMCell": LSTMCell, "GRUCell": GRUCell, "SimpleRNNCell": SimpleRNNCell}
        if cell["class_name"] not in cells:
            raise TypeError(f"Could not locate class '{cell['class_name']}' for the RNN's cell")
        return cls(cells[cell["class_name"]].from_config(cell["config"]), **config)


class _OneCellRNN(RNN):
    """LSTM, GRU and SimpleRNN: an RNN over the one cell their constructor builds, whose config is
    the cell's arguments beside the RNN's (Keras 3's flat config)."""

    @property
    def units(self):
        return self.cell.units

    _CELL_KEYS_NOT_IN_CONFIG = ("name", "trainable", "dtype")

    def get_config(self):
        config = super().get_config()
        cell = self.cell.get_config()
        for k in self._CELL_KEYS_NOT_IN_CONFIG:
            cell.pop(k)
        config.update(cell)
        config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class LSTM(_OneCellRNN):
    """RNN(LSTMCell(units, ...)): weights under <lstm>/lstm_cell/."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, use_cudnn="auto", **kwargs):
        cell = LSTMCell(units, activation=activation, recurrent_activation=recurrent_activation, use_bias=use_bias,
                        kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
                        bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
                        kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                        bias_regularizer=bias_regularizer, dropout=dropout, recurrent_dropout=recurrent_dropout,
                        seed=seed, dtype=kwargs.get("dtype"), name="lstm_cell", trainable=kwargs.get("trainable", True))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         activity_regularizer=activity_regularizer, **kwargs)


class GRU(_OneCellRNN):
    """RNN(GRUCell(units, ...)): weights under <gru>/gru_cell/."""

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, reset_after=True, use_cudnn="auto", **kwargs):
        cell = GRUCell(units, activation=activation, recurrent_activation=recurrent_activation, use_bias=use_bias,
                       kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
                       bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                       recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
                       dropout=dropout, recurrent_dropout=recurrent_dropout, reset_after=reset_after, seed=seed,
                       dtype=kwargs.get("dtype"), name="gru_cell", trainable=kwargs.get("trainable", True))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         activity_regularizer=activity_regularizer, **kwargs)


class SimpleRNN(_OneCellRNN):
    """RNN(SimpleRNNCell(units, ...)): weights under <simple_rnn>/simple_rnn_cell/."""

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False, unroll=False,
                 seed=None, **kwargs):
        cell = SimpleRNNCell(units, activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
                             recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
                             kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                             bias_regularizer=bias_regularizer, dropout=dropout, recurrent_dropout=recurrent_dropout,
                             seed=seed, dtype=kwargs.get("dtype"), name="simple_rnn_cell",
                             trainable=kwargs.get("trainable", True))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         activity_regularizer=activity_regularizer, **kwargs)

    _CELL_KEYS_NOT_IN_CONFIG = ("name", "trainable", "dtype", "seed")
