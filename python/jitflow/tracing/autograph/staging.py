"""The converted if/while/for statements at trace time (TF's control_flow operators): a Python
condition or iterable runs the statement as written; a symbolic tensor stages it as a
jf.cond / jf.while_loop over the statement's state, which the generated get_state/set_state
functions read from and write back to the user's scope. TF's checks and messages."""
import numpy as np

from ... import _C
from ...core import dtypes
from ...core.errors import _at_caller
from ...core.nest import flatten_outputs
from ...core.shapes import dim
from ...ops import basic_ops as _ops
from ...ops import debugging as _debugging
from .. import control_flow as _cf
from ..subgraph import notify, trace_branch
from ..tensor_array import resolve_unshaped, shape_for_branches
from .variables import UndefinedReturnValue, is_undefined


def symbolic(x):
    return isinstance(x, _C.Tensor) and x._is_symbolic


def as_bool(v):
    return v if isinstance(v, _C.Tensor) else _C.convert_to_tensor(bool(v))


def _shape(t):
    return tuple(None if d is None or d < 0 else int(d) for d in t.shape)


def _check_condition(c, statement):
    """TF's rule for a tensor condition: a scalar bool, in TF's words otherwise."""
    if c.dtype != dtypes.bool or _shape(c) != ():
        cast = "" if c.dtype == dtypes.bool else "; to use as boolean Tensor, use `tf.cast`"
        raise ValueError(_at_caller(f"condition of {statement} expected to be `tf.bool` scalar, got {c!r}{cast}; "
                                    f"to check for None, use `is not None`"))


def _flat_var(v):
    """A state value as tensors and their structure; a Python or numpy number is one tensor
    (TF converts it), so a branch or iteration that makes it a tensor keeps the structure."""
    if isinstance(v, (bool, int, float, complex, np.generic, np.ndarray)):
        v = _C.convert_to_tensor(v)
    return flatten_outputs(v)


def _dts(dts):
    return dts[0].name if len(dts) == 1 else "(" + ", ".join(d.name for d in dts) + ")"


# ---- if ----------------------------------------------------------------------------------
def if_stmt(cond, body, orelse, get_state, set_state, names, nouts):
    if not symbolic(cond):
        if cond:
            body()
        else:
            orelse()
        return
    _check_condition(cond, "if statement")
    init = tuple(get_state())

    def as_body(fn):
        def run(*values):
            set_state(tuple(values) + init[nouts:])
            fn()
            return list(get_state()[:nouts])
        return run
    init = tuple(shape_for_branches([as_body(body), as_body(orelse)], list(init[:nouts]))) + init[nouts:]
    seen = {}

    def branch(fn, which):
        def run():
            set_state(init)
            fn()
            out = tuple(get_state())[:nouts]
            values, specs = [], []
            for n, v in zip(names, out):
                if is_undefined(v):
                    raise ValueError(_at_caller(
                        f"the {which} branch must also have a return statement."
                        if isinstance(v, UndefinedReturnValue) else f"'{n}' must also be initialized in the {which} branch"))
                if v is None:
                    raise ValueError(_at_caller(f"'{n}' is None at the end of the {which} branch."))
                leaves, tree = _flat_var(v)
                specs.append((tree, [t.dtype for t in leaves]))
                values.extend(leaves)
            if which == "else":
                for n, (t1, d1), (t2, d2) in zip(names, seen["main"], specs):
                    if t1 != t2:
                        raise TypeError(_at_caller(f"'{n}' must have the same nested structure in the main "
                                                   f"and else branches"))
                    if d1 != d2:
                        raise TypeError(_at_caller(f"'{n}' has dtype {_dts(d1)} in the main branch, but dtype "
                                                   f"{_dts(d2)} in the else branch"))
            seen[which] = specs
            return values
        return run

    tb, tg, _ = trace_branch(branch(body, "main"))
    eb, eg, _ = trace_branch(branch(orelse, "else"))
    outs = list(_C.make_if(cond, tb, tg, eb, eg, None))
    notify(outs)
    result = []
    for tree, dts in seen["main"]:
        result.append(tree.unflatten(outs[:len(dts)]))
        outs = outs[len(dts):]
    set_state(tuple(result) + init[nouts:])


# ---- loops -------------------------------------------------------------------------------
def loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None, shape_invariants=None):
    """TF's set_loop_options keywords, as the loop statement receives them."""
    return {"maximum_iterations": maximum_iterations, "shape_invariants": list(shape_invariants or [])}


