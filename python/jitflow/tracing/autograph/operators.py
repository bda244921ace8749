"""The `ag__` runtime that converted code calls: each operator decides at trace time whether
its condition or iterable is a symbolic tensor (build jf.cond / jf.while_loop) or a Python
value (run the Python control flow as written, TF's rule)."""
import builtins
import sys
import threading

import numpy as np

from ... import _C
from ...core import dtypes
from ...core.errors import _at_caller
from ...core.nest import flatten_outputs
from ...core.shapes import dim
from ...ops import basic_ops as _ops
from ...ops import debugging as _debugging
from ...ops import printing as _printing
from .. import control_flow as _cf
from ..subgraph import notify, trace_branch
from ..tensor_array import resolve_unshaped


class Undefined:
    """The value of a name not yet bound where a converted statement starts: it flows through
    the generated functions, and any use of it raises Python's unbound-name error."""
    __slots__ = ("name",)

    def __init__(self, name):
        object.__setattr__(self, "name", name)

    def __repr__(self):
        return f"Undefined({self.name!r})"

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(f"cannot access local variable '{self.name}' where it is not associated "
                                f"with a value")

    def __getattr__(self, attr):
        self._fail()


for _m in ("__bool__", "__call__", "__getitem__", "__iter__", "__len__", "__index__", "__int__", "__float__",
           "__neg__", "__abs__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
           "__truediv__", "__rtruediv__", "__floordiv__", "__mod__", "__pow__", "__matmul__", "__lt__",
           "__le__", "__gt__", "__ge__", "__array__"):
    setattr(Undefined, _m, Undefined._fail)


class UndefinedReturnValue(Undefined):
    """retval_ before a return statement ran."""
    __slots__ = ()

    def __init__(self):
        Undefined.__init__(self, "retval_")


def retval(v):
    """The function's result: None when no return statement ran (Python's implicit return)."""
    return None if isinstance(v, UndefinedReturnValue) else v


def _symbolic(x):
    return isinstance(x, _C.Tensor) and x._is_symbolic


def _undefined(x):
    return isinstance(x, Undefined)


def get_vars(frame_locals, names):
    """The current values of names in the calling scope, Undefined where unbound."""
    return tuple(frame_locals[n] if n in frame_locals else Undefined(n) for n in names)


# ---- optional features (TF's tf.autograph.experimental.Feature) ------------------------------
_features = threading.local()


class features:
    """The Feature set of the jf.function being traced (experimental_autograph_options)."""

    def __init__(self, enabled):
        self.enabled = frozenset(enabled)

    def __enter__(self):
        self.saved = getattr(_features, "enabled", frozenset())
        _features.enabled = self.enabled

    def __exit__(self, *exc):
        _features.enabled = self.saved


def _enabled(name):
    return name in getattr(_features, "enabled", ())


# conversion.converted, set by conversion.py when it loads: the converted code calls back into
# the converter through this module (its `ag__`), which conversion.py imports.
_converter = []


def converted_call(f):
    if f is builtins.print and _enabled("BUILTIN_FUNCTIONS"):
        return print_
    return _converter[0](f)


def print_(*objects, sep=" ", end="\n", file=None, flush=False):
    """Feature.BUILTIN_FUNCTIONS: print with a tensor argument prints when the graph runs
    (jf.print); with Python values only, it is Python's print."""
    if not any(_symbolic(o) for o in objects):
        return builtins.print(*objects, sep=sep, end=end, file=file, flush=flush)
    if file not in (None, sys.stdout, sys.stderr):
        raise NotImplementedError(_at_caller("print of a tensor at run time writes to sys.stdout or sys.stderr only"))
    return _printing.print(*objects, sep=sep, end=end, output_stream=file or sys.stdout)


def assert_stmt(test, msg):
    """`assert test, msg`: a jf.debugging.Assert op on a tensor condition when
    Feature.ASSERT_STATEMENTS is on (else the tensor's bool() raises, as in TF's default);
    Python's assert otherwise."""
    if _symbolic(test) and _enabled("ASSERT_STATEMENTS"):
        data = [msg()] if msg is not None else ["Assertion failed"]
        return _debugging.Assert(test, data)
    if not test:
        raise AssertionError(msg()) if msg is not None else AssertionError()
    return None


def range_(*args):
    """range() with Python integers stays Python's (the loop is unrolled, as TF does); with a
    tensor argument it is jf.range, and a for loop over it becomes a while loop."""
    if any(_symbolic(a) for a in args):
        return _ops.range(*args)
    return range(*args)


