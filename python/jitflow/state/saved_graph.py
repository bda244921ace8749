"""The graphs of a SavedModel (docs/saving.md): a traced graph written as JSON records (nodes,
op types, attrs, inputs, If/While subgraphs, jit_scope attributes), checked on load against the
op records jitflow knows, and replayed node by node through the op dispatcher inside a new
trace, so the loaded function is the same graph and compiles the same clusters. Nothing in a
record is executed as code: an op type is looked up in jitflow's own op table, an attr is data."""
import contextlib

import numpy as np

from .. import _C
from ..core import dtypes as _dtypes
from ..core.errors import DataLossError, InvalidArgumentError, NotFoundError
from ..tracing.control_flow import cond, while_loop

JIT_ATTRS = ("_XlaCompile", "_XlaScope", "_XlaSeparateCompiledGradients")
# Ops whose attrs name a Python callable or a live Python object: nothing on disk can stand for it.
# (jf.distribute's all-reduce names this process's MPI communicator.)
UNSAVEABLE = {"EagerPyFunc": "jf.py_function", "PyFunc": "jf.numpy_function",
              "CollectiveAllReduce": "jf.distribute's all-reduce"}
_VARIABLE_OPS = {"ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}
_KNOWN = None
_NO_SCOPE = contextlib.nullcontext()


def known_ops():
    global _KNOWN
    if _KNOWN is None:
        # XlaLaunch stands for a compiled cluster after optimization, never in a traced graph.
        _KNOWN = frozenset(_C.op_names()) - set(UNSAVEABLE) - {"XlaLaunch"}
    return _KNOWN


# ---- writing ------------------------------------------------------------------------------------
class GraphWriter:
    """Turns graphs into JSON records; constants go to `self.constants` ({key: numpy array})
    and variable ids are written as the variables' checkpoint keys (`var_keys`)."""

    def __init__(self, var_keys, what):
        self.var_keys = var_keys
        self.what = what
        self.constants = {}
        self.strings = {}

    def graph(self, g):
        names = {}
        nodes = []
        for n in g.nodes():
            if n.op in UNSAVEABLE:
                what = ("it names this process's MPI communicator", "which only this process has") \
                    if n.op == "CollectiveAllReduce" else ("it calls a Python function", "its code is not saved")
                raise ValueError(
                    f"{self.what}: cannot save op '{n.name}' of type {n.op}: {what[0]} "
                    f"({UNSAVEABLE[n.op]}), which a SavedModel cannot hold ({what[1]})")
            names[n.name] = n
            nodes.append(self.node(n))
        return {"inputs": [n.name for n in g.inputs()],
                "outputs": [[r.name, i] for r, i in g.outputs()],
                "nodes": nodes}

    def node(self, n):
        rec = {"name": n.name, "op": n.op,
               "inputs": [[r.name, i] for r, i in n.input_refs()],
               "control": [r.name for r in n.control_input_refs()],
               "outputs": [_spec_json(*n.output_spec(i)) for i in range(n.num_outputs)]}
        attrs = {}
        for k in n.attr:
            if n.op == "Placeholder" and k == "shape":
                continue  # the output spec says it
            try:
                value = n.get_attr(k)
            except TypeError:
                raise ValueError(f"{self.what}: cannot save attr '{k}' of op '{n.name}' ({n.op})") from None
            attrs[k] = self.attr(n, k, value)
        rec["attrs"] = attrs
        subs = n.subgraphs()
        if subs:
            rec["subgraphs"] = [self.graph(s) for s in subs]
        return rec

    def attr(self, n, k, v):
        if k == "var_id" or k == "_variable_port":
            key = self.var_keys.get(v)
            if key is None:
                raise ValueError(
                    f"{self.what}: op '{n.name}' ({n.op}) uses a jf.Variable that is not tracked by the saved "
                    "object (assign it to an attribute of the module being saved)")
            return {"var": key}
        if isinstance(v, bool):
            return {"b": v}
        if isinstance(v, int):
            return {"i": v}
        if isinstance(v, float):
            return {"f": repr(v)}
        if isinstance(v, str):
            return {"s": v}
        if isinstance(v, _dtypes.DType):
            return {"type": v.name}
        if isinstance(v, list):
            if all(isinstance(x, int) and not isinstance(x, bool) for x in v):
                return {"ints": v}
            if all(isinstance(x, float) for x in v):
                return {"floats": [repr(x) for x in v]}
            if all(isinstance(x, str) for x in v):
                return {"strs": v}
        if isinstance(v, _C.Tensor):
            key = f"c{len(self.constants) + len(self.strings)}"
            arr = v.numpy()
            if arr.dtype == object:  # strings: bytes, kept in the JSON
                self.strings[key] = {"shape": list(arr.shape),
                                     "values": [b.decode("latin-1") for b in arr.reshape(-1)]}
            else:
                self.constants[key] = np.array(arr, order="C")  # ascontiguousarray makes a scalar 1-d
            return {"tensor": key, "dtype": v.dtype.name}
        raise ValueError(f"{self.what}: cannot save attr '{k}' of op '{n.name}' ({n.op}): {type(v).__name__}")


def _spec_json(dtype, shape):
    return {"dtype": dtype.name, "shape": [None if d is None else int(d) for d in shape]}


# ---- checking (before anything is built) -------------------------------------------------------
def check_graph(g, constants, strings, variables, where):
    """Raises NotFoundError for an op jitflow does not know, DataLossError for a record that
    does not hold together (dangling input, missing constant or variable, bad attr)."""
    def bad(why):
        return DataLossError(f"SavedModel {where}: {why}")
    if not isinstance(g, dict) or not all(isinstance(g.get(k), list) for k in ("inputs", "outputs", "nodes")):
        raise bad("a graph record is malformed")
    seen = {}
    for rec in g["nodes"]:
        if not isinstance(rec, dict) or not isinstance(rec.get("op"), str) or not isinstance(rec.get("name"), str):
            raise bad(f"a node record is malformed: {str(rec)[:200]}")
        op = rec["op"]
        if op in UNSAVEABLE or op not in known_ops():
            raise NotFoundError(f"Op type not registered '{op}' in binary (node '{rec['name']}' of SavedModel "
                                f"{where}): jitflow loads only the ops it defines")
        for name, i in rec.get("inputs", []):
            if name not in seen or not isinstance(i, int) or not 0 <= i < seen[name]:
                raise bad(f"node '{rec['name']}' reads '{name}:{i}', which no earlier node provides")
        for name in rec.get("control", []):
            if name not in seen:
                raise bad(f"node '{rec['name']}' has an unknown control input '{name}'")
        if not isinstance(rec.get("attrs"), dict) or not isinstance(rec.get("outputs"), list):
            raise bad(f"node '{rec['name']}' is malformed")
        for k, a in rec["attrs"].items():
            _check_attr(a, constants, strings, variables,
                        lambda why, k=k, node=rec["name"]: bad(f"attr '{k}' of '{node}': {why}"))
        for s in rec.get("outputs"):
            _spec(s, bad)
        subs = rec.get("subgraphs", [])
        if op in ("If", "While") and len(subs) != 2:
            raise bad(f"node '{rec['name']}' ({op}) needs two subgraphs")
        for s in subs:
            check_graph(s, constants, strings, variables, where)
        seen[rec["name"]] = len(rec["outputs"])
    for name in g["inputs"]:
        if name not in seen:
            raise bad(f"graph input '{name}' is not a node")
    for name, i in g["outputs"]:
        if name not in seen or not isinstance(i, int) or not 0 <= i < seen[name]:
            raise bad(f"graph output '{name}:{i}' is not a node's output")


def _check_attr(a, constants, strings, variables, bad):
    if not isinstance(a, dict) or len(a) not in (1, 2):
        raise bad("malformed")
    if "var" in a and a["var"] not in variables:
        raise bad(f"variable '{a['var']}' is not in the SavedModel's variables")
    if "tensor" in a:
        if a["tensor"] not in constants and a["tensor"] not in strings:
            raise bad(f"constant '{a['tensor']}' is missing")
        return
    if "f" in a:
        float(a["f"])
    if "floats" in a:
        [float(x) for x in a["floats"]]
    if "type" in a:
        _dtypes.as_dtype(a["type"])


def _spec(s, bad):
    if not isinstance(s, dict) or not isinstance(s.get("shape"), list):
        raise bad(f"malformed spec {s!r}")
    try:
        dtype = _dtypes.as_dtype(s["dtype"])
    except (TypeError, ValueError, KeyError):
        raise bad(f"unknown dtype in spec {s!r}") from None
    if not all(d is None or (type(d) is int and d >= 0) for d in s["shape"]):
        raise bad(f"malformed shape in spec {s!r}")
    return dtype, s["shape"]


def spec_of(s):
    return _spec(s, lambda why: DataLossError(why))


# ---- replaying ------------------------------------------------------------------------------------
class Replayer:
    """Rebuilds saved graphs in the current trace: `constants` {key: Tensor}, `variables`
    {checkpoint key: jf.Variable}."""

    def __init__(self, constants, variables):
        self.constants = constants
        self.variables = variables

    def attr(self, a):
        (kind, v), = [(k, x) for k, x in a.items() if k != "dtype"]
        if kind == "var":
            return self.variables[v]._id
        if kind == "f":
            return float(v)
        if kind == "floats":
            return [float(x) for x in v]
        if kind == "type":
            return _dtypes.as_dtype(v)
        if kind == "tensor":
            return self.constants[v]
        return v

    def run(self, g, args):
        env = {}
        inputs = {name: a for name, a in zip(g["inputs"], args)}
        for rec in g["nodes"]:
            op, name = rec["op"], rec["name"]
            if op == "Placeholder":
                if name in inputs:
                    env[(name, 0)] = inputs[name]
                continue
            attrs = {k: self.attr(a) for k, a in rec["attrs"].items()}
            jit = {k: attrs.pop(k) for k in JIT_ATTRS if k in attrs}
            attrs = {k: v for k, v in attrs.items() if not k.startswith("_") or k == "_gradient_op_type"}
            ins = [env[(n, i)] for n, i in rec["inputs"]]
            scope, _, short = name.rpartition("/")
            with _C.attr_scope(jit, list(JIT_ATTRS)), (_C.name_scope(scope + "/") if scope else _NO_SCOPE):
                if op == "If":
                    outs = self._if(rec, ins)
                elif op == "While":
                    outs = self._while(rec, attrs, ins)
                else:
                    outs = _C.execute_n(_C.op_id(op), ins, attrs, short)
            if len(outs) != len(rec["outputs"]):
                raise InvalidArgumentError(f"SavedModel: node '{name}' ({op}) gave {len(outs)} outputs, "
                                           f"its record says {len(rec['outputs'])}")
            for i, o in enumerate(outs):
                env[(name, i)] = o
        return [env[(n, i)] for n, i in g["outputs"]]

    def _sub_args(self, g, values):
        # A subgraph's inputs marked as variable ports stand for the variable itself: the new
        # trace makes its own ports when a replayed op reads or writes it.
        return [None if _is_port(g, name) else v for name, v in zip(g["inputs"], values)]

    def _if(self, rec, ins):
        n_then = self.attr(rec["attrs"]["num_then_inputs"])
        tg, eg = rec["subgraphs"]
        t_args = self._sub_args(tg, ins[1:1 + n_then])
        e_args = self._sub_args(eg, ins[1 + n_then:])
        out = cond(ins[0], lambda: list(self.run(tg, t_args)), lambda: list(self.run(eg, e_args)))
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def _while(self, rec, attrs, ins):
        nv, nc = attrs["num_loop_vars"], attrs["num_cond_captures"]
        cg, bg = rec["subgraphs"]
        cond_caps = self._sub_args(cg, [None] * nv + ins[nv:nv + nc])[nv:]
        body_caps = self._sub_args(bg, [None] * nv + ins[nv + nc:])[nv:]
        specs = {r["name"]: r["outputs"] for r in bg["nodes"] if r["op"] == "Placeholder"}
        invariants = [spec_of(specs[name][0])[1] for name in bg["inputs"][:nv]]
        max_iter = attrs.get("maximum_iterations", -1)
        out = while_loop(lambda *v: self.run(cg, list(v) + cond_caps)[0],
                         lambda *v: list(self.run(bg, list(v) + body_caps)),
                         list(ins[:nv]), shape_invariants=invariants,
                         maximum_iterations=None if max_iter < 0 else max_iter)
        return list(out) if isinstance(out, (list, tuple)) else [out]


def _is_port(g, name):
    for rec in g["nodes"]:
        if rec["name"] == name:
            return "_variable_port" in rec["attrs"]
    return False
