"""jf.debugging: runtime counters, and TF's assertions (Assert, assert_equal, assert_near,
assert_rank, assert_shapes, ...): checked now eagerly, an Assert op that runs with the
function when traced; shapes known at trace time are checked at trace time (ValueError)."""
import html as _html

import numpy as _np

from .. import _C
from .._C import Tensor
from ..core import dtypes as _dt
from ..core import export as _api
from ..core.errors import InvalidArgumentError, warn
from ..core.export import export

_ASSERT = _C.op_id("Assert")
_TENSOR_SLOT = "\x00"  # in the Assert op's "parts": the next data tensor goes here


# Counters kept in Python, reported with the C++ ones (autodiff/batching.py:
# jacobian_loop_fallbacks).
_extra_stats = {}


class Stats(dict):
    """The runtime counters: a dict (printed as one), shown in a notebook as a table."""

    def _repr_html_(self):
        rows = "".join(f"<tr><td style='text-align:left'>{_html.escape(str(k))}</td><td style='text-align:right'>{v}</td></tr>"
                       for k, v in self.items())
        return ('<table class="jf-stats" style="border-collapse:collapse"><tr><th>counter</th>'
                f"<th>value</th></tr>{rows}</table>")


def stats():
    return Stats({**_C.stats(), **_extra_stats})


def reset_stats():
    _C.reset_stats()
    for k in _extra_stats:
        _extra_stats[k] = 0


class _Ops:
    """The jf ops by their public names (jf.reduce_sum, jf.math.less), looked up when first
    used: debugging loads before the op layer."""

    def __getattr__(self, name):
        for n in (name, "math." + name, "debugging." + name):
            if _api.exported(n) is not None:
                return _api.exported(n)
        raise AttributeError(name)


def _ops():
    return _Ops()


_NP = {"==": _np.equal, "!=": _np.not_equal, "<": _np.less, "<=": _np.less_equal, ">": _np.greater,
       ">=": _np.greater_equal}


def _all(test):
    """all(test) as a scalar bool: no False left (a Sum, which every mode fuses; True when
    empty, as TF's reduce_all)."""
    ops = _ops()
    return ops.equal(ops.reduce_sum(ops.cast(ops.logical_not(test), _dt.int32)), 0)


def _tensor(v, dtype=None):
    return v if isinstance(v, Tensor) and dtype is None else _C.convert_to_tensor(v, dtype)


def _traced(*ts):
    return _C.is_tracing() or any(isinstance(t, Tensor) and t._is_symbolic for t in ts)


# ---- Assert --------------------------------------------------------------------------------
def _summarize_eager(t, summarize):
    """TF's _summarize_eager: the first `summarize` elements, flat, comma-separated."""
    a = t.numpy()
    if summarize is None:
        summarize = 3
    elif summarize < 0:
        summarize = a.size
    if a.ndim == 0:
        return str(a) if summarize != 0 else ""
    flat = a.reshape(-1)
    items = [str(v) for v in flat[:summarize]]
    if len(items) < flat.size:
        items.append("...")
    return ", ".join(items)


@export("Assert", "debugging.Assert")
def Assert(condition, data, summarize=None, name=None):
    """TF's tf.debugging.Assert: raises InvalidArgumentError showing `data` (the first
    `summarize` entries of each tensor) when `condition` is false. Eagerly it checks now and
    returns None; traced it adds a stateful Assert op that runs whenever the function runs,
    consumed or not (TF's automatic control dependencies), and returns that op (for
    jf.control_dependencies)."""
    if not _traced(condition):
        # A bool tensor, as the op takes (TF's eager path would take any truthy tensor);
        # Python and numpy values by their truth.
        if isinstance(condition, Tensor) and condition.dtype != _dt.bool:
            raise TypeError(f"Input 'condition' of 'Assert' Op has type {condition.dtype.name} that does "
                            "not match expected type of bool")
        cond = condition.numpy() if isinstance(condition, Tensor) else condition
        if not cond:
            shown = [repr(d.encode()) if isinstance(d, str) else _summarize_eager(_tensor(d), summarize)
                     for d in data]
            raise InvalidArgumentError(f"Expected '{condition!s}' to be true. Summarized data: {chr(10).join(shown)}")
        return
    parts, tensors = [], [_tensor(condition)]
    for d in data:
        if isinstance(d, (str, bytes)):
            parts.append(d.decode() if isinstance(d, bytes) else d)
        else:
            tensors.append(_tensor(d))
            parts.append(_TENSOR_SLOT)
    attrs = {"parts": parts, "summarize": 3 if summarize is None else int(summarize)}
    _C.execute_n(_ASSERT, tensors, attrs, name)
    node = _C.current_graph().nodes()[-1]  # the op just made
    return _AssertOp(node) if node.op == "Assert" else None