def while_stmt(test, body, get_state, set_state, names, opts=None, has_else=False):
    c = test()
    if not symbolic(c):
        while c:
            body()
            c = test()
            if symbolic(c):
                raise NotImplementedError(_at_caller(
                    "The condition of while loop started as non-Tensor, then changed to Tensor. This may happen "
                    "either because variables changed type, or when a break or return statement inside the loop "
                    "depends on a Tensor condition. In both cases, changing to a TF loop should remove the error."))
        return
    if has_else:
        raise NotImplementedError(_at_caller("while/else statement not yet supported"))
    _tensor_while(test, body, get_state, set_state, names, opts)


def for_stmt(iterable, extra_test, body, get_state, set_state, names, opts=None, target=None, has_else=False):
    if _C.is_tracing() and hasattr(iterable, "__jf_graph_iterator__"):  # a jf.data.Dataset
        if has_else:
            raise NotImplementedError(_at_caller("for/else statement not yet supported"))
        return _dataset_for(iterable.__jf_graph_iterator__(), extra_test, body, get_state, set_state, names, opts)
    if symbolic(iterable):
        if has_else:
            raise NotImplementedError(_at_caller("for/else statement not yet supported"))
        bounds = _range_bounds(iterable)
        if bounds is not None:
            return _range_for(bounds, extra_test, body, get_state, set_state, names, opts, target)
        return _tensor_for(iterable, extra_test, body, get_state, set_state, names, opts)
    if extra_test is None:
        for item in iterable:
            body(item)
        return

    def go():
        ok = extra_test()
        if symbolic(ok):
            raise NotImplementedError(_at_caller(
                "break and return statements which depend on a TF condition are not supported in Python for "
                "loops. Did you intend to make it a TF loop?"))
        return ok
    # TF's order: the test before the first item and after each one, so a break on a tensor
    # condition is refused even in the last iteration
    if go():
        for item in iterable:
            body(item)
            if not go():
                break


def _range_bounds(x):
    """(start, limit, delta) when x is a jf.range of the graph being traced, else None."""
    ref = x._node_ref
    if ref is None or ref[0].op != "Range":
        return None
    return tuple(r.output(i) for r, i in ref[0].input_refs())


def _loop_test(more, extra_test):
    if extra_test is None:
        return more
    go = extra_test()
    return _ops.logical_and(more, go) if isinstance(go, _C.Tensor) else (more if go else go)


def _counted(get_state, set_state, first):
    """get_state/set_state with one more loop variable in front (a range loop's item, a
    tensor loop's row index), kept in a one-element list."""
    cell = [first]

    def get():
        return (cell[0],) + tuple(get_state())

    def set_(vals):
        cell[0] = vals[0]
        set_state(tuple(vals[1:]))
    return cell, get, set_


def _range_for(bounds, extra_test, body, get_state, set_state, names, opts, target):
    """for over a jf.range: a while loop over the item itself (TF's range loop), so the range
    is never materialized and the loop compiles whatever its bounds. An item never bound
    before starts at the range's start (TF's choice: no run-time check for an empty range)."""
    start, limit, delta = bounds

    def state():
        return tuple(cell[0] if n == target and is_undefined(v) else v for n, v in zip(names, get_state()))
    cell, get, set_ = _counted(state, set_state, start)

    def test():
        i, zero = cell[0], _ops.zeros([], delta.dtype)
        more = _ops.logical_or(_ops.logical_and(delta > zero, i < limit), _ops.logical_and(delta < zero, i > limit))
        return _loop_test(more, extra_test)

    def step():
        i = cell[0]
        body(i)
        cell[0] = i + delta

    _tensor_while(test, step, get, set_, ("<internal iterate>",) + tuple(names), opts)


def _tensor_for(x, extra_test, body, get_state, set_state, names, opts):
    """for over a symbolic tensor: a while loop over a row index k, the item x[k]."""
    if x.shape.rank == 0:
        raise TypeError(_at_caller("Cannot iterate over a scalar tensor."))
    n = x.shape[0]
    n = _ops.shape(x)[0] if n is None or n < 0 else _C.convert_to_tensor(int(n))
    cell, get, set_ = _counted(get_state, set_state, _C.convert_to_tensor(0))

    def step():
        k = cell[0]
        body(x[k])
        cell[0] = k + 1

    _tensor_while(lambda: _loop_test(cell[0] < n, extra_test), step, get, set_,
                  ("<internal iterate>",) + tuple(names), opts)


