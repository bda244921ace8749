"""jf.train.Checkpoint, CheckpointManager and latest_checkpoint: variables saved by object path
(e.g. model/layers/0/kernel) with optimizer slots keyed by their variable, restored into live
objects by matching the saved object graph against theirs (TF's object-based checkpoints)."""
import contextlib
import json
import os
import time

import numpy as np

from .. import _C
from ..core.errors import DataLossError, InvalidArgumentError, NotFoundError, UnimplementedError
from ..core.export import export
from ..ops.variables import Variable
from . import checkpoint_format as _fmt
from .module import Module
from .optimizers import Optimizer

_STATE_FILE = "checkpoint"


# ---- the live object graph ----------------------------------------------------------------------
def _is_trackable(x, _depth=0):
    if isinstance(x, (Variable, Module, Checkpoint)):
        return True
    if _depth < 64 and isinstance(x, (list, tuple)):
        return any(_is_trackable(v, _depth + 1) for v in x)
    if _depth < 64 and isinstance(x, dict):
        return any(_is_trackable(v, _depth + 1) for v in x.values())
    return False


def _children(obj):
    """[(name, child)] of a live object, in a fixed order: a module's attributes sorted by
    name, a list's items by index, a dict's by sorted key; only children holding state."""
    if isinstance(obj, Checkpoint):
        top = dict(_children(obj._jf_root)) if obj._jf_root is not None else {}
        top.update(obj._jf_objects)
        items = sorted(top.items())
        if obj._save_counter is not None:
            items.append(("save_counter", obj._save_counter))
    elif isinstance(obj, Module):
        ignored = type(obj)._jf_untracked
        items = [(k, v) for k, v in sorted(vars(obj).items())
                 if k not in ignored and not k.startswith("_jf_")]
    elif isinstance(obj, (list, tuple)):
        items = [(str(i), v) for i, v in enumerate(obj)]
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str) and _is_trackable(v):
                raise ValueError(f"Unable to save a dictionary with the non-string key {k!r} mapping to "
                                 f"trackable {type(v).__name__}: checkpoints name children by string keys")
        items = sorted((k, v) for k, v in obj.items() if isinstance(k, str))
    else:
        items = []
    return [(k, v) for k, v in items if _is_trackable(v)]


def _kind(obj):
    if isinstance(obj, Variable):
        return "variable"
    if isinstance(obj, Optimizer):
        return "optimizer"
    if isinstance(obj, Module):
        return "module"
    if isinstance(obj, Checkpoint):
        return "checkpoint"
    return "dict" if isinstance(obj, dict) else "list"


def _escape(name):
    # "/" separates path components in tensor keys; a name containing it is escaped.
    return name.replace("%", "%25").replace("/", "%2F")


def _build_graph(root):
    """Breadth first from root: (nodes, {node id: variable}, {id(obj): node id}). Each object is
    one node however many paths reach it; a variable's tensor key is its first (shortest) path.
    Optimizer slots of variables in the graph are added last, keyed
    "<optimizer path>/.slots/<variable key>/<slot name>"."""
    nodes, objs, index, paths = [], [], {}, []

    def add(obj, path):
        index[id(obj)] = len(nodes)
        node = {"kind": _kind(obj), "class": type(obj).__name__}
        if isinstance(obj, Variable):
            node["tensor"] = path or "value"
        nodes.append(node)
        objs.append(obj)
        paths.append(path)
        return index[id(obj)]

    add(root, "")
    i = 0
    while i < len(nodes):
        obj, path = objs[i], paths[i]
        kids = []
        for name, child in _children(obj):
            cid = index.get(id(child))
            if cid is None:
                cid = add(child, (path + "/" if path else "") + _escape(name))
            kids.append({"name": name, "node": cid})
        if kids:
            nodes[i]["children"] = kids
        i += 1
    for i, obj in enumerate(list(objs)):
        if not isinstance(obj, Optimizer):
            continue
        slots = []
        for var, slot_name, slot in obj._slot_variables():
            vid = index.get(id(var))
            if vid is None or id(slot) in index:  # TF too drops slots of variables not saved
                continue
            key = f"{paths[i] or 'optimizer'}/.slots/{nodes[vid]['tensor']}/{_escape(slot_name)}"
            sid = add(slot, key)
            slots.append({"variable": vid, "slot": slot_name, "node": sid})
        if slots:
            nodes[i]["slot_variables"] = slots
    return nodes, objs


