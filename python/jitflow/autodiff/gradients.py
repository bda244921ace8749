"""jf.gradients: symbolic gradients inside a trace, with TF's naming and jit_scope rules.

Ops are named `<name>/<forward op>_grad/<Op>` (`gradients/compiled_grad/MatMul`), several
consumers' gradients are summed by an unmarked `<name>/AddN`, and the gradient ops of a
forward op with `_XlaCompile == True` are marked for compilation in its scope, or in
`<scope>_grad_<name>` under `separate_compiled_gradients=True` (docs/autodiff.md, 'Gradients of
compiled ops')."""
from .. import _C
from ..core.nest import flatten
from ..ops import basic_ops as ops
from ..ops.variables import Variable
from .backprop import aggregate, apply_gradient, unconnected_mode
from .registry import OpView, custom_site, unmarked_scope
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
        for ref, _ in _input_refs(node):
            if ref not in done:
                stack.append((ref, False))
    return order


def _input_refs(node):
    """The node's inputs; for a traced custom-gradient output (custom_gradient.py) also the
    call's inputs, which its gradient reaches directly."""
    refs = list(node.input_refs())
    if node.op == "Identity" and node.has_attr("_custom_gradient"):
        site = custom_site(node)
        if site is not None:
            refs += [t._node_ref for t in site.inputs if t._is_symbolic and t._node_ref is not None]
    return refs


def gradients(ys, xs, grad_ys=None, name="gradients", gate_gradients=False, aggregation_method=None,
              stop_gradients=None, unconnected_gradients="none"):
    """d(sum of ys)/d(x) for each x in xs, as symbolic tensors of the current trace.

    ys, xs: tensors (or lists); xs may hold jf.Variables (the sum over their reads).
    grad_ys: the initial gradients of ys (default ones). Returns a list with None for an x
    that ys do not depend on (or zeros with unconnected_gradients="zero").
    stop_gradients: tensors treated as constants (no gradient flows through them).
    gate_gradients and aggregation_method are accepted and ignored (a graph-scheduling hint)."""
    if not _C.is_tracing():
        raise RuntimeError(_EAGER_MESSAGE)
    ys = [_C.convert_to_tensor(y) for y in flatten(ys)]
    xs = flatten(xs)
    if grad_ys is not None:
        grad_ys = flatten(grad_ys)
        if len(grad_ys) != len(ys):
            raise ValueError(f"jf.gradients: {len(grad_ys)} grad_ys for {len(ys)} ys")
    unconnected_gradients = unconnected_mode(unconnected_gradients)
    with _C.name_scope(name or "gradients") as scope:
        grad_scope = scope.rstrip("/").replace("/", "_")
        stops = {_key(_C.convert_to_tensor(t)) for t in flatten(stop_gradients or [])}
        return _gradients(ys, xs, grad_ys, grad_scope, unconnected_gradients, stops)


def _key(t):
    ref = t._node_ref if t._is_symbolic else None
    return None if ref is None else (ref[0], ref[1])


def _gradients(ys, xs, grad_ys, grad_scope, unconnected, stops=frozenset()):
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
            x_keys.append([(n, 0) for n in order if n.op == "ReadVariableOp"
                           and n.get_attr("var_id") == x._id])
        else:
            k = _key(_C.convert_to_tensor(x)) if x is not None else None
            x_keys.append([] if k is None else [k])
    sources = {k for ks in x_keys for k in ks}
    stops = stops - sources

    # Ops between xs and ys: they depend on an x (and ys depend on them, by construction).
    between = set()
    groups = {}  # custom-gradient site -> its tagged output nodes, in topological order
    for node in order:
        if any((ref, i) in sources or (ref in between and (ref, i) not in stops)
               for ref, i in _input_refs(node)):
            between.add(node)
        if node.op == "Identity" and node.has_attr("_custom_gradient"):
            site = custom_site(node)
            if site is not None:
                groups.setdefault(site, []).append(node)
    custom = {n: site for site, nodes in groups.items() for n in nodes}

    for node in reversed(order):
        site = custom.get(node)
        if site is not None:
            # One gradient call for all outputs of the call, at its first output node: by
            # then every consumer of every output has contributed its gradient.
            if node is groups[site][0]:
                _custom_site_gradient(site, node, grads, sources, between, grad_scope, stops)
            continue
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
            if (ref, i) in sources or (ref in between and (ref, i) not in stops):
                grads.setdefault((ref, i), []).append(g)

    result = []
    for x, ks in zip(xs, x_keys):
        g = aggregate([g for k in ks for g in grads.get(k, [])])
        if g is None and unconnected == "zero" and x is not None:
            with unmarked_scope():
                g = ops.zeros_like(x.read_value() if isinstance(x, Variable) else x)
        result.append(g)
    return result


def _custom_site_gradient(site, node, grads, sources, between, grad_scope, stops):
    """The user's grad_fn of one traced custom-gradient call (custom_gradient.py), its input
    gradients added to the call's inputs (the args and the variables' reads)."""
    out_grads = []
    for y in site.outputs:
        gs = grads.get(_key(y))
        if gs is not None and len(gs) > 1:
            gs[:] = [aggregate(gs)]
        out_grads.append(gs[0] if gs else None)
    if all(g is None for g in out_grads):
        return
    op = OpView("CustomGradient", node.name, site.inputs, site.outputs, {"_site": site}, node)
    for x, g in zip(site.inputs, apply_gradient(op, out_grads, grad_scope)):
        k = _key(x) if x._is_symbolic else None
        if g is None or k is None or not is_float(x):
            continue
        if k in sources or (k[0] in between and k not in stops):
            grads.setdefault(k, []).append(g)