# ---- expressions -------------------------------------------------------------------------
def not_(x):
    if _symbolic(x):
        return _ops.logical_not(x)
    return not x


def and_(a, b_fn):
    """a and b: on a tensor, b is evaluated only where a is true (a jf.cond, TF's lazy and)."""
    if _symbolic(a):
        return _cf.cond(a, lambda: _as_bool(b_fn()), lambda: a)
    return b_fn() if a else a


def or_(a, b_fn):
    if _symbolic(a):
        return _cf.cond(a, lambda: a, lambda: _as_bool(b_fn()))
    return a if a else b_fn()


def _as_bool(v):
    return v if isinstance(v, _C.Tensor) else _C.convert_to_tensor(bool(v))


def if_exp(c, t_fn, f_fn):
    if _symbolic(c):
        return _cf.cond(c, t_fn, f_fn)
    return t_fn() if c else f_fn()


# ---- if ----------------------------------------------------------------------------------
def _check_condition(c, statement):
    """TF's rule for a tensor condition: a scalar bool, in TF's words otherwise."""
    if c.dtype != dtypes.bool or _shape(c) != ():
        cast = "" if c.dtype == dtypes.bool else "; to use as boolean Tensor, use `tf.cast`"
        raise ValueError(_at_caller(f"condition of {statement} expected to be `tf.bool` scalar, got {c!r}{cast}; "
                                    f"to check for None, use `is not None`"))


def if_stmt(cond, true_fn, false_fn, init, names, live):
    if not _symbolic(cond):
        return true_fn(*init) if cond else false_fn(*init)
    _check_condition(cond, "if statement")
    return _tensor_if(cond, true_fn, false_fn, init, names, set(live))


def _flat_var(v):
    """A name's value as tensors and their structure; a Python or numpy number is one tensor
    (TF converts it), so a branch or iteration that makes it a tensor keeps the structure."""
    if isinstance(v, (bool, int, float, complex, np.generic, np.ndarray)):
        v = _C.convert_to_tensor(v)
    return flatten_outputs(v)


def _tensor_if(cond, true_fn, false_fn, init, names, live):
    """A jf.cond whose outputs are the live names the branches assign. TF's checks, in its
    words: a name bound in one branch only, None at the end of a branch, differing dtypes."""
    seen = {}

    def branch(fn, which):
        def run():
            out = fn(*init)
            values, specs = [], {}
            for n, v in zip(names, out):
                if n not in live or _undefined(v):
                    continue
                if v is None:
                    raise ValueError(_at_caller(f"'{n}' is None at the end of the {which} branch."))
                leaves, tree = _flat_var(v)
                specs[n] = (tree, [t.dtype for t in leaves])
                values.extend(leaves)
            if which == "else":
                main = seen["main"]
                for n in names:
                    if (n in main) != (n in specs):
                        other = "else" if n in main else "main"
                        if n == "retval_":
                            raise ValueError(_at_caller(f"the {other} branch must also have a return statement."))
                        raise ValueError(_at_caller(f"'{n}' must also be initialized in the {other} branch"))
                    if n in main and main[n][0] != specs[n][0]:
                        raise ValueError(_at_caller(f"'{n}' must have the same nested structure in the main "
                                                    f"and else branches"))
                    if n in main and main[n][1] != specs[n][1]:
                        a, b = main[n][1], specs[n][1]
                        raise TypeError(_at_caller(f"'{n}' has dtype {_dts(a)} in the main branch, but dtype "
                                                   f"{_dts(b)} in the else branch"))
            seen[which] = specs
            return values
        return run

    tb, tg, _ = trace_branch(branch(true_fn, "main"))
    eb, eg, _ = trace_branch(branch(false_fn, "else"))
    outs = list(_C.make_if(cond, tb, tg, eb, eg, None))
    notify(outs)
    result = list(init)
    specs = seen["main"]
    for i, n in enumerate(names):
        if n in specs:
            tree, dts = specs[n]
            result[i] = tree.unflatten(outs[:len(dts)])
            outs = outs[len(dts):]
    return tuple(result)


def _dts(dts):
    return dts[0].name if len(dts) == 1 else "(" + ", ".join(d.name for d in dts) + ")"


# ---- loops -------------------------------------------------------------------------------
def loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None, shape_invariants=None):
    """TF's set_loop_options keywords, as the loop statement receives them."""
    return {"maximum_iterations": maximum_iterations, "shape_invariants": list(shape_invariants or [])}


