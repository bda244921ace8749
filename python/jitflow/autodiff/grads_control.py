"""Gradients through jf.cond (If nodes) and traced jf.while_loop (While nodes).

If: each branch's gradient is computed by replaying the branch's graph inside a new jf.cond
on the forward predicate and differentiating the replay, so the gradient is itself an If
node (TF's cond_v2 does the same with a backward function per branch).

While: the forward While node cannot be changed to keep its per-iteration values (TF's
while_v2 rewrites it to push them onto accumulators), so the gradient builds two loops
from jf ops, both marked with the attr `_WhileGradientLoop`:
  1. a forward replay of the loop (same cond, body and maximum_iterations) that also counts
     the iterations n and appends, before every iteration, the value of each loop var that
     the differentiated outputs read to an accumulator [capacity >= n, *shape] (a
     TensorArrayWrite at row i: in place, the capacity doubling);
  2. a backward loop for k = n-1 .. 0 that reads iteration k's values from the accumulators
     (TensorArrayRead of row k), replays the body on them and on identity copies of the body
     captures, and calls jf.gradients on the replay with the
     current loop-var cotangents as grad_ys: the results are the next cotangents and this
     iteration's contribution to the captures' gradients, summed over iterations.
Which loop vars carry a cotangent, which are saved and which captures get a gradient comes
from the body graph's dependencies (to a fixed point over iterations), so a loop var or
capture that cannot reach the differentiated outputs gets None and costs nothing.
A loop var that is a TensorArray buffer the body only overwrites is not saved (its value is
never read; the replay gets a stand-in of its shape, and for a growing array its row count is
saved instead: grads_tensor_array.py).
Costs: one extra forward pass (the replay) plus one body replay per backward iteration; each
save and read copies one value (O(n) element copies over n iterations). Float loop vars and
float body captures get gradients; int/bool ones and cond captures get None. Not supported,
with a NotImplementedError naming the op: saved loop vars whose shape may change across
iterations (a shape invariant relaxing a dim the initial value knows), second-order gradients
(the gradient loops' accumulators change shape), and random ops in the body.

Variables: tracing makes a variable accessed inside a branch or body an input of the If/While
node (cpp/tracing/func_builder.cc): a variable only read there is read once before the node
and captured, so its gradient is a capture's; a variable written there gets a port, its value
before the node, from which the replays (replay.py) track its value through the branch or the
iterations (in the While gradient, as more loop state, saved per iteration like a loop var),
and to which they give the gradients of its reads."""
from .. import _C
from ..core import dtypes
from ..ops import basic_ops as ops
from ..tracing import jit_context
from ..tracing.control_flow import cond, while_loop
from ..tracing.tensor_array import _GROW
from . import grads_tensor_array as ta_grads
from .gradients import gradients
from .registry import register_gradient, unmarked_scope
from .replay import _ASSIGNS, VariableState, replay, written_variables
from .shapes import fill_like, is_float, static_shape

# Marks the While nodes built by a While gradient (the attr scope stops at their bodies).
_GRAD_LOOP = "_WhileGradientLoop"


@register_gradient("If")
def _if_grad(op, *grads):
    node = op.node
    pred, inputs = op.inputs[0], op.inputs[1:]
    n_then = op.get_attr("num_then_inputs")
    tg, eg = node.subgraphs()
    out_grads = [None if not is_float(y) else (ops.zeros_like(y) if g is None else g)
                 for g, y in zip(grads, op.outputs)]
    what = f"jf.cond '{op.name}'"

    def branch(graph, lo, hi):
        def fn():
            own = [ops.identity(x) for x in inputs[lo:hi]]
            outs = replay(graph, own, what)
            pairs = [(o, g) for o, g in zip(outs, out_grads)
                     if g is not None and is_float(o) and _may_run_with(o, g)]
            targets = [j for j in range(lo, hi) if is_float(inputs[j])]
            dxs = {}
            if pairs and targets:
                res = gradients([o for o, _ in pairs], [own[j - lo] for j in targets],
                                grad_ys=[g for _, g in pairs])
                dxs = dict(zip(targets, res))
            return [None if not is_float(x) else
                    (dxs[j] if dxs.get(j) is not None else ops.zeros_like(x))
                    for j, x in enumerate(inputs)]
        return fn

    res = cond(pred, branch(tg, 0, n_then), branch(eg, n_then, len(inputs)))
    # The cond's outputs know only the dims both branches give; each gradient has its input's
    # shape (TF sets a gradient's static shape to its input's), so a sum of gradients of one
    # input compiles with the shape its other terms know.
    return [None] + [g if g is None else _with_static_shape(g, x) for g, x in zip(res, inputs)]


