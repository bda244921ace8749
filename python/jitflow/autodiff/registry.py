"""The gradient registry: one entry per op type (TF op names), and the view of a forward op
that a gradient function receives.

A gradient function takes `(op, *output_grads)` and returns one gradient (or None) per
input of `op`, like TF's `@tf.RegisterGradient`. It builds its result from jf ops, so the
same function serves eager tapes, traced tapes and `jf.gradients`, and the ops it creates
trace, cluster and compile like any others.
"""
from .. import _C

# The op records (cpp/ir/ops.def) say which ops have a gradient and, for those that have
# none, why; this table holds the gradient functions, keyed by op type.
_RECORDS = {r["name"]: r for r in _C.op_records()}
_GRADIENTS = {}
# Op types without a gradient -> why: the records' no_grad(...) entries, and op types outside
# the records declared with not_differentiable().
_NOT_DIFFERENTIABLE = {n: r["grad_reason"] for n, r in _RECORDS.items() if not r["differentiable"]}

# The jit_scope attrs (docs/jit_scope.md, 'Attributes'): cleared around every gradient
# function, then set again for the gradient ops of compiled forward ops
# (docs/autodiff.md, 'Gradients of compiled ops').
JIT_ATTRS = ["_XlaCompile", "_XlaScope", "_XlaSeparateCompiledGradients"]


def register_gradient(op_type):
    """Decorator: `@register_gradient("MatMul") def _(op, grad): return [da, db]`."""
    def wrap(fn):
        if op_type in _GRADIENTS:
            raise KeyError(f"A gradient for op type '{op_type}' is already registered")
        if op_type in _NOT_DIFFERENTIABLE:
            raise KeyError(f"Op type '{op_type}' is not differentiable ({_NOT_DIFFERENTIABLE[op_type]}); "
                           "its record in cpp/ir/ops.def says so")
        _GRADIENTS[op_type] = fn
        return fn
    return wrap


def not_differentiable(*op_types, reason="declared not differentiable"):
    """Declares op types outside the op records whose inputs get no gradient (TF's
    ops.NotDifferentiable); the records' own ops say it in cpp/ir/ops.def."""
    for t in op_types:
        if t in _RECORDS:
            raise KeyError(f"Op type '{t}' has a record in cpp/ir/ops.def: say there whether it "
                           "is differentiable (kGrad or no_grad(reason))")
        if t in _GRADIENTS:
            raise KeyError(f"A gradient for op type '{t}' is already registered")
        _NOT_DIFFERENTIABLE[t] = reason


def not_differentiable_reason(op_type):
    """Why an op type has no gradient, or None when it has one (or is unknown)."""
    return _NOT_DIFFERENTIABLE.get(op_type)


def get_gradient_function(op_type):
    """The registered function, None for a non-differentiable op; LookupError if unknown."""
    if op_type in _NOT_DIFFERENTIABLE:
        return None
    fn = _GRADIENTS.get(op_type)
    if fn is None:
        raise LookupError(f"No gradient defined for op type: {op_type}")
    return fn


def has_gradient(op_type):
    return op_type in _GRADIENTS


def registered_op_types():
    return sorted(_GRADIENTS)


_MISSING = object()


class OpView:
    """What a gradient function sees of a forward op: `.type`, `.name`, `.inputs`,
    `.outputs` (jf.Tensors, eager or symbolic), `.get_attr(name, default)`, `.node`
    (the graph NodeRef for a traced op, None for an eager one) and `.skip_input_indices`
    (inputs whose gradient nobody needs: a gradient function may return None for them
    instead of computing it, as TF's MatMul gradient does)."""

    __slots__ = ("_attrs", "inputs", "name", "node", "outputs", "skip_input_indices", "type")

    def __init__(self, op_type, name, inputs, outputs, attrs=None, node=None, skip_input_indices=()):
        self.type = op_type
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self._attrs = attrs
        self.node = node
        self.skip_input_indices = skip_input_indices

    @classmethod
    def from_node(cls, node):
        inputs = [ref.output(i) for ref, i in node.input_refs()]
        outputs = [node.output(i) for i in range(node.num_outputs)]
        return cls(node.op, node.name, inputs, outputs, None, node)

    def get_attr(self, name, default=_MISSING):
        if self._attrs is not None:
            if name in self._attrs:
                return self._attrs[name]
        elif self.node is not None and self.node.has_attr(name):
            return self.node.get_attr(name)
        if default is _MISSING:
            raise ValueError(f"No attr named '{name}' in op {self.name} ({self.type})")
        return default

    def __repr__(self):
        return f"<OpView {self.name} type={self.type}>"


def grad_attr_scope(node, grad_scope):
    """The attr scope for the gradient ops of one forward op (docs/autodiff.md, 'Gradients
    of compiled ops'; TF's _MaybeCompile): a forward op with `_XlaCompile == True` gives its gradient ops
    `_XlaCompile=True` and its `_XlaScope`, or `<scope>_grad_<grad_scope>` when it has
    `_XlaSeparateCompiledGradients`; every other gradient op gets no jit attrs, even when
    the gradient call itself sits inside a jit_scope."""
    if node is None or not (node.has_attr("_XlaCompile") and node.get_attr("_XlaCompile")):
        return _C.attr_scope({}, JIT_ATTRS)
    scope = node.get_attr("_XlaScope") if node.has_attr("_XlaScope") else ""
    if isinstance(scope, bytes):
        scope = scope.decode()
    separate = (node.has_attr("_XlaSeparateCompiledGradients")
                and node.get_attr("_XlaSeparateCompiledGradients"))
    if separate:
        scope = f"{scope}_grad_{grad_scope}"
    return _C.attr_scope({"_XlaCompile": True, "_XlaScope": scope}, JIT_ATTRS)


def unmarked_scope():
    """Aggregation (AddN) and grad_ys ops: no jit attrs (docs/autodiff.md, 'Gradients of
    compiled ops')."""
    return _C.attr_scope({}, JIT_ATTRS)


# Traced custom-gradient calls: the _custom_gradient attr of a tagged Identity node -> its
# call site (custom_gradient.py), which holds the user's grad_fn for jf.gradients.
custom_sites = {}


def custom_site(node):
    """The _Site of a tagged Identity node (a traced custom-gradient output), else None."""
    if node.op != "Identity" or not node.has_attr("_custom_gradient"):
        return None
    return custom_sites.get(node.get_attr("_custom_gradient"))


def ops_flagged(flag):
    """The names of the ops whose record has `flag` ("stateful", "resource_access",
    "random_stream", "control_flow"): the record says which ops a rule covers, not a list here."""
    return frozenset(name for name, r in _RECORDS.items() if r[flag])
