"""Graph introspection in TF's shapes: FuncGraph.get_operations(), Operation (.name, .type,
.inputs, .outputs, .get_attr, .node_def) and the symbolic tensors between operations."""
from . import graph_display
from .graph_def import graph_def_of
from .shapes import TensorShape


class GraphTensor:
    """An edge of a traced graph: output `value_index` of `op`."""

    def __init__(self, op, value_index):
        self.op = op
        self.value_index = value_index

    @property
    def name(self):
        return f"{self.op.name}:{self.value_index}"

    @property
    def dtype(self):
        return self.op._ref.output_spec(self.value_index)[0]

    @property
    def shape(self):
        return TensorShape(self.op._ref.output_spec(self.value_index)[1])

    def get_shape(self):
        return self.shape

    @property
    def graph(self):
        return self.op.graph

    def __eq__(self, other):
        return isinstance(other, GraphTensor) and (self.op, self.value_index) == (other.op, other.value_index)

    def __hash__(self):
        return hash((self.op, self.value_index))

    def __repr__(self):
        return f"<jf.Tensor '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


class Operation:
    def __init__(self, graph, ref):
        self.graph = graph
        self._ref = ref

    name = property(lambda self: self._ref.name)
    type = property(lambda self: self._ref.op)
    node_def = property(lambda self: self._ref)

    @property
    def inputs(self):
        return [GraphTensor(self.graph._op(r), i) for r, i in self._ref.input_refs()]

    @property
    def outputs(self):
        return [GraphTensor(self, i) for i in range(self._ref.num_outputs)]

    @property
    def control_inputs(self):
        return [self.graph._op(r) for r in self._ref.control_input_refs()]

    @property
    def source(self):
        """The user's file:line that created this op."""
        return self._ref.source

    def get_attr(self, name):
        try:
            return self._ref.get_attr(name)
        except TypeError:  # a shape attr: the binding has no Python type for it, its text does
            text = repr(self._ref.attr[name])[len("AttrValue("):-1]
            if not (text.startswith("[") and text.endswith("]")):
                raise
            dims = [None if d == "?" else int(d) for d in text[1:-1].split(",") if d]
            return TensorShape(dims)

    def __eq__(self, other):
        return isinstance(other, Operation) and self._ref == other._ref

    def __hash__(self):
        return hash(self._ref)

    def __repr__(self):
        return f"<jf.Operation '{self.name}' type={self.type}>"


class FuncGraph:
    """The graph of one concrete function, as traced (before optimization)."""

    def __init__(self, graph, cluster_of=None):
        self._graph = graph
        self._ops = {}
        self._cluster_of = cluster_of or {}

    def _op(self, ref):
        op = self._ops.get(ref.name)
        if op is None:
            op = self._ops[ref.name] = Operation(self, ref)
        return op

    def get_operations(self):
        return [self._op(r) for r in self._graph.nodes()]

    def get_operation_by_name(self, name):
        r = self._graph.find(name)
        if r is None:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        return self._op(r)

    @property
    def inputs(self):
        return [GraphTensor(self._op(r), 0) for r in self._graph.inputs()]

    @property
    def outputs(self):
        return [GraphTensor(self._op(r), i) for r, i in self._graph.outputs()]

    def as_dot(self):
        """Graphviz text; compiled clusters are drawn as boxes."""
        return self._graph.to_dot(self._cluster_of)

    def as_text(self):
        return self._graph.to_string()

    def as_graph_def(self, add_shapes=False):
        """TF's GraphDef of the operations (core/graph_def.py)."""
        return graph_def_of(self)

    def __repr__(self):
        return f"<jf.FuncGraph with {self._graph.num_nodes} ops>"

    def _repr_html_(self):
        """In a notebook: the dataflow graph, compiled clusters drawn as boxes."""
        try:
            view = graph_display.view_of(self, "graph", self._cluster_of)
        except Exception as e:  # noqa: BLE001 - a display must not raise
            return f"<pre>{self!r}: cannot be drawn ({type(e).__name__}: {e})</pre>"
        return graph_display.render_html(view)