class _AssertOp:
    """A traced Assert (TF returns its Operation): `jf.control_dependencies([op])` makes the
    ops created inside wait for the check."""

    type = "Assert"

    def __init__(self, node):
        self._jf_control_node = node
        self.name = node.name

    def __repr__(self):
        return f"<jf.Operation '{self.name}' type=Assert>"


# ---- value assertions ----------------------------------------------------------------------
def _static_value(t):
    """The value of a traced tensor known at trace time (a Const, the Shape of a static
    shape), else None: TF checks those when the assertion is built."""
    if not t._is_symbolic:
        return t.numpy()
    ref = t._node_ref
    if ref is None:
        return None
    node = ref[0]
    if node.op == "Const":
        return node.get_attr("value").numpy()
    if node.op == "Shape":
        src, index = node.input_refs()[0]
        shape = src.output_spec(index)[1]
        if all(d is not None for d in shape):
            return _np.array(shape, dtype=t.dtype.as_numpy_dtype)
    return None


def _name_of(t):
    """How TF names a tensor in an assertion's message: its graph name when traced, its shape
    and dtype eagerly."""
    if t._is_symbolic:
        return t.name
    return f"shape={tuple(t.shape)} dtype={t.dtype.name}"


def _pretty(item, summarize):
    if isinstance(item, _np.ndarray) and item.ndim > 0 and item.dtype != object:
        return str(item)
    if isinstance(item, Tensor):
        a = item.numpy()
        if a.ndim == 0:
            return str(a)
        flat = a.reshape(-1)
        items = [str(v) for v in flat[:summarize]]
        if len(items) < flat.size:
            items.append("...")
        return str(items)
    return str(item)


def _binary_assert(sym, op, np_op, x, y, message, summarize, data, name):
    """TF's _binary_assert: all(op(x, y)), with TF's message in each mode."""
    x = _tensor(x)
    # A Python value takes x's dtype, as it would in op(x, y); two tensors must agree.
    y = y if isinstance(y, Tensor) else _C.convert_to_tensor(y, None, x.dtype, True)
    test = op(x, y)
    if not _traced(x, y):
        if bool(_all(test).numpy()):
            return None
        n = 3 if summarize is None else (10**9 if summarize < 0 else summarize)
        if data is None:
            lines = [message] if message else []
            lines += _assert_msg_data(sym, x, y, n, test)
        else:
            lines = list(data)
        raise InvalidArgumentError("\n".join(_pretty(d, n) for d in lines))
    if data is None:
        data = ([message] if message else []) + [
            f"Condition x {sym} y did not hold element-wise:", f"x ({_name_of(x)}) = ", x,
            f"y ({_name_of(y)}) = ", y]
    xv, yv = _static_value(x), _static_value(y)
    if xv is not None and yv is not None:
        if not bool(_np.all(np_op(xv, yv))):
            shown = [str(d.numpy() if isinstance(d, Tensor) and not d._is_symbolic else
                         (xv if d is x else yv if d is y else d)) for d in data]
            raise InvalidArgumentError("\n".join(shown))
        return None
    return Assert(_all(test), data, summarize=summarize, name=name)


