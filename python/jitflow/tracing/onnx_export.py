"""jf.experimental.export_onnx: a concrete function's graph as an ONNX model (opset 18), so a
traced function can be served by an ONNX engine. Each op record that ONNX expresses maps to
one or a few ONNX nodes; variables become initializers holding their current values; any
other op (variable writes, control flow, random numbers, Python callbacks, ...) is refused by
name before anything is written (docs/saving.md)."""
import numpy as np

from ..core import dtypes as _dtypes
from ..core.errors import UnimplementedError
from ..ops import variables as _variables

OPSET = 18
_INT64_MAX = np.iinfo(np.int64).max

_UNARY = {"Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt",
          "Abs": "Abs", "Neg": "Neg", "Floor": "Floor", "Ceil": "Ceil", "Sin": "Sin", "Cos": "Cos", "Erf": "Erf",
          "Reciprocal": "Reciprocal", "Inv": "Reciprocal", "Softplus": "Softplus", "Identity": "Identity",
          "Sign": "Sign", "Round": "Round", "LogicalNot": "Not", "StopGradient": "Identity", "Elu": "Elu",
          "Tan": "Tan", "Asin": "Asin", "Acos": "Acos", "Atan": "Atan", "Sinh": "Sinh", "Cosh": "Cosh",
          "Asinh": "Asinh", "Acosh": "Acosh", "Atanh": "Atanh", "IsNan": "IsNaN", "Selu": "Selu",
          "Softsign": "Softsign"}
_BINARY = {"AddV2": "Add", "Add": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Div": "Div",
           "Maximum": "Max", "Minimum": "Min", "Pow": "Pow", "Greater": "Greater", "Less": "Less",
           "Equal": "Equal", "GreaterEqual": "GreaterOrEqual", "LessEqual": "LessOrEqual",
           "LogicalAnd": "And", "LogicalOr": "Or", "BiasAdd": "Add"}
_REDUCE = {"Sum": "ReduceSum", "Mean": "ReduceMean", "Max": "ReduceMax", "Min": "ReduceMin", "Prod": "ReduceProd"}


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise ImportError("jf.experimental.export_onnx needs the 'onnx' package (pip install onnx)") from None
    return onnx, helper, numpy_helper