def _with_static_shape(g, x):
    """g, reshaped to x's static shape when x knows dims that g does not."""
    xs = static_shape(x)
    if xs is None or static_shape(g) == xs:
        return g
    return ops.reshape(g, list(xs))


def _may_run_with(o, g):
    """Whether this branch's output o may be the If output whose gradient is g: their static
    shapes agree. A gradient made with the shape the other branch gives (a replay with one
    call's shapes) tells that this branch does not run, and gives it no gradient to pass."""
    gs, os_ = list(g.shape), list(o.shape)
    return len(gs) == len(os_) and all(a is None or b is None or a == b for a, b in zip(gs, os_))


def _inputs_reaching(graph, positions):
    """Indices of `graph`'s inputs that its outputs at `positions` depend on. A variable read
    depends on what the graph's writes of that variable depend on: their values reach it."""
    index = {ph: i for i, ph in enumerate(graph.inputs())}
    writers = {}  # variable id -> the nodes of graph that write it
    for node in graph.nodes():
        if node.op in _ASSIGNS:
            writers.setdefault(node.get_attr("var_id"), []).append(node)
        elif node.op in ("If", "While"):
            for v in written_variables(node):
                writers.setdefault(v, []).append(node)
    outs = graph.outputs()
    stack, seen = [outs[p][0] for p in positions], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(ref for ref, _ in node.input_refs())
        if node.op == "ReadVariableOp":
            stack.extend(writers.get(node.get_attr("var_id"), ()))
    return sorted(index[n] for n in seen if n in index)


def _ports(graph, first):
    """{variable id: input index} of graph's inputs marked `_variable_port`, from `first` on."""
    return {ph.get_attr("_variable_port"): i for i, ph in enumerate(graph.inputs())
            if i >= first and ph.has_attr("_variable_port")}


def _compiled(op):
    """Whether the loop's replays will be compiled code: traced in a jit_compile=True function,
    or marked for compilation by a jit_scope."""
    return jit_context.compiles_whole() or bool(op.get_attr("_XlaCompile", False))


def _shape_may_change(invariant, initial):
    """True when a loop var's shape invariant relaxes a dim its initial value knows."""
    invariant, initial = tuple(invariant), tuple(initial)
    return len(invariant) != len(initial) or any(
        d is None and i is not None for d, i in zip(invariant, initial))