def _assert_msg_data(sym, x, y, summarize, test):
    """TF's _make_assert_msg_data: the differing indices and values, then the first elements."""
    out = [f"Condition x {sym} y did not hold."]
    if summarize <= 0:
        return out
    xa, ya = x.numpy(), y.numpy()
    if xa.shape == ya.shape and xa.ndim > 0:
        mask = ~test.numpy()
        idx = _np.argwhere(mask)
        k = min(summarize, idx.shape[0])
        out += [f"Indices of first {k} different values:", idx[:k], "Corresponding x values:",
                xa[mask].reshape(-1)[:k], "Corresponding y values:", ya[mask].reshape(-1)[:k]]
    xf, yf = xa.reshape(-1), ya.reshape(-1)
    xs, ys = min(xf.size, summarize), min(yf.size, summarize)
    out += [f"First {xs} elements of x:", xf[:xs], f"First {ys} elements of y:", yf[:ys]]
    return out


def _make_binary(sym, opname, tf_name):
    def assertion(x, y, message=None, summarize=None, name=None):
        return _binary_assert(sym, getattr(_ops(), opname), _NP[sym], x, y, message, summarize, None, name)
    assertion.__name__ = assertion.__qualname__ = tf_name
    assertion.__doc__ = (f"TF's tf.debugging.{tf_name}: all(x {sym} y) elementwise (numpy "
                         "broadcasting), else InvalidArgumentError with the differing values.")
    return assertion


assert_equal = export("assert_equal", "debugging.assert_equal")(_make_binary("==", "equal", "assert_equal"))
assert_none_equal = export("debugging.assert_none_equal")(
    _make_binary("!=", "not_equal", "assert_none_equal"))
assert_less = export("assert_less", "debugging.assert_less")(_make_binary("<", "less", "assert_less"))
assert_less_equal = export("debugging.assert_less_equal")(
    _make_binary("<=", "less_equal", "assert_less_equal"))
assert_greater = export("assert_greater", "debugging.assert_greater")(
    _make_binary(">", "greater", "assert_greater"))
assert_greater_equal = export("debugging.assert_greater_equal")(
    _make_binary(">=", "greater_equal", "assert_greater_equal"))


def _make_sign(sym, opname, tf_name, zero_first):
    def assertion(x, message=None, summarize=None, name=None):
        x = _tensor(x)
        prefix = f"{message}.  " if message else ""
        data = [prefix, f"Condition x {sym} 0 did not hold element-wise:", f"x ({_name_of(x)}) = ", x]
        zero = _tensor(_np.zeros((), x.dtype.as_numpy_dtype))
        op = getattr(_ops(), opname)
        a, b = (zero, x) if zero_first else (x, zero)
        return _binary_assert(sym, op, getattr(_np, opname), a, b, message, summarize, data, name)
    assertion.__name__ = assertion.__qualname__ = tf_name
    assertion.__doc__ = f"TF's tf.debugging.{tf_name}: all(x {sym} 0), else InvalidArgumentError."
    return assertion


assert_non_negative = export("debugging.assert_non_negative")(
    _make_sign(">=", "less_equal", "assert_non_negative", True))
assert_positive = export("debugging.assert_positive")(_make_sign(">", "less", "assert_positive", True))
assert_negative = export("debugging.assert_negative")(_make_sign("<", "less", "assert_negative", False))
assert_non_positive = export("debugging.assert_non_positive")(
    _make_sign("<=", "less_equal", "assert_non_positive", False))


@export("debugging.assert_near")
def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """TF's tf.debugging.assert_near: all(|x - y| < atol + rtol * |y|), both tolerances 10 eps of
    the dtype by default (1.19e-6 float32, 2.22e-15 float64); integer inputs are TF's ValueError."""
    ops = _ops()
    x, y = _tensor(x), _tensor(y)
    np_dtype = x.dtype.as_numpy_dtype
    if not _np.issubdtype(np_dtype, _np.inexact):
        raise ValueError(f"data type {_np.dtype(np_dtype).type} not inexact")
    eps = 10 * _np.finfo(np_dtype).eps
    rtol = _tensor(eps if rtol is None else rtol, x.dtype)
    atol = _tensor(eps if atol is None else atol, x.dtype)
    data = [message or "", f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
            f"x ({_name_of(x)}) = ", x, f"y ({_name_of(y)}) = ", y]
    tol = ops.add(atol, ops.multiply(rtol, ops.abs(y)))
    cond = _all(ops.less(ops.abs(ops.subtract(x, y)), tol))
    return Assert(cond, data, summarize=summarize, name=name)


