"""jf.cond and jf.while_loop: Python control flow eagerly, If/While graph nodes when traced
(each branch or loop body traced once into its own graph)."""
import operator

from .. import _C
from .._C import Tensor
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError, _at_caller
from ..core.nest import flatten_outputs
from ..core.shapes import dim
from ..ops import basic_ops as ops
from .subgraph import notify, trace_branch
from .tensor_array import TensorArray as _TensorArray
from .tensor_array import give_buffers, resolve_unshaped


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Calls true_fn() if pred else false_fn(); traced, both branches become one If node."""
    if true_fn is None or false_fn is None:
        raise TypeError("jf.cond requires both true_fn and false_fn")
    if not (isinstance(pred, Tensor) and pred._is_symbolic):
        return true_fn() if _known_pred(pred) else false_fn()
    results = {}

    def keep(fn, key, like=None):
        def run():
            out = fn() if like is None else give_buffers(fn(), like)
            results[key] = out
            return out
        return run
    tb, tg, ttree = trace_branch(keep(true_fn, True))
    eb, eg, etree = trace_branch(keep(false_fn, False))
    if ttree != etree:  # a TensorArray one branch writes first: the other's gets its buffer
        t_out, f_out = results[True], results[False]
        tb, tg, ttree = trace_branch(keep(true_fn, True, f_out))
        eb, eg, etree = trace_branch(keep(false_fn, False, t_out))
    if ttree != etree:
        raise ValueError(f"jf.cond: true_fn and false_fn must return the same structure, got "
                         f"{ttree} and {etree}")
    outs = _C.make_if(pred, tb, tg, eb, eg, name)
    notify(outs)
    return ttree.unflatten(outs)


def _known_pred(pred):
    """The truth of a predicate known now. TF converts it to a tensor: traced, anything but a
    bool is its InvalidArgumentError ("passed int32 expected bool"); eagerly TF takes the truth
    of any scalar, but a string (a string tensor in TF, no tensor here) is refused in both modes
    rather than read as Python truthiness, and None cannot be converted (TF's ValueError)."""
    if isinstance(pred, (str, bytes)):
        raise InvalidArgumentError(_at_caller(f"jf.cond: the predicate must be a scalar bool tensor, got the "
                                              f"string {pred!r}"))
    if pred is None:
        raise ValueError(_at_caller("jf.cond: attempt to convert a value (None) with an unsupported type "
                                    "(<class 'NoneType'>) to a Tensor"))
    t = pred if isinstance(pred, Tensor) else _C.convert_to_tensor(pred)
    if _C.is_tracing() and t.dtype != _dt.bool:
        got = f"{t.dtype.name}{list(t.shape)}".replace(" ", "")
        raise InvalidArgumentError(_at_caller(f"jf.cond: the predicate must be a scalar bool tensor, got {got}"))
    return bool(t)


def while_loop(cond, body, loop_vars, shape_invariants=None, maximum_iterations=None, name=None):
    """Repeats body while cond is true; traced, one While node whose body runs in C++."""
    single = not isinstance(loop_vars, (list, tuple))
    single = single or isinstance(loop_vars, _TensorArray)  # a traced array is a namedtuple, one value
    vars_ = [loop_vars] if single else list(loop_vars)
    if isinstance(maximum_iterations, Tensor) or (_C.is_tracing() and hasattr(maximum_iterations, "__jf_tensor__")):
        bound = _C.convert_to_tensor(maximum_iterations)  # converted once: a variable is read once
        if bound._is_symbolic:
            return _while_with_tensor_bound(cond, body, vars_, single, loop_vars, shape_invariants, bound, name)
        if bound.dtype in (_dt.int32, _dt.int64):
            maximum_iterations = int(bound)  # an eager tensor: its value
    if maximum_iterations is not None:
        # TF: an int32 scalar, and the loop runs while i < maximum_iterations, so a negative
        # bound runs no iteration (-1 was the traced loop's "no bound": it ran to the end).
        try:
            maximum_iterations = min(max(0, operator.index(maximum_iterations)), 2**63 - 1)
        except TypeError:
            raise TypeError(_at_caller(f"jf.while_loop: maximum_iterations must be an integer, got "
                                       f"{maximum_iterations!r}")) from None
    if not _C.is_tracing():
        i = 0
        while bool(cond(*vars_)) and (maximum_iterations is None or i < maximum_iterations):
            out = body(*vars_)
            vars_ = [out] if single or not isinstance(out, (list, tuple)) else list(out)
            i += 1
        return vars_[0] if single else type(loop_vars)(vars_)
    if any(isinstance(v, _TensorArray) for v in vars_):  # arrays travel as their tensors
        return _while_with_arrays(cond, body, vars_, single, loop_vars, shape_invariants, maximum_iterations, name)
    tensors = [_C.convert_to_tensor(v) for v in vars_]
    specs = [(t.dtype, list(t.shape)) for t in tensors]
    if shape_invariants is not None:
        inv = [shape_invariants] if single else list(shape_invariants)
        # TF's TensorShape rules: None or an int >= 0
        specs = [(dt, [dim(d) for d in s]) for (dt, _), s in zip(specs, inv)]
    names = [f"loop_var_{i}" for i in range(len(tensors))]
    cb, cg, _ = trace_branch(cond, specs, names)

    def body_flat(*a):
        out = body(*a)
        return list(out) if isinstance(out, (list, tuple)) else [out]
    bb, bg, _ = trace_branch(body_flat, specs, names)
    invariants = [list(s) for _, s in specs] if shape_invariants is not None else []
    max_iter = -1 if maximum_iterations is None else int(maximum_iterations)
    outs = _C.make_while(tensors, cb, cg, bb, bg, max_iter, name, invariants)
    notify(outs)
    return outs[0] if single else type(loop_vars)(outs)


def _while_with_tensor_bound(cond, body, vars_, single, loop_vars, shape_invariants, bound, name):
    """A traced while_loop whose maximum_iterations is a tensor known only at run time: TF's
    form, a counter loop var and the cond `i < maximum_iterations and cond(...)`."""
    if bound.shape.rank != 0:
        raise ValueError(_at_caller(f"jf.while_loop: maximum_iterations must be a scalar, saw shape: "
                                    f"{bound.shape}"))
    if bound.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(_at_caller(f"jf.while_loop: maximum_iterations must be an int32 or int64 "
                                   f"tensor, got {bound.dtype.name}"))

    def counted_cond(i, *v):
        return ops.logical_and(i < bound, cond(*v))

    def counted_body(i, *v):
        out = body(*v)
        return [i + 1] + ([out] if single or not isinstance(out, (list, tuple)) else list(out))
    invariants = None
    if shape_invariants is not None:
        invariants = [[]] + ([shape_invariants] if single else list(shape_invariants))
    outs = while_loop(counted_cond, counted_body, [ops.zeros([], bound.dtype)] + vars_,
                      shape_invariants=invariants, name=name)[1:]
    return outs[0] if single else type(loop_vars)(outs)


# ---- jf.TensorArray loop vars (tensor_array.py) ---------------------------------------------
def _while_with_arrays(cond, body, vars_, single, loop_vars, shape_invariants, maximum_iterations, name):
    """A traced while_loop whose loop vars hold TensorArrays: each is flattened to its buffer and
    size, the loop runs over the flat tensors and cond/body see rebuilt arrays."""
    vars_ = resolve_unshaped(body if not single else (lambda *v: [body(*v)]), vars_)
    flat, tree = flatten_outputs(list(vars_))
    invariants = None
    if shape_invariants is not None:  # an array keeps its tensors' shapes; others as given
        inv = [shape_invariants] if single else list(shape_invariants)
        invariants = []
        for v, s in zip(vars_, inv):
            leaves, _ = flatten_outputs(v)
            invariants.extend([list(t.shape) for t in leaves] if isinstance(v, _TensorArray) else [s])

    def flat_body(*ts):
        out = body(*tree.unflatten(list(ts)))
        out = [out] if single or not isinstance(out, (list, tuple)) else list(out)
        leaves, out_tree = flatten_outputs(out)
        if out_tree != tree:
            raise ValueError(_at_caller(f"jf.while_loop: the body must return the structure of loop_vars, "
                                        f"{tree}, got {out_tree}"))
        return leaves
    outs = while_loop(lambda *ts: cond(*tree.unflatten(list(ts))), flat_body, flat,
                      shape_invariants=invariants, maximum_iterations=maximum_iterations, name=name)
    result = tree.unflatten(list(outs))
    return result[0] if single else type(loop_vars)(result)


class control_dependencies:
    """Ops created inside run after `control_inputs` (tensors or ops returning them).
    Eagerly a no-op: eager ops already run in program order."""

    def __init__(self, control_inputs):
        self._deps = [d for d in (control_inputs or []) if d is not None]
        self._n = 0

    def __enter__(self):
        tensors, nodes = [], 0
        for d in self._deps:
            if hasattr(d, "_jf_control_node"):  # an op without outputs (a traced Assert)
                nodes += _C.push_control_node(d._jf_control_node)
                continue
            if hasattr(d, "read_value"):  # an assign returns the variable
                d = d.read_value()
            tensors.append(_C.convert_to_tensor(d))
        self._n = nodes + _C.push_control_deps(tensors)
        return self

    def __exit__(self, *exc):
        _C.pop_control_deps(self._n)
        return False