def _dataset_for(it, extra_test, body, get_state, set_state, names, opts):
    """for over a dataset in a traced function, as TF's: a while loop whose state carries
    whether an element was pulled and its components; each iteration runs the body on the
    element and pulls the next (the iterator's nodes come from the dataset: `it`)."""
    has, comps = it.next_flat()
    cell = [has, comps]
    n = len(comps)

    def get():
        return (cell[0],) + tuple(cell[1]) + tuple(get_state())

    def set_(vals):
        cell[0], cell[1] = vals[0], list(vals[1:1 + n])
        set_state(tuple(vals[1 + n:]))

    def step():
        body(it.tree.pack(cell[1]))
        cell[0], cell[1] = it.next_flat()

    # The components' invariants are the element spec's (a batch dim may change at the end).
    inv = [(c, tuple(s.shape)) for c, s in zip(comps, it.specs)]
    opts = dict(opts or {})
    opts["shape_invariants"] = list(opts.get("shape_invariants", [])) + inv
    _tensor_while(lambda: _loop_test(cell[0], extra_test), step, get, set_,
                  ("<internal has_value>",) + tuple(f"<internal element {i}>" for i in range(n)) + tuple(names), opts)


def _invariant(shape, like):
    """A shape invariant as a tuple of dims; TensorShape(None) (unknown rank) as every dim of
    like's rank unknown (jitflow's graphs know every tensor's rank)."""
    if getattr(shape, "rank", 0) is None or shape is None:
        return tuple(None for _ in _shape(like))
    shape = shape.as_list() if hasattr(shape, "as_list") else shape
    return tuple(dim(d) for d in shape)


def _fmt(shape):
    return "<unknown>" if shape is None else str(tuple(shape))


def _conforms(shape, invariant):
    return len(shape) == len(invariant) and all(i is None or i == d for d, i in zip(shape, invariant))


def _tensor_while(test, body, get_state, set_state, names, opts=None):
    """A jf.while_loop over the statement's state (TF's _tf_while_stmt): names not bound before
    the loop get a placeholder value from one staged iteration, and the loop must then run at
    least once (a run-time check)."""
    opts = opts or {}
    init = list(get_state())
    user_inv = {}
    for var, shape in opts.get("shape_invariants", []):
        # set_loop_options names a loop variable by its value before the loop, as TF matches it
        k = next((i for i, v in enumerate(init) if v is var), None)
        if k is None or not isinstance(var, _C.Tensor):
            raise ValueError(_at_caller(f"shape_invariants: {var!r} is not a loop variable holding one tensor"))
        user_inv[k] = _invariant(shape, var)
    nulls = [v is None or is_undefined(v) for v in init]
    required, leaf_inv = None, {}
    if any(nulls):
        init, leaf_inv, required = _handle_undefined(body, get_state, set_state, init, nulls, names)
    init = _resolve_arrays(body, get_state, set_state, init)

    flat, layout = [], []
    for v in init:
        leaves, tree = _flat_var(v)
        layout.append((tree, len(leaves)))
        flat.extend(leaves)
    specs = [(t.dtype, _shape(t)) for t in flat]
    invariants = [None] * len(flat)
    pos = 0
    for k, (_, count) in enumerate(layout):
        if k in user_inv:
            shape, have = user_inv[k], specs[pos][1]
            if not _conforms(have, shape):
                raise ValueError(_at_caller(f"'{names[k]}' has shape {have} before the loop, which does not "
                                            f"conform with the shape invariant {shape}."))
            for j in range(pos, pos + count):
                invariants[j] = shape if count == 1 else tuple(None for _ in specs[j][1])
        for j, shape in enumerate(leaf_inv.get(k, ())):
            invariants[pos + j] = shape
        pos += count
    entry = [inv if inv is not None else s for inv, (_, s) in zip(invariants, specs)]

    def unflat(ts):
        vals, ts = [], list(ts)
        for tree, k in layout:
            vals.append(tree.unflatten(ts[:k]))
            ts = ts[k:]
        return tuple(vals)

    def cond_fn(*ts):
        set_state(unflat(ts[1:] if required else ts))
        c = as_bool(test())
        _check_condition(c, "while loop")
        return c

    def body_fn(*ts):
        set_state(unflat(ts[1:] if required else ts))
        body()
        new = _check_iteration(get_state(), names, layout, specs, invariants, entry)
        return ([_C.convert_to_tensor(True)] if required else []) + new

    loop_vars = ([_C.convert_to_tensor(False)] if required else []) + flat
    shapes = ([()] if required else []) + [list(s) for s in entry]
    out = _cf.while_loop(cond_fn, body_fn, loop_vars, maximum_iterations=opts.get("maximum_iterations"),
                         shape_invariants=shapes if any(i is not None for i in invariants) else None)
    out = list(out)
    if required:
        _debugging.Assert(out[0], [f"loop must iterate at least once to initialize {required}"])
        out = out[1:]
    set_state(unflat(out))