# ---- shape assertions (jitflow tensors always have a static rank) --------------------------
def _rank_value(rank):
    """The expected rank as an int: a Python int or a scalar known at trace time (TF's
    ValueError "Rank must be a scalar." otherwise)."""
    rv = _static_value(_tensor(rank)) if not isinstance(rank, int) else rank
    if rv is None or _np.ndim(rv) != 0:
        raise ValueError("Rank must be a scalar.")
    if not _np.issubdtype(_np.asarray(rv).dtype, _np.integer):
        raise TypeError(f"Rank must be an integer, got {rv!r}")
    return int(rv)


def _tensor_label(x):
    return x.name if x._is_symbolic else ""


@export("assert_rank", "debugging.assert_rank")
def assert_rank(x, rank, message=None, name=None):
    """TF's tf.debugging.assert_rank. A jitflow tensor's rank is always known when it is made,
    so a wrong rank is TF's static ValueError, eagerly and at trace time alike."""
    x = _tensor(x)
    r = _rank_value(rank)
    if x.ndim != r:
        raise _rank_error(x, r, message)


def _rank_error(x, what, message):
    prefix = f"{message}.  " if message else ""
    return ValueError(f"{prefix}Tensor {_tensor_label(x)} must have rank {what}.  Received rank {x.ndim}, "
                      f"shape {tuple(x.shape)}")


@export("debugging.assert_rank_at_least")
def assert_rank_at_least(x, rank, message=None, name=None):
    """TF's tf.debugging.assert_rank_at_least (static in jitflow: ValueError)."""
    x = _tensor(x)
    r = _rank_value(rank)
    if x.ndim < r:
        raise _rank_error(x, f"at least {r}", message)


@export("debugging.assert_rank_in")
def assert_rank_in(x, ranks, message=None, name=None):
    """TF's tf.debugging.assert_rank_in (static in jitflow: ValueError)."""
    x = _tensor(x)
    rs = tuple(_rank_value(r) for r in ranks)
    if x.ndim not in rs:
        raise _rank_error(x, f"in {rs}", message)


@export("debugging.assert_scalar")
def assert_scalar(tensor, message=None, name=None):
    """TF's tf.debugging.assert_scalar: ValueError unless rank 0; returns the tensor."""
    t = _tensor(tensor)
    if t.ndim != 0:
        prefix = f"{message}.  " if message else ""
        raise ValueError(f"{prefix}Expected scalar shape, saw shape: {tuple(t.shape)}.")
    return t


@export("debugging.assert_type")
def assert_type(tensor, tf_type, message=None, name=None):
    """TF's tf.debugging.assert_type: TypeError unless the dtype is tf_type."""
    t = _tensor(tensor)
    want = _dt.as_dtype(tf_type)
    if t.dtype != want:
        prefix = f"{message}.  " if message else ""
        raise TypeError(f"{prefix}tensor must be of type tf.{want.name}; got tf.{t.dtype.name}")  # TF's words


@export("debugging.assert_integer")
def assert_integer(x, message=None, name=None):
    """TF's tf.debugging.assert_integer: TypeError unless the dtype is an integer."""
    t = _tensor(x)
    if t.dtype not in (_dt.int32, _dt.int64):
        prefix = f"{message}.  " if message else ""
        raise TypeError(f"{prefix}Expected \"x\" to be integer type.  Found: tensor of dtype <dtype: '{t.dtype.name}'>")


@export("debugging.assert_all_finite")
def assert_all_finite(x, message, name=None):
    """TF's tf.debugging.assert_all_finite: check_numerics(x, message)."""
    return _ops().check_numerics(x, message, name=name)


def _shape_items(shapes):
    items = shapes.items() if isinstance(shapes, dict) else shapes
    return [(_tensor(x), s) for x, s in items]