class _Exporter:
    def __init__(self, graph):
        self.onnx, self.helper, self.numpy_helper = _onnx()
        self.graph = graph
        self.nodes, self.inits, self.consts = [], [], {}
        self.counter = 0

    def name(self, node, i=0):
        return node.name if i == 0 else f"{node.name}:{i}"

    def fresh(self, base):
        self.counter += 1
        return f"{base}__{self.counter}"

    def init(self, base, array):
        n = self.fresh(base)
        self.inits.append(self.numpy_helper.from_array(np.asarray(array), n))
        return n

    def add(self, op, ins, outs, **attrs):
        self.nodes.append(self.helper.make_node(op, ins, outs, name=self.fresh(op), **attrs))

    def const_value(self, ref, what):
        node = ref[0]
        if node.op != "Const":
            raise UnimplementedError(f"jf.experimental.export_onnx: {what} must be a constant in the graph "
                                     f"(it is computed by {node.op} '{node.name}')")
        return node.get_attr("value").numpy()

    def convert(self):
        for node in self.graph.nodes():
            self.node(node)

    def node(self, node):
        t = node.op
        ins = [self.name(r, i) for r, i in node.input_refs()]
        refs = node.input_refs()
        out = self.name(node)
        if t == "Placeholder":
            return
        if t == "Const":
            value = node.get_attr("value").numpy()
            if value.dtype == object:
                raise UnimplementedError(f"jf.experimental.export_onnx: string constant '{node.name}'")
            self.inits.append(self.numpy_helper.from_array(np.asarray(value), out))
            return
        if t == "ReadVariableOp":
            var = _variables._by_id.get(node.get_attr("var_id"))
            if var is None:
                raise UnimplementedError(f"jf.experimental.export_onnx: the variable read by '{node.name}' is gone")
            self.inits.append(self.numpy_helper.from_array(np.asarray(var.numpy()), out))
            return
        if t in _UNARY:
            self.add(_UNARY[t], ins[:1], [out])
        elif t in _BINARY:
            if t == "BiasAdd" and node.get_attr("data_format") != "NHWC":
                raise UnimplementedError("jf.experimental.export_onnx: BiasAdd with data_format NCHW")
            self.add(_BINARY[t], ins, [out])
        elif t == "LeakyRelu":
            self.add("LeakyRelu", ins, [out], alpha=float(node.get_attr("alpha")))
        elif t == "Relu6":
            self.add("Clip", [ins[0], self._scalar(node, 0.0), self._scalar(node, 6.0)], [out])
        elif t in ("Expm1", "Log1p"):
            tmp = self.fresh(t)
            if t == "Expm1":
                self.add("Exp", ins, [tmp])
                self.add("Sub", [tmp, self._scalar(node, 1.0)], [out])
            else:
                self.add("Add", [ins[0], self._scalar(node, 1.0)], [tmp])
                self.add("Log", [tmp], [out])
        elif t == "NotEqual":
            tmp = self.fresh("eq")
            self.add("Equal", ins, [tmp])
            self.add("Not", [tmp], [out])
        elif t == "AddN":
            self.add("Sum", ins, [out])
        elif t == "Pack":
            axis = node.get_attr("axis")
            parts = []
            for x in ins:
                parts.append(self.fresh("packed"))
                self.add("Unsqueeze", [x, self.init("axes", np.asarray([axis], np.int64))], [parts[-1]])
            self.add("Concat", parts, [out], axis=axis)
        elif t in ("Tile", "BroadcastTo"):
            shape = self.fresh("shape")
            self.add("Cast", [ins[1]], [shape], to=self.onnx.TensorProto.INT64)
            self.add("Tile" if t == "Tile" else "Expand", [ins[0], shape], [out])
        elif t in ("ArgMax", "ArgMin"):
            axis = int(self.const_value(refs[1], f"the axis of '{node.name}'"))
            want = node.get_attr("output_type") if node.has_attr("output_type") else _dtypes.int64
            tmp = out if want == _dtypes.int64 else self.fresh("arg")
            self.add(t, ins[:1], [tmp], axis=axis, keepdims=0)
            if tmp != out:
                self.add("Cast", [tmp], [out], to=_onnx_type(self.onnx, want))
        elif t == "Square":
            self.add("Mul", [ins[0], ins[0]], [out])
        elif t == "Rsqrt":
            s = self.fresh("sqrt")
            self.add("Sqrt", ins, [s])
            self.add("Reciprocal", [s], [out])
        elif t == "SquaredDifference":
            d = self.fresh("diff")
            self.add("Sub", ins, [d])
            self.add("Mul", [d, d], [out])
        elif t in ("MatMul", "BatchMatMulV2", "BatchMatMul"):
            ta, tb = (("transpose_a", "transpose_b") if t == "MatMul" else ("adj_x", "adj_y"))
            a, b = ins
            rank = len(node.output_spec(0)[1])
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            if node.get_attr(ta):
                a2 = self.fresh("ta")
                self.add("Transpose", [a], [a2], perm=perm)
                a = a2
            if node.get_attr(tb):
                b2 = self.fresh("tb")
                self.add("Transpose", [b], [b2], perm=perm)
                b = b2
            self.add("MatMul", [a, b], [out])
        elif t in _REDUCE:
            axes = np.asarray(self.const_value(refs[1], f"the axes of {t} '{node.name}'")).astype(np.int64).reshape(-1)
            keep = int(bool(node.get_attr("keep_dims"))) if node.has_attr("keep_dims") else 0
            self.add(_REDUCE[t], [ins[0], self.init("axes", axes)], [out], keepdims=keep)
        elif t in ("Softmax", "LogSoftmax"):
            self.add(t, ins, [out], axis=-1)
        elif t == "Reshape":
            shape = self.fresh("shape")
            self.add("Cast", [ins[1]], [shape], to=self.onnx.TensorProto.INT64)
            self.add("Reshape", [ins[0], shape], [out])
        elif t == "Transpose":
            perm = self.const_value(refs[1], f"the permutation of '{node.name}'")
            self.add("Transpose", ins[:1], [out], perm=[int(p) for p in perm])
        elif t == "ConcatV2":
            axis = int(self.const_value(refs[-1], f"the axis of '{node.name}'"))
            self.add("Concat", ins[:-1], [out], axis=axis)
        elif t == "Split":
            axis = int(self.const_value(refs[0], f"the axis of '{node.name}'"))
            n = node.get_attr("num_split")
            self.add("Split", [ins[1]], [self.name(node, i) for i in range(n)], axis=axis, num_outputs=n)
        elif t == "GatherV2":
            axis = int(self.const_value(refs[2], f"the axis of '{node.name}'"))
            if node.has_attr("batch_dims") and node.get_attr("batch_dims"):
                raise UnimplementedError(f"jf.experimental.export_onnx: GatherV2 '{node.name}' with batch_dims")
            self.add("Gather", ins[:2], [out], axis=axis)
        elif t in ("SelectV2", "Select"):
            self.add("Where", ins, [out])
        elif t == "Cast":
            self.add("Cast", ins, [out], to=_onnx_type(self.onnx, node.get_attr("DstT")))
        elif t == "ExpandDims":
            axis = np.asarray(self.const_value(refs[1], f"the axis of '{node.name}'")).astype(np.int64).reshape(-1)
            self.add("Unsqueeze", [ins[0], self.init("axes", axis)], [out])
        elif t == "Squeeze":
            dims = node.get_attr("squeeze_dims") if node.has_attr("squeeze_dims") else []
            extra = [self.init("axes", np.asarray(dims, np.int64))] if dims else []
            self.add("Squeeze", [ins[0]] + extra, [out])
        elif t == "Slice":
            begin = np.asarray(self.const_value(refs[1], "a Slice's begin"), np.int64)
            size = np.asarray(self.const_value(refs[2], "a Slice's size"), np.int64)
            end = np.where(size < 0, _INT64_MAX, begin + size)
            self.add("Slice", [ins[0], self.init("starts", begin), self.init("ends", end)], [out])
        elif t == "StridedSlice":
            self.strided_slice(node, ins, refs, out)
        elif t == "Conv2D":
            self.conv2d(node, ins, out)
        elif t in ("MaxPool", "AvgPool"):
            self.pool(node, ins, out)
        else:
            raise UnimplementedError(
                f"jf.experimental.export_onnx: op {t} ('{node.name}') has no ONNX mapping; exportable ops "
                "are elementwise math, matmul, reductions, reshape/transpose/concat/split/slice, softmax, "
                "gather, where, cast, Conv2D and pooling")

    def _scalar(self, node, value):
        """A scalar constant of node's output dtype."""
        dtype = node.output_spec(0)[0]
        return self.init("scalar", np.asarray(value, dtype=np.dtype(dtype.name)))

    def strided_slice(self, node, ins, refs, out):
        if node.get_attr("ellipsis_mask") or node.get_attr("new_axis_mask"):
            raise UnimplementedError(f"jf.experimental.export_onnx: StridedSlice '{node.name}' with an ellipsis "
                                     "or new axis")
        begin, end, strides = (np.asarray(self.const_value(refs[k], "a StridedSlice bound"), np.int64).copy()
                               for k in (1, 2, 3))
        bm, em, sm = (node.get_attr(k) for k in ("begin_mask", "end_mask", "shrink_axis_mask"))
        for d in range(len(begin)):
            big = _INT64_MAX if strides[d] > 0 else -_INT64_MAX
            if bm >> d & 1:
                begin[d] = 0 if strides[d] > 0 else _INT64_MAX
            if em >> d & 1:
                end[d] = big
            if sm >> d & 1:
                end[d] = begin[d] + 1 if begin[d] != -1 else _INT64_MAX
        axes = np.arange(len(begin), dtype=np.int64)
        target = out if not sm else self.fresh("sliced")
        self.add("Slice", [ins[0], self.init("starts", begin), self.init("ends", end), self.init("axes", axes),
                           self.init("steps", strides)], [target])
        if sm:
            dims = [d for d in range(len(begin)) if sm >> d & 1]
            self.add("Squeeze", [target, self.init("axes", np.asarray(dims, np.int64))], [out])

    def _nchw(self, x):
        y = self.fresh("nchw")
        self.add("Transpose", [x], [y], perm=[0, 3, 1, 2])
        return y

    def _window_attrs(self, node, key_k=None):
        fmt = node.get_attr("data_format") if node.has_attr("data_format") else "NHWC"
        if fmt != "NHWC":
            raise UnimplementedError(f"jf.experimental.export_onnx: {node.op} '{node.name}' in {fmt}")
        strides = node.get_attr("strides")
        attrs = {"strides": [int(strides[1]), int(strides[2])]}
        pad = node.get_attr("padding")
        if pad == "SAME":
            attrs["auto_pad"] = "SAME_UPPER"
        elif pad != "VALID":
            raise UnimplementedError(f"jf.experimental.export_onnx: {node.op} '{node.name}' with padding {pad}")
        return attrs

    def conv2d(self, node, ins, out):
        attrs = self._window_attrs(node)
        if node.has_attr("dilations"):
            d = node.get_attr("dilations")
            attrs["dilations"] = [int(d[1]), int(d[2])]
        w = self.fresh("oihw")
        self.add("Transpose", [ins[1]], [w], perm=[3, 2, 0, 1])
        y = self.fresh("conv")
        self.add("Conv", [self._nchw(ins[0]), w], [y], **attrs)
        self.add("Transpose", [y], [out], perm=[0, 2, 3, 1])

    def pool(self, node, ins, out):
        attrs = self._window_attrs(node)
        k = node.get_attr("ksize")
        attrs["kernel_shape"] = [int(k[1]), int(k[2])]
        y = self.fresh("pool")
        self.add("MaxPool" if node.op == "MaxPool" else "AveragePool", [self._nchw(ins[0])], [y], **attrs)
        self.add("Transpose", [y], [out], perm=[0, 2, 3, 1])