def _require_eager(what):
    if _C.is_tracing():
        raise UnimplementedError(f"jf.train.Checkpoint.{what} runs eagerly: call it outside jf.function "
                                 "(inside a trace it would run once, when the function is traced)")


# ---- restoring ----------------------------------------------------------------------------------
class _Restore:
    """One restore: matches saved nodes to live objects, now or when they are created."""

    def __init__(self, tensors, graph, path):
        self.tensors, self.nodes, self.path = tensors, graph["nodes"], path
        self.live = {}  # node id -> live object
        self.restored = set()  # node ids whose value was assigned
        self.pending_slots = {}  # id(optimizer) -> [slot entry]
        self.names = {0: "(root)"}
        for i, node in enumerate(self.nodes):
            for c in node.get("children", []):
                self.names.setdefault(c["node"], f"{self.names.get(i, '?')}.{c['name']}")
        for i, node in enumerate(self.nodes):
            for e in node.get("slot_variables", []):
                self.names.setdefault(e["node"], f"{self.names.get(i, '?')}'s slot {e['slot']!r} of "
                                                 f"{self.names.get(e['variable'], '?')}")

    def value_for(self, node_id, var):
        """The saved value of node_id checked against var (TF's errors), not yet assigned."""
        node = self.nodes[node_id]
        if "tensor" not in node:
            raise ValueError(f"Checkpoint {self.path}: {self.names.get(node_id)} is a saved "
                             f"{node.get('class')}, but the object here is a variable ({var.name})")
        value = self.tensors[node["tensor"]]
        if value.dtype.name != var.dtype.name:
            raise InvalidArgumentError(f"tensor_name = {node['tensor']}; expected dtype {var.dtype.name} does "
                                       f"not equal original dtype {value.dtype.name} (checkpoint {self.path})")
        if tuple(value.shape) != tuple(var.shape):
            raise ValueError(f"Received incompatible tensor with shape {tuple(value.shape)} when attempting to "
                             f"restore variable with shape {tuple(var.shape)} and name {var.name} "
                             f"(checkpoint key '{node['tensor']}').")
        return value

    def match(self, node_id, obj, assigns):
        """Pairs node_id with obj and its descendants; values to assign go to `assigns`;
        children missing on a Module are deferred until the attribute is set."""
        stack = [(node_id, obj)]
        while stack:
            nid, o = stack.pop()
            if nid in self.live:
                continue
            self.live[nid] = o
            node = self.nodes[nid]
            if isinstance(o, Variable):
                assigns.append((nid, o, self.value_for(nid, o)))
                continue
            if "tensor" in node:
                raise ValueError(f"Checkpoint {self.path}: {self.names.get(nid)} is a saved variable, but the "
                                 f"object here is a {type(o).__name__}")
            if isinstance(o, Checkpoint) and any(c["name"] == "save_counter" for c in node.get("children", [])):
                o.save_counter  # noqa: B018  (created so the saved count can be restored into it)
            live = dict(_children(o))
            for c in node.get("children", []):
                if c["name"] in live:
                    stack.append((c["node"], live[c["name"]]))
                elif isinstance(o, Module):
                    self._defer(o, c["name"], c["node"])
                elif isinstance(o, Checkpoint) and isinstance(o._jf_root, Module):
                    self._defer(o._jf_root, c["name"], c["node"])
            if isinstance(o, Optimizer) and node.get("slot_variables"):
                self.pending_slots.setdefault(id(o), []).extend(node["slot_variables"])
                self._fill_slots(o, assigns)
                if self.pending_slots.get(id(o)):
                    o.__dict__.setdefault("_jf_deferred_slots", []).append(self._slot_created)

    def _fill_slots(self, opt, assigns):
        left = []
        for entry in self.pending_slots.get(id(opt), []):
            var = self.live.get(entry["variable"])
            slot = None
            if var is not None and (entry["slot"], id(var)) in opt._slots:
                slot = opt._slots[(entry["slot"], id(var))]
            if slot is None:
                left.append(entry)
            elif entry["node"] not in self.live:
                self.live[entry["node"]] = slot
                assigns.append((entry["node"], slot, self.value_for(entry["node"], slot)))
        self.pending_slots[id(opt)] = left

    def _slot_created(self, opt, var, slot_name, slot):
        assigns = []
        self._fill_slots(opt, assigns)
        self.assign(assigns)
        if not self.pending_slots.get(id(opt)):
            lst = opt.__dict__.get("_jf_deferred_slots", [])
            if self._slot_created in lst:
                lst.remove(self._slot_created)

    def _defer(self, module, name, node_id):
        def restore_when_set(value):
            if not _is_trackable(value):
                module.__dict__.setdefault("_jf_deferred", {})[name] = restore_when_set  # wait for the real one
                return
            assigns = []
            self.match(node_id, value, assigns)
            self.assign(assigns)
        module.__dict__.setdefault("_jf_deferred", {})[name] = restore_when_set

    def assign(self, assigns):
        with _C.init_scope():
            for nid, var, value in assigns:
                var.assign(value)
                self.restored.add(nid)

    def saved_variable_nodes(self):
        return [i for i, n in enumerate(self.nodes) if "tensor" in n]