def _dim_kind(d):
    """An explicit size (int), any size (None), or a symbol (anything else hashable)."""
    if d is None or (isinstance(d, str) and d == "."):
        return "any", None
    if isinstance(d, (int, _np.integer)) and not isinstance(d, bool):
        return "size", int(d)
    if isinstance(d, str):
        try:
            return "size", int(d)
        except ValueError:
            return "symbol", d
    return "symbol", d


@export("debugging.assert_shapes")
def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """TF's tf.debugging.assert_shapes: each tensor's dims match its spec: an int is a size,
    None or '.' any size, anything else a symbol that must have one size over all tensors; a
    leading ... or '*' matches any outer dims; a scalar and a () spec count as one dim of size 1.
    Sizes known at trace time are checked then (ValueError); sizes known only at run time
    become an Assert (InvalidArgumentError when the function runs)."""
    ops = _ops()
    prefix = f"{message}.  " if message else ""
    items = _shape_items(shapes)
    symbols = {}  # symbol -> (tensor, dim index, static size or None)
    for x, spec in items:
        spec = list(spec)
        outer = bool(spec) and (spec[0] is Ellipsis or (isinstance(spec[0], str) and spec[0] == "*"))
        if outer:
            spec = spec[1:]
        label = _name_of(x)
        shape = tuple(x.shape)
        rank = len(shape)
        if outer:
            if rank < len(spec):
                raise ValueError(f"{prefix}Tensor {_tensor_label(x)} must have rank at least {len(spec)}.  "
                                 f"Received rank {rank}, shape {shape}")
        elif len(spec) <= 1:
            if rank > 1:
                raise ValueError(f"{prefix}Tensor {_tensor_label(x)} must have rank in (0, 1).  Received "
                                 f"rank {rank}, shape {shape}")
        elif rank != len(spec):
            raise ValueError(f"{prefix}Tensor {_tensor_label(x)} must have rank {len(spec)}.  Received "
                             f"rank {rank}, shape {shape}")
        if not spec:
            spec = [1]
        dims = list(shape) if rank else [1]
        offset = len(dims) - len(spec)
        for k, d in enumerate(spec):
            i = offset + k
            kind, val = _dim_kind(d)
            if kind == "any":
                continue
            got = dims[i]
            if kind == "size":
                if got is not None and got != val:
                    raise ValueError(f"{prefix}Specified explicitly.  Tensor {label} dimension {i} must have "
                                     f"size {val}.  Received size {got}, shape {shape}")
                if got is None:
                    _shape_assert(ops, x, i, ops.constant(val, _dt.int32), "Specified explicitly.",
                                  message, data, summarize, name)
                continue
            if val not in symbols:
                symbols[val] = (x, i, got)
                continue
            first, j, size = symbols[val]
            why = f"Specified by tensor {_name_of(first)} dimension {j}"
            if got is not None and size is not None:
                if got != size:
                    raise ValueError(f"{prefix}{why}.  Tensor {label} dimension {i} must have size {size}.  "
                                     f"Received size {got}, shape {shape}")
                continue
            _shape_assert(ops, x, i, ops.shape(first)[j] if first.ndim else ops.constant(1), why,
                          message, data, summarize, name)


def _shape_assert(ops, x, i, size, why, message, data, summarize, name):
    """A dim known only when the function runs: TF's run-time Assert and message parts."""
    got = ops.shape(x)[i]
    if data is None:
        data = [message or "", why, f"Tensor {_name_of(x)} dimension", i, "must have size", size,
                "Received shape: ", ops.shape(x)]
    Assert(ops.equal(got, size), data, summarize=summarize, name=name)


_placement_logging = [False]


@export("debugging.set_log_device_placement")
def set_log_device_placement(enabled):
    """Recorded; jitflow does not print each op's device as it runs. jf.explain(fn, *args) lists
    where every op of a function runs (the device, and compiled or eager), and says so once."""
    _placement_logging[0] = bool(enabled)
    if enabled:
        warn("jf.debugging.set_log_device_placement: jitflow does not log each op's device; "
                  "jf.explain(fn, *args) lists where each op of a function runs")


@export("debugging.get_log_device_placement")
def get_log_device_placement():
    return _placement_logging[0]
