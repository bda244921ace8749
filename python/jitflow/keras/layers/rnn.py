"""Recurrent layers with Keras 3's weight layouts and call conventions: LSTMCell (one kernel
[input, 4 * units] with gates i, f, c, o; cell(x, [h, c]) -> (h, [h, c])), GRUCell (gates z, r,
h; reset_after=True with a [2, 3 * units] bias), RNN (a cell over time: a Python loop when the
sequence length is static, jf.while_loop over TensorArrays when it is not; both compile), LSTM
and GRU."""
from ... import _C
from ...core import dtypes as _dt
from ...core import nest
from ...core.export import export
from ...core.shapes import TensorShape
from ...ops import array_ops as _array
from ...ops import basic_ops as _ops
from ...ops.variables import Variable
from ...tracing.control_flow import while_loop
from ...tracing.tensor_array import TensorArray
from .. import activations, constraints, initializers, regularizers
from .core import SeedState, _serialize_initializer, seeded, stateless_dropout
from .layer import Layer


class _RecurrentCell(Layer):
    """What LSTMCell, GRUCell and SimpleRNNCell share: Keras 3's constructor arguments and config,
    and dropout masks as Keras's DropoutRNNCell draws them: once per sequence (the RNN draws
    them before its loop, so every step multiplies by the same mask), one per gate when
    recurrent_dropout is set, and only in training."""

    _GATES = 1

    def __init__(self, units, activation, recurrent_activation, use_bias, kernel_initializer, recurrent_initializer,
                 bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer, dropout,
                 recurrent_dropout, seed, kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(**kwargs)
        if units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a positive integer, got "
                             f"{units}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = None if recurrent_activation is None else activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.kernel_initializer = seeded(kernel_initializer, seed)
        self.recurrent_initializer = seeded(recurrent_initializer, None if seed is None else seed + 1)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self.seed = seed
        # Keras switches to one mask per gate (its implementation 1) when recurrent dropout is on.
        self.dropout_mask_count = self._GATES if self.recurrent_dropout and self._GATES > 1 else None
        self._jf_seed_state = SeedState(seed) if self.dropout or self.recurrent_dropout else None
        self._dropout_mask = self._recurrent_dropout_mask = None

    def _draw_mask(self, like, rate):
        if not 0.0 < rate < 1.0:
            return None
        ones = _ops.ones_like(like)
        if self.dropout_mask_count is None:
            return stateless_dropout(ones, rate, self._jf_seed_state)
        return [stateless_dropout(ones, rate, self._jf_seed_state) for _ in range(self.dropout_mask_count)]

    def get_dropout_mask(self, step_input):
        if self._dropout_mask is None:
            self._dropout_mask = self._draw_mask(step_input, self.dropout)
        return self._dropout_mask

    def get_recurrent_dropout_mask(self, step_input):
        if self._recurrent_dropout_mask is None:
            self._recurrent_dropout_mask = self._draw_mask(step_input, self.recurrent_dropout)
        return self._recurrent_dropout_mask

    def reset_dropout_mask(self):
        self._dropout_mask = None

    def reset_recurrent_dropout_mask(self):
        self._recurrent_dropout_mask = None

    def _step_masks(self, inputs, h_tm1, training):
        """The (input, recurrent) masks of this step: the ones the RNN drew for the sequence, or, for
        a cell called on its own, fresh ones that are not kept (a kept mask would outlive the
        function trace that drew it)."""
        if not training:
            return None, None
        dp = self._dropout_mask if self._dropout_mask is not None else self._draw_mask(inputs, self.dropout)
        rdp = (self._recurrent_dropout_mask if self._recurrent_dropout_mask is not None
               else self._draw_mask(h_tm1, self.recurrent_dropout))
        return dp, rdp

    def _gate_inputs(self, x, mask):
        """x once per gate, times that gate's mask where there is one."""
        if mask is None:
            return [x] * self._GATES
        return [x * m for m in mask] if isinstance(mask, list) else [x * mask] * self._GATES

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": activations.serialize(self.activation),
            "recurrent_activation": activations.serialize(self.recurrent_activation), "use_bias": self.use_bias,
            "kernel_initializer": _serialize_initializer(self.kernel_initializer),
            "recurrent_initializer": _serialize_initializer(self.recurrent_initializer),
            "bias_initializer": _serialize_initializer(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout, "seed": self.seed})
        return config