def _onnx_type(onnx, dtype):
    name = dtype.name if isinstance(dtype, _dtypes.DType) else str(dtype)
    return {"float32": onnx.TensorProto.FLOAT, "float64": onnx.TensorProto.DOUBLE, "int32": onnx.TensorProto.INT32,
            "int64": onnx.TensorProto.INT64, "bool": onnx.TensorProto.BOOL, "float16": onnx.TensorProto.FLOAT16,
            "int8": onnx.TensorProto.INT8, "uint8": onnx.TensorProto.UINT8}[name]


def export_onnx(concrete_function, path=None, input_names=None, output_names=None):
    """Writes concrete_function (a jf.function's concrete function, or a jf.function with an
    input_signature) as an ONNX model to path, and returns the ModelProto. Inputs are named as
    the graph's placeholders (or input_names), outputs output_0, output_1, ... (or output_names),
    in the order of the function's flattened outputs. Variables are baked in as initializers."""
    cf = concrete_function
    if not hasattr(cf, "_cf") and hasattr(cf, "get_concrete_function"):
        cf = cf.get_concrete_function()
    ex = _Exporter(cf._cf.graph)
    ex.convert()
    onnx, helper = ex.onnx, ex.helper
    graph = cf._cf.graph
    inputs = []
    placeholders = graph.inputs()
    names = input_names or [p.name for p in placeholders]
    if len(names) != len(placeholders):
        raise ValueError(f"export_onnx: {len(names)} input names for {len(placeholders)} inputs")
    for p, n in zip(placeholders, names):
        dtype, shape = p.output_spec(0)
        if n != p.name:
            ex.nodes.insert(0, helper.make_node("Identity", [n], [p.name], name=ex.fresh("input")))
        dims = [d if d is not None else f"{n}_dim{i}" for i, d in enumerate(shape)]
        inputs.append(helper.make_tensor_value_info(n, _onnx_type(onnx, dtype), dims))
    outputs = []
    outs = graph.outputs()
    out_names = output_names or [f"output_{i}" for i in range(len(outs))]
    if len(out_names) != len(outs):
        raise ValueError(f"export_onnx: {len(out_names)} output names for {len(outs)} outputs")
    for (r, i), n in zip(outs, out_names):
        ex.add("Identity", [ex.name(r, i)], [n])  # a name per output, even for one tensor returned twice
        dtype, shape = r.output_spec(i)
        dims = [d if d is not None else f"{n}_dim{k}" for k, d in enumerate(shape)]
        outputs.append(helper.make_tensor_value_info(n, _onnx_type(onnx, dtype), dims))
    used = {i for n in ex.nodes for i in n.input}  # constants read only as attrs are not kept
    g = helper.make_graph(ex.nodes, cf.name or "jitflow", inputs, outputs, [t for t in ex.inits if t.name in used])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="jitflow")
    model.ir_version = min(model.ir_version, 9)  # readable by onnxruntime releases of the last two years
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, str(path))
    return model
