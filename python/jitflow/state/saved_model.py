"""jf.saved_model.save / load (docs/saving.md): a module's traced functions, their graphs and
jit_scope attributes as JSON records, its variables as a jf.train.Checkpoint file, constants in
the same safetensors format, and a manifest of every file's size and SHA-256. Loading checks the
manifest and every record before it builds anything, then rebuilds each function by replaying
its nodes in a new trace: no pickle, no Python source, no code from the directory runs."""
import hashlib
import inspect
import json
import os

import numpy as np

from .. import _C
from ..core import dtypes as _dtypes
from ..core.errors import DataLossError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..ops.variables import Variable
from ..tracing.function import ConcreteFunction, Function, function
from . import checkpoint_format as _fmt
from . import saved_graph as _sg
from .checkpoint import Checkpoint, _build_graph
from .module import Module

FORMAT = "jitflow.saved_model"
VERSION = 1
MANIFEST = "manifest.json"
GRAPHS = "saved_model.json"
VARIABLES = "variables/variables"  # a checkpoint prefix (jf.train.Checkpoint can read it)
CONSTANTS = "assets/constants"
DEFAULT_SIGNATURE = "serving_default"


# ---- structures (arguments and outputs) --------------------------------------------------------
def _encode(value, leaves, what):
    """JSON for a traced structure; TensorSpec/tensor leaves become {"leaf": n} in jitflow's
    flattening order (dicts by sorted key), appended to `leaves`."""
    if isinstance(value, _Out):
        return {"leaf": value.n}
    if isinstance(value, (TensorSpec, _C.Tensor)):
        leaves.append(value)
        return {"leaf": len(leaves) - 1}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"py": value}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {"tuple": [_encode(v, leaves, what) for v in value]}
    if isinstance(value, list):
        return {"list": [_encode(v, leaves, what) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": [[k, _encode(value[k], leaves, what)] for k in sorted(value)]}
    raise ValueError(f"{what}: cannot save a {type(value).__name__} in a function's arguments or outputs "
                     "(tensors, None, numbers, strings, and lists, tuples and str-keyed dicts of them)")


def _decode(rec, leaf):
    if "leaf" in rec:
        return leaf(rec["leaf"])
    if "py" in rec:
        return rec["py"]
    if "tuple" in rec:
        return tuple(_decode(r, leaf) for r in rec["tuple"])
    if "list" in rec:
        return [_decode(r, leaf) for r in rec["list"]]
    if "dict" in rec:
        return {k: _decode(r, leaf) for k, r in rec["dict"]}
    raise DataLossError(f"SavedModel: malformed structure record {str(rec)[:200]}")


def _match(rec, value, specs, out, convert=False):
    """Whether a call's value fits the saved structure; its tensors go to out[leaf]. With
    `convert` (TF's second try), a nested list where a tensor was saved is converted too."""
    if "leaf" in rec:
        if hasattr(value, "__jf_tensor__") and not isinstance(value, _C.Tensor):
            value = value.__jf_tensor__()
        if not isinstance(value, _C.Tensor):
            if isinstance(value, dict) or value is None or (isinstance(value, (list, tuple)) and not convert):
                return False
            try:
                value = _C.convert_to_tensor(value, specs[rec["leaf"]].dtype)
            except (TypeError, ValueError):
                return False
        if not specs[rec["leaf"]].is_compatible_with(value):
            return False
        out[rec["leaf"]] = value
        return True
    if "py" in rec:
        return not isinstance(value, _C.Tensor) and type(value) is type(rec["py"]) and value == rec["py"]
    for kind, typ in (("tuple", tuple), ("list", list)):
        if kind in rec:
            return (isinstance(value, typ) and len(value) == len(rec[kind])
                    and all(_match(r, v, specs, out, convert) for r, v in zip(rec[kind], value)))
    if "dict" in rec:
        return (isinstance(value, dict) and sorted(value) == [k for k, _ in rec["dict"]]
                and all(_match(r, value[k], specs, out, convert) for k, r in rec["dict"]))
    return False


# ---- saving ---------------------------------------------------------------------------------------
def _functions_of(obj):
    """[(attribute name, jf.function bound to obj)], sorted by name."""
    out = {}
    for name in dir(type(obj)):
        if isinstance(getattr(type(obj), name, None), Function):
            out[name] = getattr(obj, name)
    for name, v in vars(obj).items():
        if isinstance(v, Function) and not name.startswith("_jf_"):
            out[name] = v
    return sorted(out.items())


def _concretes(fn):
    if fn._input_signature is not None and not fn._concrete:
        fn.get_concrete_function()  # TF traces a function with an input signature to save it
    return list(fn._concrete)


def _defaults(fn):
    """{parameter: encoded default} of a jf.function's Python function, for the defaults that
    are plain data: a call of the loaded function that leaves one out uses it, as Python would."""
    try:
        params = inspect.signature(fn._python_function).parameters
    except (TypeError, ValueError):
        return None
    out = {}
    for name, p in params.items():
        if p.default is not p.empty:
            leaves = []
            try:
                rec = _encode(p.default, leaves, "")
            except ValueError:
                continue
            if not leaves:
                out[name] = rec
    return out


def _as_concrete(sig, what):
    if isinstance(sig, ConcreteFunction):
        return sig
    if isinstance(sig, Function):
        if sig._input_signature is None:
            raise ValueError(f"{what}: a jf.function given as a signature needs an input_signature "
                             "(or pass f.get_concrete_function(...))")
        return sig.get_concrete_function()
    raise ValueError(f"{what}: expected a jf.function with an input_signature or a concrete function, "
                     f"got {sig!r}")


class _Saver:
    def __init__(self, var_keys):
        self.writer = _sg.GraphWriter(var_keys, "jf.saved_model.save")
        self.records, self.index = [], {}

    def concrete(self, cf, defaults=None):
        key = id(cf)
        if key in self.index:
            return self.index[key]
        what = f"jf.saved_model.save (function '{cf.name}')"
        if cf._var_ids:
            raise ValueError(f"{what}: it was traced with jf.Variable arguments; capture the variables "
                             "instead (make them attributes of the module)")
        self.writer.what = what
        graph = self.writer.graph(cf._cf.graph)
        specs = []
        args, kwargs = cf._traced_args
        enc_args = [_encode(a, specs, what) for a in args]
        enc_kwargs = {k: _encode(kwargs[k], specs, what) for k in sorted(kwargs)}
        params = []
        for i, (name, _, value) in enumerate(cf._parameters):
            if i < len(args):
                rec = enc_args[i]
            elif name in enc_kwargs:
                rec = enc_kwargs[name]
            else:  # a default the call left out: part of the trace, as a Python value
                extra = []
                rec = _encode(value, extra, what)
                if extra:
                    raise ValueError(f"{what}: parameter '{name}' has a tensor default")
            params.append([name, rec])
        if len(params) < len(args) + len(kwargs):
            raise ValueError(f"{what}: cannot name its arguments ({len(params)} parameters)")
        placeholders = cf._cf.graph.inputs()
        if len(specs) != len(placeholders):
            raise ValueError(f"{what}: {len(placeholders)} graph inputs for {len(specs)} tensor arguments")
        for s, ph in zip(specs, placeholders):  # the argument structure's leaves are the graph's inputs, in order
            dtype, shape = ph.output_spec(0)
            if s.dtype != dtype or list(s.shape) != list(shape):
                raise ValueError(f"{what}: argument spec {s} does not match graph input '{ph.name}'")
        out_struct = _encode_outputs(cf, what)
        self.index[key] = len(self.records)
        self.records.append({
            "name": cf.name, "jit_compile": bool(cf._jit_compile), "graph": graph,
            "inputs": [_sg._spec_json(s.dtype, tuple(s.shape)) for s in specs],
            "input_names": [p.name for p in placeholders],
            "parameters": params, "defaults": defaults, "outputs": out_struct})
        return self.index[key]


class _Out:
    """A placeholder for output n while the output structure is encoded."""

    def __init__(self, n):
        self.n = n


def _encode_outputs(cf, what):
    """The output structure, its tensors as {"leaf": n}, n the graph output's index."""
    n = len(cf._cf.graph.outputs())
    return _encode(cf._output_tree.unflatten([_Out(i) for i in range(n)]), [], what)


@export("saved_model.save")
def save(obj, export_dir, signatures=None, options=None):
    """Writes obj (a jf.Module), its traced jf.functions and `signatures` to export_dir."""
    if _C.is_tracing():
        raise RuntimeError("jf.saved_model.save runs eagerly: call it outside jf.function")
    if not isinstance(obj, Module):
        raise TypeError(f"jf.saved_model.save expects a jf.Module to save, got {obj!r}")
    export_dir = os.fspath(export_dir)
    ckpt = Checkpoint(root=obj)
    nodes, objs = _build_graph(ckpt)
    var_keys, var_info = {}, {}
    for node, o in zip(nodes, objs):
        if isinstance(o, Variable):
            var_keys[o._id] = node["tensor"]
            var_info[node["tensor"]] = {"name": o._name, "trainable": bool(o.trainable)}
    saver = _Saver(var_keys)
    functions = []
    for i, o in enumerate(objs):
        o = obj if i == 0 else o  # node 0 is the checkpoint whose children are obj's
        if isinstance(o, Module):
            for name, fn in _functions_of(o):
                defaults = _defaults(fn)
                functions.append({"node": i, "name": name,
                                  "concrete": [saver.concrete(cf, defaults) for cf in _concretes(fn)]})
    if signatures is None:
        with_sig = [fn for _, fn in _functions_of(obj) if fn._input_signature is not None]
        signatures = {DEFAULT_SIGNATURE: with_sig[0]} if len(with_sig) == 1 else {}
    elif not isinstance(signatures, dict):
        signatures = {DEFAULT_SIGNATURE: signatures}
    sigs = {}
    for key, sig in signatures.items():
        if not isinstance(key, str):
            raise TypeError(f"signature keys must be strings, got {key!r}")
        cf = _as_concrete(sig, f"jf.saved_model.save signature '{key}'")
        sigs[key] = saver.concrete(cf)
    os.makedirs(export_dir, exist_ok=True)
    ckpt.write(os.path.join(export_dir, VARIABLES))
    w = saver.writer
    const_nodes = [{"kind": "constants", "class": "SavedModel",
                    "children": [{"name": k, "node": i + 1} for i, k in enumerate(sorted(w.constants))]}]
    const_nodes += [{"kind": "constant", "class": "Tensor", "tensor": k} for k in sorted(w.constants)]
    _fmt.write(_fmt.data_path(os.path.join(export_dir, CONSTANTS)), w.constants, {"nodes": const_nodes})
    doc = {"format": FORMAT, "version": VERSION, "objects": nodes, "variables": var_info,
           "concrete_functions": saver.records, "functions": functions, "signatures": sigs,
           "string_constants": w.strings}
    _fmt.atomic_write(os.path.join(export_dir, GRAPHS), [json.dumps(doc, sort_keys=True).encode("utf-8")])
    files = [GRAPHS, _fmt.data_path(VARIABLES), _fmt.data_path(CONSTANTS)]
    manifest = {"format": FORMAT, "version": VERSION,
                "files": {f: _digest(os.path.join(export_dir, f)) for f in files}}
    _fmt.atomic_write(os.path.join(export_dir, MANIFEST), [json.dumps(manifest, sort_keys=True).encode("utf-8")])


def _digest(path):
    with open(path, "rb") as f:
        data = f.read()
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


# ---- loading --------------------------------------------------------------------------------------
class _UserObject(Module):
    """A loaded module: its saved children (variables, submodules, lists, dicts) and functions as
    attributes, and `signatures`."""

    def __init__(self, name):
        super().__init__(name=name if name.isidentifier() else None)


class _CallableUserObject(_UserObject):
    """A loaded module whose class defined __call__ as a jf.function (Python looks __call__ up on
    the class, so the restored function is called from here)."""

    def __call__(self, *args, **kwargs):
        return self.__dict__["__call__"](*args, **kwargs)


class RestoredFunction:
    """A saved jf.function: calls the loaded concrete function whose saved arguments match."""

    def __init__(self, name, options):
        self.__name__ = self._name = name
        self._options = options

    def _select(self, args, kwargs):
        for convert in (False, True):
            for cf in self._options:
                tensors = cf._bind(args, kwargs, convert)
                if tensors is not None:
                    return cf, tensors
        got = "\n".join(f"    * {a!r}" for a in args)
        want = "\n\n".join(f"Option {i + 1}:\n{cf._describe()}" for i, cf in enumerate(self._options))
        raise ValueError("Could not find matching concrete function to call loaded from the SavedModel. Got:\n"
                         f"  Positional arguments ({len(args)} total):\n{got}\n  Keyword arguments: {kwargs}\n\n "
                         f"Expected these arguments to match one of the following {len(self._options)} "
                         f"option(s):\n\n{want}")

    def __call__(self, *args, **kwargs):
        cf, tensors = self._select(args, kwargs)
        return cf._call_flat(tensors)

    def get_concrete_function(self, *args, **kwargs):
        """The jitflow concrete function that runs for these arguments (jf.explain takes it)."""
        return self._select(args, kwargs)[0]._concrete()

    @property
    def concrete_functions(self):
        return list(self._options)


class LoadedConcreteFunction:
    """One saved concrete function, rebuilt as a jf.function over its flat inputs that replays
    the saved graph; called with the saved argument structure (or, as a signature, keywords)."""

    def __init__(self, rec, replayer, signature_key=None):
        self.name = rec["name"]
        self._rec = rec
        self._specs = [TensorSpec(s[1], s[0]) for s in (_sg.spec_of(x) for x in rec["inputs"])]
        self._input_names = list(rec["input_names"])
        graph = rec["graph"]

        def replay(*flat):
            return replayer.run(graph, list(flat))
        replay.__name__ = self.name
        self._fn = function(replay, input_signature=self._specs, jit_compile=rec["jit_compile"] or None,
                            autograph=False)
        self._fn.get_concrete_function()  # traced now: a graph that does not replay fails the load
        self._signature_key = signature_key

    def _concrete(self):
        return self._fn.get_concrete_function()

    @property
    def graph(self):
        return self._concrete().graph

    @property
    def clusters(self):
        return self._concrete().clusters

    @property
    def _cf(self):
        return self._concrete()._cf

    def _bind(self, args, kwargs, convert=False):
        """The flat input tensors for a call, or None when it does not match this function's
        saved parameters (Python values equal, tensors of compatible specs)."""
        params = self._rec["parameters"]
        names = [n for n, _ in params]
        if len(args) > len(params):
            return None
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in values or k not in names:
                return None
            values[k] = v
        out = {}
        for name, rec in params:
            if name not in values:
                defaults = self._rec.get("defaults")
                if defaults is not None:  # the Python function's own defaults were saved
                    if name not in defaults:
                        return None
                    values[name] = _decode(defaults[name], lambda i: None)
                elif "py" in rec:
                    values[name] = rec["py"]  # the value it was traced with
                else:
                    return None
            if not _match(rec, values[name], self._specs, out, convert):
                return None
        if len(out) != len(self._specs):
            return None
        return [out[i] for i in range(len(self._specs))]

    def _show(self, rec):
        return _decode(rec, lambda i: self._specs[i])

    def _describe(self):
        params = self._rec["parameters"]
        pos = "\n".join(f"    * {name}: {self._show(r)!r}" for name, r in params)
        return f"  Positional arguments ({len(params)} total):\n{pos}\n  Keyword arguments: {{}}"

    def _call_flat(self, tensors):
        outs = self._fn(*tensors)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return _decode(self._rec["outputs"], lambda i: outs[i])

    def __call__(self, *args, **kwargs):
        if self._signature_key is None:
            tensors = self._bind(args, kwargs)
            if tensors is None:
                tensors = self._bind(args, kwargs, convert=True)
            if tensors is None:
                raise TypeError(f"{self.name}: the arguments do not match the saved signature\n{self._describe()}")
            return self._call_flat(tensors)
        # A signature: tensors by input name (or in order); the outputs as a dict.
        if args:
            if len(args) + len(kwargs) > len(self._input_names):
                raise TypeError(f"signature '{self._signature_key}' takes {len(self._input_names)} argument(s)")
            kwargs = {**dict(zip(self._input_names, args)), **kwargs}
        if sorted(kwargs) != sorted(self._input_names):
            raise TypeError(f"signature '{self._signature_key}' expects arguments {self._input_names}, "
                            f"got {sorted(kwargs)}")
        tensors = []
        for name, spec in zip(self._input_names, self._specs):
            t = _C.convert_to_tensor(kwargs[name], spec.dtype)
            if not spec.is_compatible_with(t):
                raise ValueError(f"signature '{self._signature_key}': argument '{name}' of shape "
                                 f"{tuple(t.shape)} and dtype {t.dtype.name} does not match {spec}")
            tensors.append(t)
        out = self._call_flat(tensors)
        if isinstance(out, dict) and all(isinstance(k, str) for k in out):
            return out
        flat = out if isinstance(out, (list, tuple)) else [out]
        return {f"output_{i}": v for i, v in enumerate(flat)}

    @property
    def structured_input_signature(self):
        if self._signature_key is not None:
            return (), dict(zip(self._input_names, self._specs))
        return tuple(self._show(r) for _, r in self._rec["parameters"]), {}


def _read_verified(export_dir):
    """{relative path: bytes} of the files the manifest lists, each checked for size and hash."""
    if not os.path.isdir(export_dir):
        raise OSError(f"SavedModel file does not exist at: {export_dir}/{{{MANIFEST}|{GRAPHS}}}")
    try:
        with open(os.path.join(export_dir, MANIFEST), "rb") as f:
            manifest = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise OSError(f"SavedModel file does not exist at: {export_dir}/{MANIFEST}") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise DataLossError(f"SavedModel {export_dir}: {MANIFEST} is corrupted ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DataLossError(f"SavedModel {export_dir}: {MANIFEST} is not a jitflow SavedModel manifest")
    if manifest.get("version") != VERSION:
        raise DataLossError(f"SavedModel {export_dir}: unsupported version {manifest.get('version')!r} "
                            f"(this jitflow reads version {VERSION})")
    files = manifest.get("files")
    want = {GRAPHS, _fmt.data_path(VARIABLES), _fmt.data_path(CONSTANTS)}
    if not isinstance(files, dict) or set(files) != want:
        raise DataLossError(f"SavedModel {export_dir}: the manifest lists {sorted(files or {})}, expected {sorted(want)}")
    out = {}
    for rel, info in files.items():
        path = os.path.join(export_dir, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise DataLossError(f"SavedModel {export_dir}: {rel} is missing") from None
        if not isinstance(info, dict) or len(data) != info.get("size"):
            raise DataLossError(f"SavedModel {export_dir}: {rel} has {len(data)} bytes, the manifest says "
                                f"{info.get('size') if isinstance(info, dict) else info!r} (truncated or altered)")
        if hashlib.sha256(data).hexdigest() != info.get("sha256"):
            raise DataLossError(f"SavedModel {export_dir}: {rel} fails its SHA-256 check (altered)")
        out[rel] = data
    return out


@export("saved_model.load")
def load(export_dir, tags=None, options=None):
    """The object saved in export_dir: its variables restored, its functions and `signatures`
    rebuilt from the saved graphs (no Python source needed)."""
    if _C.is_tracing():
        raise RuntimeError("jf.saved_model.load runs eagerly: call it outside jf.function")
    export_dir = os.fspath(export_dir)
    files = _read_verified(export_dir)
    try:
        doc = json.loads(files[GRAPHS].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DataLossError(f"SavedModel {export_dir}: {GRAPHS} is not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise DataLossError(f"SavedModel {export_dir}: {GRAPHS} is not a version-{VERSION} jitflow SavedModel")
    var_tensors, var_graph = _fmt.read(os.path.join(export_dir, VARIABLES), files[_fmt.data_path(VARIABLES)])
    constants, _ = _fmt.read(os.path.join(export_dir, CONSTANTS), files[_fmt.data_path(CONSTANTS)])
    try:
        return _build(doc, var_tensors, var_graph, constants, export_dir)
    except (KeyError, TypeError, IndexError, AttributeError) as e:
        raise DataLossError(f"SavedModel {export_dir}: {GRAPHS} is malformed ({e!r})") from None


def _build(doc, var_tensors, var_graph, constants, export_dir):
    nodes = var_graph["nodes"]
    if doc["objects"] != nodes:
        raise DataLossError(f"SavedModel {export_dir}: the object graph differs from the variables' checkpoint")
    strings = doc["string_constants"]
    records = doc["concrete_functions"]
    for i, rec in enumerate(records):  # every check before anything is built or traced
        _sg.check_graph(rec["graph"], constants, strings, var_tensors, export_dir)
        if len(rec["inputs"]) != len(rec["graph"]["inputs"]) or len(rec["input_names"]) != len(rec["inputs"]):
            raise DataLossError(f"SavedModel {export_dir}: function {i} has inconsistent inputs")
        for s in rec["inputs"]:
            _sg._spec(s, lambda why: DataLossError(f"SavedModel {export_dir}: {why}"))
        for _, r in rec["parameters"]:
            _decode(r, lambda n: None)
        for r in (rec.get("defaults") or {}).values():
            _decode(r, lambda n: None)
        _decode(rec["outputs"], lambda n: None)
    for f in doc["functions"]:
        if not 0 <= f["node"] < len(nodes) or not all(0 <= c < len(records) for c in f["concrete"]):
            raise DataLossError(f"SavedModel {export_dir}: function record {f['name']!r} points nowhere")
    for k, c in doc["signatures"].items():
        if not 0 <= c < len(records):
            raise DataLossError(f"SavedModel {export_dir}: signature {k!r} points nowhere")
    # The objects: modules as _UserObjects, variables restored from the checkpoint.
    objs = []
    for node in nodes:
        kind = node.get("kind")
        if kind == "variable":
            info = doc["variables"][node["tensor"]]
            name = info["name"]
            objs.append(Variable(var_tensors[node["tensor"]], trainable=bool(info["trainable"]), name=name))
        elif kind == "list":
            objs.append([])
        elif kind == "dict":
            objs.append({})
        else:
            objs.append(_UserObject(str(node.get("class", "user_object")).lower()))
    for node, o in zip(nodes, objs):
        for c in node.get("children", []):
            child = objs[c["node"]]
            if isinstance(o, list):
                o.append(child)
            elif isinstance(o, dict):
                o[c["name"]] = child
            else:
                object.__setattr__(o, c["name"], child) if c["name"].startswith("_") else setattr(o, c["name"], child)
    root = objs[0]
    # The checkpoint's node 0 is the checkpoint; its children are the saved object's attributes.
    variables = {node["tensor"]: o for node, o in zip(nodes, objs) if node.get("kind") == "variable"}
    const = {k: _C.convert_to_tensor(v) for k, v in constants.items()}
    for k, s in strings.items():
        arr = np.array([x.encode("latin-1") for x in s["values"]], dtype=object).reshape(s["shape"])
        const[k] = _C.convert_to_tensor(arr, _dtypes.string)
    replayer = _sg.Replayer(const, variables)
    loaded = {}

    def concrete(i, key=None):
        if (i, key) not in loaded:
            loaded[(i, key)] = LoadedConcreteFunction(records[i], replayer, key)
        return loaded[(i, key)]
    for f in doc["functions"]:
        owner = objs[f["node"]]
        setattr(owner, f["name"], RestoredFunction(f["name"], [concrete(c) for c in f["concrete"]]))
        if f["name"] == "__call__" and type(owner) is _UserObject:
            owner.__class__ = _CallableUserObject
    object.__setattr__(root, "signatures", {k: concrete(c, k) for k, c in sorted(doc["signatures"].items())})
    return root