class CheckpointLoadStatus:
    """What a restore matched (TF's CheckpointLoadStatus). Values of objects created after the
    restore (a layer's weights built on its first call, an optimizer's slots) are assigned when
    they are created."""

    def __init__(self, restore, checkpoint):
        self._restore, self._checkpoint = restore, checkpoint

    def assert_consumed(self):
        """Raises AssertionError unless every saved value was restored and every variable of the
        object graph got one."""
        r = self._restore
        for nid in r.saved_variable_nodes():
            if nid not in r.restored:
                raise AssertionError(f"Unresolved object in checkpoint {r.names.get(nid, nid)}: "
                                     f"checkpoint key '{r.nodes[nid]['tensor']}' was not restored into "
                                     "any object (missing, or not created yet)")
        return self.assert_existing_objects_matched()

    def assert_existing_objects_matched(self):
        """Raises AssertionError if a variable of the live object graph got no saved value."""
        r = self._restore
        restored = {id(r.live[n]) for n in r.restored}
        _, objs = _build_graph(self._checkpoint)
        unmatched = [o for o in objs if isinstance(o, Variable) and id(o) not in restored
                     and o is not self._checkpoint._save_counter]
        if unmatched:
            shown = ", ".join(repr(v) for v in unmatched[:10])
            raise AssertionError(f"Found {len(unmatched)} Python objects that were not bound to checkpointed "
                                 f"values, likely due to changes in the Python program. Showing "
                                 f"{min(len(unmatched), 10)} of {len(unmatched)} unmatched objects: [{shown}]")
        return self

    def assert_nontrivial_match(self):
        if not any(r is not self._checkpoint._save_counter for r in
                   (self._restore.live[n] for n in self._restore.restored)):
            raise AssertionError(f"Nothing except the root object matched a checkpointed value in "
                                 f"{self._restore.path}")
        return self

    def expect_partial(self):
        """Declares that a partial restore is intended (jitflow prints no warnings either way)."""
        return self

    def run_restore_ops(self, session=None):
        """Values are assigned eagerly: nothing left to run."""

    def initialize_or_restore(self, session=None):
        """Values are assigned eagerly: nothing left to run."""