def while_stmt(test, body, init, names, live, opts=None):
    vals = tuple(init)
    c = test(*vals)
    if not _symbolic(c):
        while c:
            vals = tuple(body(*vals))
            c = test(*vals)
            if _symbolic(c):
                raise NotImplementedError(_at_caller(
                    "The condition of while loop started as non-Tensor, then changed to Tensor. This may happen "
                    "either because variables changed type, or when a break or return statement inside the loop "
                    "depends on a Tensor condition. In both cases, changing to a TF loop should remove the error."))
        return vals
    return _tensor_while(test, body, vals, names, set(live), opts)


def _shape(t):
    return tuple(None if d is None or d < 0 else int(d) for d in t.shape)


def _pack(vals, idxs):
    """The tensors of vals[i] for i in idxs, and each one's (structure, leaf count)."""
    flat, layout = [], []
    for i in idxs:
        leaves, tree = _flat_var(vals[i])
        layout.append((tree, len(leaves)))
        flat.extend(leaves)
    return flat, layout


def _infer_undefined(body, init, names, missing):
    """TF's rule for a name first bound in a loop body and read after the loop: the body is
    traced once (a throwaway trace) to learn its dtype and shape, and it enters the loop as
    zeros of that type. None, or an unknown dim, stays an error."""
    defined = [i for i, v in enumerate(init) if not (_undefined(v) or v is None)]
    flat, layout = _pack(init, defined)
    seen = {}

    def probe(*ts):
        vals, ts = list(init), list(ts)
        for i, (tree, k) in zip(defined, layout):
            vals[i], ts = tree.unflatten(ts[:k]), ts[k:]
        out = body(*vals)
        for i in missing:
            v = out[i]
            if v is not None and not _undefined(v):
                leaves, tree = _flat_var(v)
                seen[i] = (tree, [(t.dtype, _shape(t)) for t in leaves])
        return []
    trace_branch(probe, [(t.dtype, _shape(t)) for t in flat], [f"loop_var_{k}" for k in range(len(flat))])
    init = list(init)
    for i in missing:
        if i not in seen or any(None in shape for _, shape in seen[i][1]):
            raise ValueError(_at_caller(f"'{names[i]}' must be defined before the loop"))
        tree, specs = seen[i]
        init[i] = tree.unflatten([_ops.zeros(shape, dt) for dt, shape in specs])
    return init


def _invariant(shape):
    shape = shape.as_list() if hasattr(shape, "as_list") else shape
    return tuple(dim(d) for d in shape)


def _conforms(shape, invariant):
    return len(shape) == len(invariant) and all(i is None or i == d for d, i in zip(shape, invariant))


def _tensor_while(test, body, init, names, live, opts=None):
    """A jf.while_loop over the names bound before the loop; names first bound in the body are
    local to an iteration unless read after the loop (then inferred, as TF does)."""
    missing = [i for i, (n, v) in enumerate(zip(names, init)) if (_undefined(v) or v is None) and n in live]
    if any(names[i] == "retval_" for i in missing):
        raise NotImplementedError(_at_caller(
            "a return statement cannot be placed inside this TensorFlow loop; this may happen if a "
            "return statement depends on a static Python condition such as a hyperparameter"))
    if missing:
        init = _infer_undefined(body, init, names, missing)
    init = resolve_unshaped(body, init)  # a TensorArray's element shape, if not known yet
    loop = [i for i, v in enumerate(init) if not (_undefined(v) or v is None)]
    flat, layout = _pack(init, loop)
    specs = [(t.dtype, _shape(t)) for t in flat]
    opts = opts or {}
    invariant = False
    for var, shape in opts.get("shape_invariants", []):
        # set_loop_options names a loop variable by its value before the loop, as TF matches it
        k = next((j for j, i in enumerate(loop) if init[i] is var), None)
        if k is None or layout[k][1] != 1:
            raise ValueError(_at_caller(f"shape_invariants: {var!r} is not a loop variable holding one tensor"))
        pos = sum(n for _, n in layout[:k])
        shape = _invariant(shape)
        if not _conforms(specs[pos][1], shape):
            raise ValueError(_at_caller(f"'{names[loop[k]]}' has shape {specs[pos][1]} before the loop, which does "
                                        f"not conform with the shape invariant {shape}."))
        specs[pos] = (specs[pos][0], shape)
        invariant = True

    def unflat(ts):
        vals, ts = list(init), list(ts)
        for i, (tree, k) in zip(loop, layout):
            vals[i] = tree.unflatten(ts[:k])
            ts = ts[k:]
        return vals

    def cond_fn(*ts):
        c = _as_bool(test(*unflat(ts)))
        _check_condition(c, "while loop")
        return c

    def body_fn(*ts):
        out = body(*unflat(ts))
        new = []
        for i, (tree, k) in zip(loop, layout):
            n, v = names[i], out[i]
            if v is None or _undefined(v):
                raise ValueError(_at_caller(f"'{n}' is None after one iteration"))
            leaves, t2 = _flat_var(v)
            if t2 != tree:
                raise ValueError(_at_caller(f"'{n}' does not have the same nested structure after one iteration"))
            for t, (dt, shape) in zip(leaves, specs[len(new):len(new) + k]):
                if t.dtype != dt:
                    raise TypeError(_at_caller(f"'{n}' has dtype {dt.name} before the loop, but dtype "
                                               f"{t.dtype.name} after one iteration"))
                if not _conforms(_shape(t), shape):
                    raise ValueError(_at_caller(
                        f"'{n}' has shape {shape} before the loop, but shape {_shape(t)} after one "
                        f"iteration. Use tf.autograph.experimental.set_loop_options to set shape invariants."))
                new.append(t)
        return new

    out = _cf.while_loop(cond_fn, body_fn, flat, maximum_iterations=opts.get("maximum_iterations"),
                         shape_invariants=[list(shape) for _, shape in specs] if invariant else None)
    return tuple(unflat(out))