@register_gradient("While")
def _while_grad(op, *grads):
    """Replays the loop forward, saving each iteration's values, then runs it backward."""
    node = op.node
    nv, nc = op.get_attr("num_loop_vars"), op.get_attr("num_cond_captures")
    max_iter = op.get_attr("maximum_iterations")
    loop_vars = list(op.inputs[:nv])
    cond_caps, body_caps = list(op.inputs[nv:nv + nc]), list(op.inputs[nv + nc:])
    what = f"jf.while_loop '{op.name}'"
    if op.get_attr(_GRAD_LOOP, False):
        raise NotImplementedError(
            f"Gradient of While op '{op.name}': it is a loop built by the gradient of a traced "
            "jf.while_loop, and second-order gradients through a traced jf.while_loop are not "
            "supported (its saved values change shape across iterations). Differentiate a "
            "Python loop (it unrolls when traced) for higher derivatives")
    cg, bg = node.subgraphs()
    # Variables the loop writes: their values are more loop state of the replays, starting from
    # the body's ports (the values before the loop); a float variable's port gets the gradient
    # of the body's reads of it, summed over iterations.
    written = written_variables(node)
    ports = _ports(bg, nv)
    for v in written:
        if v not in ports:
            raise NotImplementedError(f"Gradient of {what}: its condition writes a variable (id {v})")
    starts = [body_caps[ports[v] - nv] for v in written]
    # Which body inputs (loop vars, then captures) each body output depends on.
    deps = [set(_inputs_reaching(bg, [j])) for j in range(nv)]
    # fvars: the float loop vars that carry a cotangent: those whose output has a gradient,
    # and, to a fixed point, the float loop vars those outputs depend on. Any other loop var
    # does not reach the differentiated outputs in any number of iterations (gradient None).
    fvars = {j for j in range(nv) if grads[j] is not None and is_float(loop_vars[j])}
    while True:
        more = {k for j in fvars for k in deps[j] if k < nv and is_float(loop_vars[k])} - fvars
        if not more:
            break
        fvars |= more
    fvars = sorted(fvars)
    reached = set().union(*(deps[j] for j in fvars)) if fvars else set()
    # Loop vars whose pre-iteration values those outputs read (any dtype): saved, one
    # accumulator each ([iterations, *shape]); the others are never read by the replay.
    saved = sorted(j for j in reached if j < nv)
    write_only = ta_grads.write_only_loop_vars(bg, nv)
    unsaved = [j for j in saved if j in write_only]  # TensorArrays only overwritten: see bwd_body
    saved = [j for j in saved if j not in unsaved]
    grown = [j for j in unsaved if write_only[j] == _GROW]  # dynamic arrays: their row counts saved
    port_caps = {ports[v] - nv for v in written}
    fcaps = [c for c in range(len(body_caps)) if (nv + c in reached or c in port_caps)
             and is_float(body_caps[c]) and nv + nc + c not in op.skip_input_indices]
    no_grad = [None] * len(op.inputs)
    if not fvars:
        return no_grad
    invariants = [list(ph.output(0).shape) for ph in bg.inputs()[:nv]]
    for j in saved:
        if _shape_may_change(invariants[j], loop_vars[j].shape):
            raise NotImplementedError(
                f"Gradient of While op '{op.name}' (a traced jf.while_loop): loop var {j} has "
                f"shape invariant {_fmt(invariants[j])} but starts with shape "
                f"{_fmt(loop_vars[j].shape)}; the gradient saves every iteration's value of the "
                "loop vars it needs and does not support ones whose shape changes across "
                "iterations")
    acc_invariants = ([[None] + invariants[j] for j in saved] + [[None] for _ in grown]
                      + [[None] + list(v.shape) for v in starts])
    value_invariants = [list(v.shape) for v in starts]
    nw = len(written)

    # (1) Forward replay: the same loop, counting its iterations and appending the value
    # each saved loop var and each written variable has before every iteration to its
    # accumulator.
    def fwd_cond(i, *rest):
        state = VariableState(dict(zip(written, rest[nv:nv + nw])))
        return replay(cg, list(rest[:nv]) + cond_caps, what, state)[0]

    def fwd_body(i, *rest):
        vals, values, accs = list(rest[:nv]), list(rest[nv:nv + nw]), rest[nv + nw:]
        state = VariableState(dict(zip(written, values)))
        new_vals = replay(bg, vals + body_caps, what, state)
        new_accs = [push(a, i, vals[j]) for a, j in zip(accs, saved)]
        new_accs += [push(a, i, ta_grads.rows(vals[j])) for a, j in zip(accs[len(saved):], grown)]
        new_accs += [push(a, i, v) for a, v in zip(accs[len(saved) + len(grown):], values)]
        return [i + 1] + list(new_vals) + [state.values[v] for v in written] + new_accs

    limit = None if max_iter < 0 else max_iter
    if _compiled(op):
        # In compiled code a first replay only counts the iterations, and the accumulators are
        # made that size: fixed-size writes let the saving replay run whole as one compiled
        # loop, where a doubling buffer (a loop var changing shape) sent every iteration back
        # to the executor. Outside compiled code one replay with doubling buffers costs less.
        def count_body(i, *rest):
            state = VariableState(dict(zip(written, rest[nv:nv + nw])))
            new_vals = replay(bg, list(rest[:nv]) + body_caps, what, state)
            return [i + 1] + list(new_vals) + [state.values[v] for v in written]

        with _C.attr_scope({_GRAD_LOOP: True}):
            rows = while_loop(fwd_cond, count_body, [ops.constant(0, dtypes.int32)] + loop_vars + starts,
                              shape_invariants=[[]] + invariants + value_invariants, maximum_iterations=limit)[0]
        push = ta_grads.push_fixed
        lead = ops.reshape(rows, [1])
        empty = [ops.zeros(ops.concat([lead, ops.shape(loop_vars[j], out_type=dtypes.int32)], 0), loop_vars[j].dtype)
                 for j in saved]
        empty += [ops.zeros(lead, dtypes.int32) for _ in grown]
        empty += [ops.zeros(ops.concat([lead, ops.shape(v, out_type=dtypes.int32)], 0), v.dtype) for v in starts]
    else:
        push = ta_grads.push
        empty = [ops.expand_dims(loop_vars[j], 0)[:0] for j in saved]  # [0, *shape]
        empty += [ops.zeros([0], dtypes.int32) for _ in grown]
        empty += [ops.expand_dims(v, 0)[:0] for v in starts]
    with _C.attr_scope({_GRAD_LOOP: True}):
        fwd = while_loop(fwd_cond, fwd_body, [ops.constant(0, dtypes.int32)] + loop_vars + starts + empty,
                         shape_invariants=[[]] + invariants + value_invariants + acc_invariants,
                         maximum_iterations=limit)
    n, accs = fwd[0], list(fwd[1 + nv + nw:])

    # (2) Backward: iterations n-1 .. 0, each popping its saved values from the accumulators,
    # replaying the body on them and differentiating the replay with the current cotangents.
    nf, ncap = len(fvars), len(fcaps)
    # The cotangents and sums keep their forward values' shapes, which a gradient may know less
    # well (unbroadcasting reshapes to a shape read at run time).
    cot_shapes = [_backward_invariant(invariants[j]) for j in fvars]
    sum_shapes = [_backward_invariant(body_caps[c].shape) for c in fcaps]
    cots0 = [_restore_shape(_zeros(op.outputs[j]) if grads[j] is None else grads[j], shape)
             for j, shape in zip(fvars, cot_shapes)]
    sums0 = [_zeros(body_caps[c]) for c in fcaps]

    def bwd_body(k, *rest):
        cots, sums, stacks = list(rest[:nf]), list(rest[nf:nf + ncap]), rest[nf + ncap:]
        vals = {j: ta_grads.peek(a, n, k - 1) for j, a in zip(saved, stacks)}
        # An only-overwritten array's value is never read: its initial value stands in (same
        # shape), or for a growing one a view of the final buffer with that iteration's rows.
        vals.update({j: ops.identity(loop_vars[j]) for j in unsaved})
        vals.update({j: ta_grads.stand_in(op.outputs[j], ta_grads.peek(a, n, k - 1))
                     for j, a in zip(grown, stacks[len(saved):])})
        own = [vals.get(j, loop_vars[j]) for j in range(nv)]  # unsaved ones are never read
        values = [ta_grads.peek(a, n, k - 1) for a in stacks[len(saved) + len(grown):]]
        caps = list(body_caps)
        for c in fcaps:
            caps[c] = ops.identity(caps[c])
        outs = replay(bg, own + caps, what, VariableState(dict(zip(written, values))))
        targets = [j for j in fvars if j in vals]
        xs = [vals[j] for j in targets] + [caps[c] for c in fcaps]
        res = gradients([outs[j] for j in fvars], xs, grad_ys=cots) if xs else []
        dv = dict(zip(targets, res))
        new_cots = [ops.zeros_like(cot) if dv.get(j) is None else _restore_shape(dv[j], shape)
                    for j, cot, shape in zip(fvars, cots, cot_shapes)]
        new_sums = [s if g is None else _restore_shape(s + g, shape)
                    for s, g, shape in zip(sums, res[len(targets):], sum_shapes)]
        return [k - 1] + new_cots + new_sums + list(stacks)

    with _C.attr_scope({_GRAD_LOOP: True}):
        bwd = while_loop(lambda k, *rest: k > 0, bwd_body, [n] + cots0 + sums0 + accs,
                         shape_invariants=[[]] + cot_shapes + sum_shapes + acc_invariants)
    result = no_grad
    for i, j in enumerate(fvars):
        result[j] = bwd[1 + i]
    for i, c in enumerate(fcaps):
        result[nv + nc + c] = bwd[1 + nf + i]
    return result


def _backward_invariant(shape):
    """A backward loop var's shape invariant: its forward value's shape when _restore_shape can
    give a gradient that shape (one unknown dim at most, none of the known ones zero), else
    only its rank."""
    shape = list(shape)
    if sum(d is None for d in shape) <= 1 and 0 not in shape:
        return shape
    return [None] * len(shape)


def _restore_shape(g, shape):
    """g with the static shape `shape` (from _backward_invariant) where it knows less."""
    if all(d is None or d == e for d, e in zip(shape, g.shape)):
        return g
    return ops.reshape(g, [-1 if d is None else d for d in shape])


def _zeros(t):
    """Zeros of t's shape and dtype, unmarked: they only start the gradient loops."""
    with unmarked_scope():
        return fill_like(t, 0)


def _fmt(shape):
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"