class InitializationOnlyStatus:
    """restore(None): nothing is restored (TF's status for a None path)."""

    def _fail(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    def assert_consumed(self):
        self._fail()

    def assert_existing_objects_matched(self):
        self._fail()

    def assert_nontrivial_match(self):
        self._fail()

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        pass

    def initialize_or_restore(self, session=None):
        pass


# ---- Checkpoint ---------------------------------------------------------------------------------
@export("train.Checkpoint")
class Checkpoint:
    """Saves and restores the variables reachable from its keyword arguments (modules,
    optimizers, variables, and lists/dicts of them). Files: <prefix>.safetensors."""

    def __init__(self, root=None, **kwargs):
        if root is not None and not isinstance(root, (Module, Checkpoint)):
            raise ValueError(f"`Checkpoint` was expecting root to be a trackable object (a jf.Module or "
                             f"jf.train.Checkpoint), got {root!r}.")
        for k, v in kwargs.items():
            if k == "save_counter":
                raise AttributeError("property 'save_counter' of 'Checkpoint' object has no setter")
            if not _is_trackable(v):
                raise ValueError(f"`Checkpoint` was expecting {k} to be a trackable object (a jf.Module, "
                                 f"jf.Variable or jf.train.Checkpoint, or a list/dict of them), got {v!r}.")
        self._jf_root = root  # with a root, its attributes are the checkpoint's top level (TF)
        self._jf_objects = dict(kwargs)
        self._save_counter = None

    def __getattr__(self, name):
        objects = self.__dict__.get("_jf_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(f"'Checkpoint' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name == "save_counter":
            raise AttributeError("property 'save_counter' of 'Checkpoint' object has no setter")
        else:
            self._jf_objects[name] = value

    @property
    def save_counter(self):
        """An int64 variable: the number of save() calls (restored with the checkpoint)."""
        if self._save_counter is None:
            with _C.init_scope():
                self._save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
        return self._save_counter

    def write(self, file_prefix):
        """Writes <file_prefix>.safetensors (atomically); returns file_prefix."""
        _require_eager("write")
        file_prefix = os.fspath(file_prefix)
        nodes, objs = _build_graph(self)
        tensors = {}
        for node, obj in zip(nodes, objs):
            if "tensor" in node:
                tensors[node["tensor"]] = np.asarray(obj.numpy())
        with _writer() as writes:  # one writer per distributed job (jf.distribute)
            if writes:
                _fmt.write(_fmt.data_path(file_prefix), tensors, {"nodes": nodes})
        return file_prefix

    def save(self, file_prefix):
        """Writes <file_prefix>-<n>, n the incremented save_counter; records it as the latest
        checkpoint of its directory; returns the numbered prefix."""
        _require_eager("save")
        with _C.init_scope():
            self.save_counter.assign_add(np.int64(1))
            n = int(self.save_counter.numpy())
        path = self.write(f"{os.fspath(file_prefix)}-{n}")
        with _writer() as writes:
            if writes:
                _write_state(os.path.dirname(path) or ".", [path])
        return path

    def read(self, save_path):
        """Restores the values saved at save_path; returns a CheckpointLoadStatus."""
        _require_eager("read")
        tensors, graph = _fmt.read(save_path)
        restore = _Restore(tensors, graph, _fmt.data_path(save_path))
        assigns = []
        restore.match(0, self, assigns)  # raises on any mismatch before a value is assigned
        restore.assign(assigns)
        return CheckpointLoadStatus(restore, self)

    def restore(self, save_path):
        """read(save_path); None restores nothing (InitializationOnlyStatus)."""
        if save_path is None:
            return InitializationOnlyStatus()
        return self.read(save_path)


# Set by jf.distribute (a layer above): a context manager factory that yields whether this
# process writes (rank 0 of a multi-worker job) and holds the others until it has written.
_WRITE_GATE = [None]


def _writer():
    return _WRITE_GATE[0]() if _WRITE_GATE[0] is not None else contextlib.nullcontext(True)


# ---- the directory state file and the manager ---------------------------------------------------
def _state_path(directory, latest_filename=None):
    return os.path.join(os.fspath(directory), latest_filename or _STATE_FILE)


def _read_state(directory, latest_filename=None):
    """The state file's {model_checkpoint_path, all_model_checkpoint_paths, ...} with absolute
    paths, or None when there is none."""
    p = _state_path(directory, latest_filename)
    try:
        with open(p, "rb") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        state = json.loads(text.decode("utf-8"))
        latest = state["model_checkpoint_path"]
        paths = state.get("all_model_checkpoint_paths", [latest])
        stamps = state.get("all_model_checkpoint_timestamps", [0.0] * len(paths))
        if not (isinstance(latest, str) and isinstance(paths, list) and all(isinstance(x, str) for x in paths)
                and isinstance(stamps, list) and len(stamps) == len(paths)):
            raise ValueError("bad field types")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise DataLossError(f"The checkpoint state file {p} is not a jitflow checkpoint state ({e!r})") from None
    d = os.fspath(directory)
    return {"model_checkpoint_path": os.path.join(d, latest),
            "all_model_checkpoint_paths": [os.path.join(d, x) for x in paths],
            "all_model_checkpoint_timestamps": [float(t) for t in stamps]}


def _write_state(directory, paths, stamps=None):
    directory = os.fspath(directory)

    def rel(p):
        return os.path.relpath(p, directory) if os.path.dirname(os.path.abspath(p)) == os.path.abspath(directory) \
            else os.path.abspath(p)
    stamps = stamps or [time.time()] * len(paths)
    state = {"model_checkpoint_path": rel(paths[-1]), "all_model_checkpoint_paths": [rel(p) for p in paths],
             "all_model_checkpoint_timestamps": stamps}
    _fmt.atomic_write(_state_path(directory), [json.dumps(state, indent=1).encode("utf-8")])


@export("train.latest_checkpoint")
def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint recorded in checkpoint_dir, or None (also when its
    file is gone)."""
    state = _read_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    path = state["model_checkpoint_path"]
    return path if _fmt.exists(path) else None


@export("train.CheckpointManager")
class CheckpointManager:
    """Numbered saves of a Checkpoint in one directory, keeping the newest max_to_keep."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None, init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager expects a jf.train.Checkpoint, got {checkpoint!r}")
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or isinstance(max_to_keep, bool)
                                        or max_to_keep <= 0):
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        for arg, val in (("keep_checkpoint_every_n_hours", keep_checkpoint_every_n_hours),
                         ("step_counter", step_counter), ("checkpoint_interval", checkpoint_interval)):
            if val is not None:
                raise UnimplementedError(f"jf.train.CheckpointManager does not implement {arg} yet")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._init_fn = init_fn
        state = _read_state(self._directory)
        self._maybe_delete = []  # [(path, timestamp)], oldest first
        if state is not None:
            self._maybe_delete = [(p, t) for p, t in zip(state["all_model_checkpoint_paths"],
                                                         state["all_model_checkpoint_timestamps"])
                                  if _fmt.exists(p)]

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoints(self):
        """The prefixes of the kept checkpoints, oldest first."""
        return [p for p, _ in self._maybe_delete]

    @property
    def latest_checkpoint(self):
        return self._maybe_delete[-1][0] if self._maybe_delete else None

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Writes <directory>/<checkpoint_name>-<n> (n: checkpoint_number, else the checkpoint's
        incremented save_counter), deletes the oldest beyond max_to_keep; returns the prefix."""
        _require_eager("save")
        counter = self._checkpoint.save_counter
        with _C.init_scope():
            counter.assign_add(np.int64(1))
            n = int(counter.numpy()) if checkpoint_number is None else int(checkpoint_number)
        path = self._checkpoint.write(f"{self._prefix}-{n}")
        self._maybe_delete = [(p, t) for p, t in self._maybe_delete if p != path] + [(path, time.time())]
        if self._max_to_keep is not None:
            while len(self._maybe_delete) > self._max_to_keep:
                old, _ = self._maybe_delete.pop(0)
                try:
                    os.remove(_fmt.data_path(old))
                except FileNotFoundError:
                    pass
        _write_state(self._directory, self.checkpoints, [t for _, t in self._maybe_delete])
        return path

    def restore_or_initialize(self):
        """Restores the latest checkpoint and returns its path, else runs init_fn; returns None."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None


# ---- reading a checkpoint's values without objects (TF's tf.train.list_variables) --------------
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"  # TF's name for a saved variable's value


def _resolve(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}")
        return latest
    return path


@export("train.list_variables")
def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of the values in a checkpoint (or a directory's latest), sorted by name:
    each variable as "<object path>/.ATTRIBUTES/VARIABLE_VALUE" (TF's names for variables
    reached through attributes; optimizer slots are named by jitflow's own paths)."""
    tensors, _ = _fmt.read(_resolve(ckpt_dir_or_file))
    return sorted((key + _VALUE_SUFFIX, list(value.shape)) for key, value in tensors.items())


@export("train.load_variable")
def load_variable(ckpt_dir_or_file, name):
    """The saved value `name` (a list_variables name, with or without TF's suffix) as numpy."""
    tensors, _ = _fmt.read(_resolve(ckpt_dir_or_file))
    key = name.removesuffix(_VALUE_SUFFIX)
    if key not in tensors:
        raise NotFoundError(f"Key {name} not found in checkpoint")
    return tensors[key]