def _check_iteration(out, names, layout, specs, invariants, entry):
    """The loop variables after one iteration, flat, with TF's checks against before."""
    new, pos = [], 0
    for n, v, (tree, k) in zip(names, out, layout):
        if v is None:
            raise ValueError(_at_caller(f"'{n}' is None at the end of the iteration."))
        leaves, t2 = ([], None) if is_undefined(v) else _flat_var(v)
        if t2 != tree:
            raise TypeError(_at_caller(f"'{n}' does not have the same nested structure after one iteration."))
        for j, t in enumerate(leaves, pos):
            dt, before = specs[j]
            if t.dtype != dt:
                raise TypeError(_at_caller(f"'{n}' has dtype {dt.name} before the loop, but dtype "
                                           f"{t.dtype.name} after one iteration"))
            if invariants[j] is not None and not _conforms(_shape(t), invariants[j]):
                raise ValueError(_at_caller(f"'{n}' has shape {_fmt(_shape(t))} after one iteration, which does "
                                            f"not conform with the shape invariant {_fmt(invariants[j])}."))
            if invariants[j] is None and not _conforms(_shape(t), entry[j]):
                raise ValueError(_at_caller(
                    f"'{n}' has shape {_fmt(before)} before the loop, but shape {_fmt(_shape(t))} after one "
                    f"iteration. Use tf.autograph.experimental.set_loop_options to set shape invariants."))
            new.append(t)
        pos += k
    return new


def _handle_undefined(body, get_state, set_state, init, nulls, names):
    """TF's rule for loop variables not bound (or None) before the loop: one iteration is
    staged in a throwaway trace to learn each one's structure, dtype and shape, and it enters
    the loop as zeros of that type (an unknown dim as 0, with an unknown dim in its shape
    invariant). The loop must then iterate at least once: (init, invariants, the names a
    run-time check reports; invariants per leaf) or TF's errors."""
    defined = [i for i, n in enumerate(nulls) if not n]
    flat, layout = [], []
    for i in defined:
        leaves, tree = _flat_var(init[i])
        layout.append((tree, len(leaves)))
        flat.extend(leaves)
    seen, failure = {}, None

    def probe(*ts):
        vals, ts = list(init), list(ts)
        for i, (tree, k) in zip(defined, layout):
            vals[i], ts = tree.unflatten(ts[:k]), ts[k:]
        set_state(tuple(vals))
        body()
        for i, v in enumerate(get_state()):
            if nulls[i] and v is not None and not is_undefined(v):
                leaves, tree = _flat_var(v)
                seen[i] = (tree, [(t.dtype, _shape(t)) for t in leaves])
        return []
    try:
        trace_branch(probe, [(t.dtype, _shape(t)) for t in flat], [f"loop_var_{k}" for k in range(len(flat))])
    except (UnboundLocalError, TypeError, ValueError, KeyError) as e:
        failure = f"Note: AutoGraph tried to define it automatically, but ran into a {type(e).__name__}: {e}"
    finally:
        set_state(tuple(init))
    init, invariants, labels = list(init), {}, []
    for i, null in enumerate(nulls):
        if not null:
            continue
        if isinstance(init[i], UndefinedReturnValue):
            if i in seen:
                labels.append("the function return value")
            else:
                raise NotImplementedError(_at_caller(
                    "a return statement cannot be placed inside this TensorFlow loop; this may happen if a "
                    "return statement depends on a static Python condition such as a hyperparameter"))
        elif i not in seen:
            what = "is not allowed to be None" if init[i] is None else "must be defined"
            raise ValueError(_at_caller(f"'{names[i]}' {what} before the loop" + (f"\n{failure}" if failure else "")))
        else:
            labels.append(names[i])
        tree, leaf_specs = seen[i]
        init[i] = tree.unflatten([_ops.zeros([0 if d is None else d for d in shape], dt) for dt, shape in leaf_specs])
        if any(None in shape for _, shape in leaf_specs):
            invariants[i] = [shape if None in shape else None for _, shape in leaf_specs]
    return init, invariants, ", ".join(labels)


def _resolve_arrays(body, get_state, set_state, init):
    """init with each traced TensorArray that has no element shape yet given the one its
    first write in a throwaway trace of one iteration gives it."""
    def step(*vals):
        set_state(vals)
        body()
        return list(get_state())
    try:
        return list(resolve_unshaped(step, list(init)))
    finally:
        set_state(tuple(init))