def _matmul_gates(xs, kernel):
    """sum over gates of xs[g] @ kernel[:, g-th block], concatenated: one matmul when xs are one tensor."""
    if all(x is xs[0] for x in xs):
        return _ops.matmul(xs[0], kernel)
    blocks = _ops.split(kernel, len(xs), axis=1)
    return _ops.concat([_ops.matmul(x, k) for x, k in zip(xs, blocks)], axis=-1)


@export("nn.LSTMCell")
class LSTMCell(_RecurrentCell):
    """One LSTM step: z = x @ kernel + h @ recurrent_kernel + bias split into i, f, c, o;
    c' = f * c + i * tanh(c~), h' = o * tanh(c')."""

    _GATES = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, kernel_regularizer, recurrent_regularizer,
                         bias_regularizer, dropout, recurrent_dropout, seed, kernel_constraint, recurrent_constraint,
                         bias_constraint, **kwargs)
        self.unit_forget_bias = unit_forget_bias
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, input_shape):
        u = self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], 4 * u), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(u, 4 * u), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, name="recurrent_kernel")
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
                                        constraint=self.bias_constraint,
                                        name="bias")
        else:
            self.bias = None
        self.built = True

    def call(self, inputs, states, training=False):
        h_tm1, c_tm1 = states[0], states[1]
        dp, rdp = self._step_masks(inputs, h_tm1, training)
        z = (_matmul_gates(self._gate_inputs(inputs, dp), self.kernel)
             + _matmul_gates(self._gate_inputs(h_tm1, rdp), self.recurrent_kernel))
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
        config["unit_forget_bias"] = self.unit_forget_bias
        return config


class GRUCell(_RecurrentCell):
    """One GRU step with Keras 3's reset_after=True default: x @ kernel + bias[0] and
    h @ recurrent_kernel + bias[1] split into z, r, h~; h~ = tanh(x_h + r * h_h);
    h' = z * h + (1 - z) * h~."""

    _GATES = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 reset_after=True, seed=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, kernel_regularizer, recurrent_regularizer,
                         bias_regularizer, dropout, recurrent_dropout, seed, kernel_constraint, recurrent_constraint,
                         bias_constraint, **kwargs)
        self.reset_after = reset_after
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        u = self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], 3 * u), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(u, 3 * u), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, name="recurrent_kernel")
        if self.use_bias:
            shape = (2, 3 * u) if self.reset_after else (3 * u,)
            self.bias = self.add_weight(shape=shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint, name="bias")
        else:
            self.bias = None
        self.built = True

    def call(self, inputs, states, training=False):
        h_tm1 = states[0] if isinstance(states, (list, tuple)) else states
        u = self.units
        dp, rdp = self._step_masks(inputs, h_tm1, training)
        x = _matmul_gates(self._gate_inputs(inputs, dp), self.kernel)
        if self.use_bias:
            x = x + (self.bias[0] if self.reset_after else self.bias)
        x_z, x_r, x_h = _ops.split(x, 3, axis=-1)
        h_z, h_r, h_h = self._gate_inputs(h_tm1, rdp)
        if self.reset_after:
            rec = _matmul_gates([h_z, h_r, h_h], self.recurrent_kernel)
            if self.use_bias:
                rec = rec + self.bias[1]
            r_z, r_r, r_h = _ops.split(rec, 3, axis=-1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + r * r_h)
        else:
            rk_zr, rk_h = self.recurrent_kernel[:, :2 * u], self.recurrent_kernel[:, 2 * u:]
            r_z, r_r = _ops.split(_matmul_gates([h_z, h_r], rk_zr), 2, axis=-1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + _ops.matmul(r * h_h, rk_h))
        h = z * h_tm1 + (1 - z) * hh
        return h, ([h] if isinstance(states, (list, tuple)) else h)

    def get_initial_state(self, batch_size=None, dtype=None):
        return [_ops.zeros([batch_size, self.units], dtype or self._jf_dtype)]

    def get_config(self):
        config = super().get_config()
        config["reset_after"] = self.reset_after
        return config


