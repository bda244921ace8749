"""Gradients through jf.cond (If nodes). Each branch's gradient is computed by replaying
the branch's graph inside a new jf.cond on the forward predicate and differentiating the
replay, so the gradient is itself an If node (TF's cond_v2 does the same with a backward
function per branch). While nodes (traced jf.while_loop) have no gradient: differentiate a
Python loop (unrolled when traced) or run the loop eagerly under a GradientTape."""
from .. import _C, ops
from ..control_flow import cond, while_loop
from .registry import register_gradient
from .shapes import is_float

_SKIPPED = {"PrintV2", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}
_RANDOM = {"RandomUniform", "RandomStandardNormal"}


def replay(graph, args, what):
    """Recreates a subgraph's ops in the current trace with `args` as its inputs; returns
    its outputs. Side effects (prints, assignments) are not repeated."""
    env = {}
    for ph, a in zip(graph.inputs(), args):
        env[(ph, 0)] = a
    for node in graph.nodes():
        t = node.op
        if t == "Placeholder" or t in _SKIPPED:
            continue
        if t == "Const":
            env[(node, 0)] = node.get_attr("value")
            continue
        if t in _RANDOM:
            raise NotImplementedError(
                f"Gradient of {what}: the branch samples random numbers ({t} '{node.name}'), "
                "which a replay would draw again; sample outside the jf.cond instead")
        inputs = [env[(r, i)] for r, i in node.input_refs()]
        if t == "If":
            outs = _replay_if(node, inputs, what)
        elif t == "While":
            outs = _replay_while(node, inputs, what)
        else:
            attrs = {k: node.get_attr(k) for k in node.attr if not k.startswith("_")}
            outs = _C.execute_n(_C.op_id(t), inputs, attrs, None)
        for i, o in enumerate(outs):
            env[(node, i)] = o
    return [env[(r, i)] for r, i in graph.outputs()]


def _replay_if(node, inputs, what):
    n_then = node.get_attr("num_then_inputs")
    tg, eg = node.subgraphs()
    return cond(inputs[0], lambda: replay(tg, inputs[1:1 + n_then], what),
                lambda: replay(eg, inputs[1 + n_then:], what))


def _replay_while(node, inputs, what):
    nv, nc = node.get_attr("num_loop_vars"), node.get_attr("num_cond_captures")
    cg, bg = node.subgraphs()
    loop_vars, cond_caps, body_caps = inputs[:nv], inputs[nv:nv + nc], inputs[nv + nc:]
    max_iter = node.get_attr("maximum_iterations")
    return while_loop(lambda *v: replay(cg, list(v) + cond_caps, what)[0],
                      lambda *v: replay(bg, list(v) + body_caps, what), list(loop_vars),
                      maximum_iterations=None if max_iter < 0 else max_iter)


@register_gradient("If")
def _if_grad(op, *grads):
    from .gradients import gradients
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
            pairs = [(o, g) for o, g in zip(outs, out_grads) if g is not None and is_float(o)]
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
    return [None] + list(res)


@register_gradient("While")
def _while_grad(op, *grads):
    raise NotImplementedError(
        f"jf.gradients: no gradient for While op '{op.name}' (a traced jf.while_loop). "
        "Differentiate a Python for-loop instead (it unrolls when traced), or run the loop "
        "eagerly under a jf.GradientTape")
