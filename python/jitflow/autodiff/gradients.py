"""jf.gradients: symbolic gradients inside a trace, with TF's naming and jit_scope rules.

Ops are named `<name>/<forward op>_grad/<Op>` (`gradients/compiled_grad/MatMul`), several
consumers' gradients are summed by an unmarked `<name>/AddN`, and the gradient ops of a
forward op with `_XlaCompile == True` are marked for compilation in its scope, or in
`<scope>_grad_<name>` under `separate_compiled_gradients=True` (docs/autodiff.md, 'Gradients of
compiled ops')."""
from .. import _C, ops
from ..variables import Variable
from .backprop import aggregate, apply_gradient, flatten
from .registry import OpView, unmarked_scope
from .shapes import fill_like, is_float

_EAGER_MESSAGE = ("jf.gradients is not supported when eager execution is enabled. "
                  "Use jf.GradientTape instead.")


def _topo_order(roots):
    """Nodes that the root nodes depend on, inputs before consumers (iterative DFS)."""
    order, done, stack = [], set(), [(r, False) for r in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in done:
            continue
        done.add(node)
        stack.append((node, True))
        for ref, _ in node.input_refs():
            if ref not in done:
                stack.append((ref, False))
    return order


def gradients(ys, xs, grad_ys=None, name="gradients", unconnected_gradients="none"):
    """d(sum of ys)/d(x) for each x in xs, as symbolic tensors of the current trace.

    ys, xs: tensors (or lists); xs may hold jf.Variables (the sum over their reads).
    grad_ys: the initial gradients of ys (default ones). Returns a list with None for an x
    that ys do not depend on (or zeros with unconnected_gradients="zero")."""
    if not _C.is_tracing():
        raise RuntimeError(_EAGER_MESSAGE)
    ys = [_C.convert_to_tensor(y) for y in flatten(ys)]
    xs = flatten(xs)
    if grad_ys is not None:
        grad_ys = flatten(grad_ys)
        if len(grad_ys) != len(ys):
            raise ValueError(f"jf.gradients: {len(grad_ys)} grad_ys for {len(ys)} ys")
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError("unconnected_gradients must be 'none' or 'zero'")
    with _C.name_scope(name or "gradients") as scope:
        grad_scope = scope.rstrip("/").replace("/", "_")
        return _gradients(ys, xs, grad_ys, grad_scope, unconnected_gradients)


def _key(t):
    ref = t._node_ref if t._is_symbolic else None
    return None if ref is None else (ref[0], ref[1])


def _read_inside_control_flow(order, var):
    """The If/While node among `order` whose branch or body reads `var`, else None."""
    def reads(graph):
        return any((n.op == "ReadVariableOp" and n.get_attr("var_id") == var._id)
                   or any(reads(g) for g in n.subgraphs()) for n in graph.nodes())
    return next((n for n in order if n.op in ("If", "While") and any(reads(g) for g in n.subgraphs())),
                None)


def check_variable_reads(order, var):
    """A read inside a cond branch or loop body is not an input of the If/While node, so no
    gradient could reach it: say so instead of returning None."""
    node = _read_inside_control_flow(order, var)
    if node is not None:
        raise NotImplementedError(
            f"Gradient with respect to variable '{var.name}': it is read inside the "
            f"{'jf.cond' if node.op == 'If' else 'jf.while_loop'} '{node.name}' ({node.op}), "
            "whose gradient cannot reach a read in its body. Read the variable before it "
            "(w = v.read_value()) and use w inside")


def _gradients(ys, xs, grad_ys, grad_scope, unconnected):
    grads = {}  # (node, output index) -> list of gradients
    with unmarked_scope():
        for i, y in enumerate(ys):
            k = _key(y)
            if k is None or not is_float(y):
                continue
            if grad_ys is None or grad_ys[i] is None:
                g = fill_like(y, 1, f"grad_ys_{i}")  # TF's default grad_ys
            else:
                g = _C.convert_to_tensor(grad_ys[i], y.dtype)
            grads.setdefault(k, []).append(g)
    order = _topo_order([k[0] for k in grads])

    # Each x as a list of (node, index) keys; a Variable is the sum over its reads.
    x_keys = []
    for x in xs:
        if isinstance(x, Variable):
            check_variable_reads(order, x)
            x_keys.append([(n, 0) for n in order if n.op == "ReadVariableOp"
                           and n.get_attr("var_id") == x._id])
        else:
            k = _key(_C.convert_to_tensor(x)) if x is not None else None
            x_keys.append([] if k is None else [k])
    sources = {k for ks in x_keys for k in ks}

    # Ops between xs and ys: they depend on an x (and ys depend on them, by construction).
    between = set()
    for node in order:
        if any((ref, i) in sources or ref in between for ref, i in node.input_refs()):
            between.add(node)

    for node in reversed(order):
        if node not in between:
            continue
        out_grads = []
        for i in range(node.num_outputs):
            gs = grads.get((node, i))
            if gs is not None and len(gs) > 1:
                gs[:] = [aggregate(gs)]
            out_grads.append(gs[0] if gs else None)
        if all(g is None for g in out_grads):
            continue
        op = OpView.from_node(node)
        op.skip_input_indices = tuple(
            k for k, (ref, i) in enumerate(node.input_refs())
            if not ((ref, i) in sources or ref in between))
        in_grads = apply_gradient(op, out_grads, grad_scope)
        for (ref, i), x, g in zip(node.input_refs(), op.inputs, in_grads):
            if g is None or not is_float(x):
                continue
            if (ref, i) in sources or ref in between:
                grads.setdefault((ref, i), []).append(g)

    result = []
    for x, ks in zip(xs, x_keys):
        g = aggregate([g for k in ks for g in grads.get(k, [])])
        if g is None and unconnected == "zero" and x is not None:
            with unmarked_scope():
                g = ops.zeros_like(x.read_value() if isinstance(x, Variable) else x)
        result.append(g)
    return result
