"""tf.train's checkpoint-directory helpers beyond latest_checkpoint: get_checkpoint_state (the
directory's state record), load_checkpoint (a reader of one checkpoint's saved values, named as
list_variables names them) and checkpoints_iterator (each new checkpoint as it appears, for an
evaluation loop beside training)."""
import collections
import time

from ..core import dtypes as _dt
from ..core.errors import NotFoundError
from ..core.export import export
from . import checkpoint_format as _fmt
from .checkpoint import _VALUE_SUFFIX, _read_state, _resolve, latest_checkpoint

CheckpointState = collections.namedtuple(
    "CheckpointState", ["model_checkpoint_path", "all_model_checkpoint_paths", "all_model_checkpoint_timestamps"])


@export("train.get_checkpoint_state")
def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The directory's checkpoint record (model_checkpoint_path, all_model_checkpoint_paths and
    their timestamps), or None when it has none."""
    state = _read_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    return CheckpointState(state["model_checkpoint_path"], list(state["all_model_checkpoint_paths"]),
                           list(state["all_model_checkpoint_timestamps"]))


class CheckpointReader:
    """The values saved in one checkpoint, by their list_variables names (with or without
    TF's "/.ATTRIBUTES/VARIABLE_VALUE" suffix)."""

    def __init__(self, path):
        self._tensors, _ = _fmt.read(path)

    def _key(self, name):
        return name.removesuffix(_VALUE_SUFFIX)

    def has_tensor(self, name):
        return self._key(name) in self._tensors

    def get_tensor(self, name):
        key = self._key(name)
        if key not in self._tensors:
            raise NotFoundError(f"Key {name} not found in checkpoint")
        return self._tensors[key]

    def get_variable_to_shape_map(self):
        return {key + _VALUE_SUFFIX: list(v.shape) for key, v in self._tensors.items()}

    def get_variable_to_dtype_map(self):
        return {key + _VALUE_SUFFIX: _dt.as_dtype(v.dtype) for key, v in self._tensors.items()}


@export("train.load_checkpoint")
def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader of a checkpoint prefix, or of a directory's latest checkpoint."""
    return CheckpointReader(_resolve(ckpt_dir_or_file))


@export("train.checkpoints_iterator")
def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each newest checkpoint of checkpoint_dir as it appears, at most one per
    min_interval_secs; after `timeout` seconds with no new one it stops, unless timeout_fn()
    (when given) returns False, which keeps it waiting."""
    last = None
    while True:
        start = time.time()
        deadline = None if timeout is None else start + timeout
        path = latest_checkpoint(checkpoint_dir)
        while path is None or path == last:
            if deadline is not None and time.time() + 1.0 > deadline:
                path = None
                break
            time.sleep(1.0 if timeout is None else min(1.0, max(0.0, deadline - time.time())))
            path = latest_checkpoint(checkpoint_dir)
        if path is None:
            if timeout_fn is not None and not timeout_fn():
                continue
            return
        last = path
        yield path
        remaining = start + min_interval_secs - time.time()
        if remaining > 0:
            time.sleep(remaining)