class SimpleRNNCell(_RecurrentCell):
    """h' = activation(x @ kernel + h @ recurrent_kernel + bias); cell(x, [h]) -> (h', [h'])."""

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(units, activation, None, use_bias, kernel_initializer, recurrent_initializer,
                         bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer, dropout,
                         recurrent_dropout, seed, kernel_constraint, recurrent_constraint, bias_constraint, **kwargs)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        u = self.units
        self.kernel = self.add_weight(shape=(input_shape[-1], u), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(u, u), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, name="recurrent_kernel")
        self.bias = self.add_weight(shape=(u,), initializer=self.bias_initializer, regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None

    def call(self, inputs, states, training=False):
        prev = states[0] if isinstance(states, (list, tuple)) else states
        dp, rdp = self._step_masks(inputs, prev, training)
        if dp is not None:
            inputs = inputs * dp
        if rdp is not None:
            prev = prev * rdp
        h = _ops.matmul(inputs, self.kernel) + _ops.matmul(prev, self.recurrent_kernel)
        if self.use_bias:
            h = h + self.bias
        h = self.activation(h)
        return h, ([h] if isinstance(states, (list, tuple)) else h)

    def get_initial_state(self, batch_size=None, dtype=None):
        return [_ops.zeros([batch_size, self.units], dtype or self._jf_dtype)]

    def get_config(self):
        config = super().get_config()
        config.pop("recurrent_activation")
        return config


class StackedRNNCells(Layer):
    """Cells run one after another within a time step: each cell's output is the next one's input;
    the state is the list of the cells' states (Keras 3's StackedRNNCells)."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        for cell in cells:
            if not hasattr(cell, "call"):
                raise ValueError(f"All cells must have a `call` method. Received cell without a `call` method: "
                                 f"{cell}")
            if not hasattr(cell, "state_size"):
                raise ValueError(f"All cells must have a `state_size` attribute. Received cell without a "
                                 f"`state_size`: {cell}")
        self.cells = list(cells)

    @property
    def state_size(self):
        return [c.state_size for c in self.cells]

    @property
    def output_size(self):
        last = self.cells[-1]
        if getattr(last, "output_size", None) is not None:
            return last.output_size
        return last.state_size[0] if isinstance(last.state_size, (list, tuple)) else last.state_size

    def get_initial_state(self, batch_size=None, dtype=None):
        return [_cell_initial_state(c, batch_size, dtype or self._jf_dtype) for c in self.cells]

    def build(self, input_shape):
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                cell.build_from_config({"input_shape": tuple(input_shape)})
            out = getattr(cell, "output_size", None)
            if out is None:
                out = cell.state_size[0] if isinstance(cell.state_size, (list, tuple)) else cell.state_size
            input_shape = (input_shape[0], out)
        self.built = True

    def call(self, inputs, states, training=False):
        new_states = []
        for cell, state in zip(self.cells, states):
            was_list = isinstance(state, (list, tuple))
            state = list(state) if was_list else [state]
            inputs, state = cell(inputs, state, training=training)
            state = list(state) if isinstance(state, (list, tuple)) else [state]
            new_states.append(state[0] if len(state) == 1 and not was_list else state)
        return inputs, (new_states[0] if len(new_states) == 1 else new_states)

    def get_config(self):
        config = super().get_config()
        config["cells"] = [_serialize_cell(c) for c in self.cells]
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        return cls([_deserialize_cell(c) for c in config.pop("cells")], **config)


def _cell_initial_state(cell, batch_size, dtype):
    if hasattr(cell, "get_initial_state"):
        return cell.get_initial_state(batch_size=batch_size, dtype=dtype)
    if isinstance(cell.state_size, (list, tuple)):
        return [_ops.zeros([batch_size, s], dtype) for s in cell.state_size]
    return _ops.zeros([batch_size, cell.state_size], dtype)


_CELLS = {"LSTMCell": LSTMCell, "GRUCell": GRUCell, "SimpleRNNCell": SimpleRNNCell,
          "StackedRNNCells": StackedRNNCells}


def _serialize_cell(cell):
    return {"module": "keras.layers", "class_name": type(cell).__name__, "config": cell.get_config(),
            "registered_name": None}


def _deserialize_cell(cell):
    if cell["class_name"] not in _CELLS:
        raise TypeError(f"Could not locate class '{cell['class_name']}' for the RNN's cell")
    return _CELLS[cell["class_name"]].from_config(cell["config"])


def _prime_dropout_masks(cell, step_input, states):
    """Draws every cell's masks for this sequence before the loop, so each step reuses them and a
    traced loop body captures them instead of drawing its own (Keras's _maybe_config_dropout_masks)."""
    if isinstance(cell, StackedRNNCells):
        for c, s in zip(cell.cells, states):
            _prime_dropout_masks(c, step_input, s)
            s = list(s) if isinstance(s, (list, tuple)) else [s]
            step_input, _ = c(step_input, s)
    elif isinstance(cell, _RecurrentCell):
        cell.get_dropout_mask(step_input)
        cell.get_recurrent_dropout_mask(states[0] if isinstance(states, (list, tuple)) else states)


def _has_dropout(cell):
    if isinstance(cell, StackedRNNCells):
        return any(_has_dropout(c) for c in cell.cells)
    return bool(getattr(cell, "dropout", 0) or getattr(cell, "recurrent_dropout", 0))


def _reset_dropout_masks(cell):
    if isinstance(cell, StackedRNNCells):
        for c in cell.cells:
            _reset_dropout_masks(c)
    elif isinstance(cell, _RecurrentCell):
        cell.reset_dropout_mask()
        cell.reset_recurrent_dropout_mask()


class RNN(Layer):
    """Runs `cell` (or a list of cells, stacked) over the time axis of [batch, time, features]
    inputs. The cell gets its state as a list, as in Keras; with stateful=True the last state of a
    batch is kept in non-trainable variables and starts the next batch."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            # The stack takes the RNN's dtype, so it does not cast the steps between the cells.
            cell = StackedRNNCells(cell, dtype=kwargs.get("dtype"))
        if getattr(cell, "state_size", None) is None:
            raise ValueError("state_size must be specified as property on the RNN cell.")
        self.cell = cell
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards, self.stateful, self.unroll = go_backwards, stateful, unroll
        self.zero_output_for_mask = zero_output_for_mask
        self._jf_states = None

    def build(self, sequences_shape, initial_state_shape=None):
        if not self.cell.built:
            self.cell.build_from_config({"input_shape": (sequences_shape[0], *sequences_shape[2:])})
        if self.stateful and self._jf_states is None:
            if sequences_shape[0] is None:
                raise ValueError(f"When using `stateful=True` in a RNN, the batch size must be static. Found dynamic "
                                 f"batch size: sequence.shape={tuple(sequences_shape)}")
            with _C.init_scope():
                self._jf_states = nest.map_structure(
                    lambda v: Variable(v, trainable=False, name="rnn_state"),
                    self.get_initial_state(sequences_shape[0]))
        self.built = True

    def get_initial_state(self, batch_size):
        state = _cell_initial_state(self.cell, batch_size, self._jf_dtype)
        return list(state) if isinstance(state, (list, tuple)) else [state]

    def reset_state(self):
        for v in nest.flatten(self._jf_states or []):
            v.assign(_ops.zeros_like(v))

    reset_states = reset_state

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
        if self.stateful and initial_state is None:
            batch = sequences.shape[0]
            want = nest.flatten(self._jf_states)[0].shape[0]
            if batch is not None and batch != want:
                raise ValueError(f"If an RNN is stateful, the batch size of the input sequences must be the same "
                                 f"as the batch size of the initial state. \n- Expected batch size: {want}\n- "
                                 f"Received batch size: {batch}")
            initial_state = nest.map_structure(lambda v: v.read_value(), self._jf_states)
        if initial_state is None:
            batch = sequences.shape[0] if sequences.shape[0] is not None else _ops.shape(sequences)[0]
            initial_state = self.get_initial_state(batch)
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        perm = [1, 0, *range(2, len(sequences.shape))]
        time_major = _ops.transpose(sequences, perm)
        if self.go_backwards:
            time_major = _array.reverse(time_major, [0])
        mask_tm = None
        if mask is not None:
            mask_tm = _ops.transpose(_ops.cast(mask, _dt.bool), [1, 0])
            if self.go_backwards:
                mask_tm = _array.reverse(mask_tm, [0])
        if training and _has_dropout(self.cell):
            _prime_dropout_masks(self.cell, time_major[0], states)
        try:
            output, states = self._loop(time_major, states, mask_tm, sequences.shape[1], training)
        finally:
            _reset_dropout_masks(self.cell)
        if self.stateful:
            for var, value in zip(nest.flatten(self._jf_states), nest.flatten(states)):
                var.assign(value)
        if self.return_state:
            return [output, *states]
        return output

    def _loop(self, time_major, states, mask_tm, steps, training):
        """(the output, the last states) of the cell run over time_major's leading axis."""

        def step(x, states):
            out, new = self.cell(x, states, training=training)
            return out, nest.pack_sequence_as(states, nest.flatten(new))

        def masked(keep, out, new, prev_out, old):
            """A masked step keeps the states and repeats the last output (zeros with
            zero_output_for_mask), as Keras's rnn does."""
            keep = _ops.expand_dims(keep, -1)
            new = nest.pack_sequence_as(old, [_ops.where(keep, n, o)
                                              for n, o in zip(nest.flatten(new), nest.flatten(old))])
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
            seq = _ops.stack(outputs, axis=1) if self.return_sequences else None
            return (seq if self.return_sequences else outputs[-1]), states
        n = _ops.shape(time_major)[0]
        inputs_ta = TensorArray(time_major.dtype, size=n).unstack(time_major)
        first_out, _ = step(inputs_ta.read(0), states)  # the output's shape and dtype (the cell is built)
        units = first_out.shape[-1]
        # The outputs grow by concatenation (a traced TensorArray written in a loop cannot
        # take elements whose batch dim is unknown yet).
        acc = _ops.zeros([0, _ops.shape(first_out)[0], units], first_out.dtype)
        mask_ta = TensorArray(_dt.bool, size=n).unstack(mask_tm) if mask_tm is not None else None
        flat = nest.flatten(states)

        def cond(t, *_):
            return t < n

        def body(t, acc, last, *flat_states):
            old = nest.pack_sequence_as(states, list(flat_states))
            out, new = step(inputs_ta.read(t), old)
            if mask_ta is not None:
                out, new = masked(mask_ta.read(t), out, new, last, old)
            if self.return_sequences:
                acc = _ops.concat([acc, _ops.expand_dims(out, 0)], 0)
            return (t + 1, acc, out, *nest.flatten(new))

        invariants = (TensorShape([]), TensorShape([None, None, units]), TensorShape([None, units]),
                      *[TensorShape([None, *s.shape[1:]]) for s in flat])
        res = while_loop(cond, body, (_ops.constant(0), acc, _ops.zeros_like(first_out), *flat),
                         shape_invariants=invariants)
        states = nest.pack_sequence_as(states, list(res[3:]))
        return (_ops.transpose(res[1], [1, 0, 2]) if self.return_sequences else res[2]), states

    @property
    def states(self):
        return self._jf_states

    def get_config(self):
        config = super().get_config()
        config.update({"return_sequences": self.return_sequences, "return_state": self.return_state,
                       "go_backwards": self.go_backwards, "stateful": self.stateful, "unroll": self.unroll,
                       "zero_output_for_mask": self.zero_output_for_mask})
        if type(self) is RNN:
            config["cell"] = _serialize_cell(self.cell)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        return cls(_deserialize_cell(config.pop("cell")), **config)


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
                        bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                        recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint, dropout=dropout,
                        recurrent_dropout=recurrent_dropout, seed=seed, dtype=kwargs.get("dtype"), name="lstm_cell",
                        trainable=kwargs.get("trainable", True))
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
                       kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
                       bias_constraint=bias_constraint, dropout=dropout, recurrent_dropout=recurrent_dropout,
                       reset_after=reset_after, seed=seed,
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
                             bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                             recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint,
                             dropout=dropout, recurrent_dropout=recurrent_dropout, seed=seed,
                             dtype=kwargs.get("dtype"), name="simple_rnn_cell",
                             trainable=kwargs.get("trainable", True))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         activity_regularizer=activity_regularizer, **kwargs)

    _CELL_KEYS_NOT_IN_CONFIG = ("name", "trainable", "dtype", "seed")