def for_stmt(iterable, extra_test, body, init, names, live, target, opts=None):
    if _symbolic(iterable):
        bounds = _range_bounds(iterable)
        if bounds is not None:
            return _range_for(bounds, extra_test, body, init, names, set(live), target, opts)
        return _tensor_for(iterable, extra_test, body, init, names, set(live), target, opts)
    vals = tuple(init)
    for item in iterable:
        if extra_test is not None:
            go = extra_test(*vals)
            if _symbolic(go):
                raise NotImplementedError(_at_caller(
                    "break and return statements which depend on a TF condition are not supported in Python for "
                    "loops. Did you intend to make it a TF loop?"))
            if not go:
                break
        vals = tuple(body(item, *vals))
    return vals


def _range_bounds(x):
    """(start, limit, delta) when x is a jf.range of the graph being traced, else None."""
    ref = x._node_ref
    if ref is None or ref[0].op != "Range":
        return None
    return tuple(r.output(i) for r, i in ref[0].input_refs())


def _loop_test(more, extra_test, vals):
    if extra_test is None:
        return more
    go = extra_test(*vals)
    return _ops.logical_and(more, go) if _symbolic(go) or isinstance(go, _C.Tensor) else (more if go else go)


def _range_for(bounds, extra_test, body, init, names, live, target, opts=None):
    """for over a jf.range: a while loop over the item itself (TF's range loop), so the range
    is never materialized and the loop compiles whatever its bounds."""
    start, limit, delta = bounds
    init = list(init)
    if target in names and _undefined(init[names.index(target)]):
        init[names.index(target)] = _ops.zeros([], start.dtype)

    def test(i, *vals):
        zero = _ops.zeros([], delta.dtype)
        more = _ops.logical_or(_ops.logical_and(delta > zero, i < limit), _ops.logical_and(delta < zero, i > limit))
        return _loop_test(more, extra_test, vals)

    def step(i, *vals):
        return (i + delta,) + tuple(body(i, *vals))

    out = _tensor_while(test, step, (start,) + tuple(init), ("ag__i",) + tuple(names), live | {"ag__i"}, opts)
    return out[1:]


def _tensor_for(x, extra_test, body, init, names, live, target, opts=None):
    """for over a symbolic tensor: a while loop over a counter k, the item x[k] (its first
    dimension; a jf.range is iterated the same way)."""
    if x.shape.rank == 0:
        raise TypeError(_at_caller("Cannot iterate over a scalar tensor."))
    n = x.shape[0]
    n = _ops.shape(x)[0] if n is None or n < 0 else _C.convert_to_tensor(int(n))
    init = list(init)
    if target in names:  # TF keeps the last item after the loop: start it at zeros
        i = names.index(target)
        if _undefined(init[i]):
            init[i] = _ops.zeros(_shape(x)[1:], x.dtype) if None not in _shape(x)[1:] else _ops.zeros_like(x[0])

    def test(k, *vals):
        return _loop_test(k < n, extra_test, vals)

    def step(k, *vals):
        return (k + 1,) + tuple(body(x[k], *vals))

    k0 = _C.convert_to_tensor(0)
    out = _tensor_while(test, step, (k0,) + tuple(init), ("ag__k",) + tuple(names), live | {"ag__k"}, opts)
    return out[1:]
