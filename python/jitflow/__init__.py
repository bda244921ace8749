"""jitflow: TensorFlow-style eager tensors on Eigen, traced functions and LLVM-compiled
jit_scope clusters. `import jitflow as jf`, then use it like `tf`.

The package is laid out in processing order, each layer importing only those below it:
core (dtypes, the Tensor's Python face, shapes, nest, errors, export) -> ops (the op
functions and variables) -> tracing (jf.function, control flow, TensorArray, AutoGraph) ->
autodiff (tapes and gradients) -> state (Module, checkpoints, optimizers) -> data -> distribute -> keras. This file
is the public namespace on top (docs/architecture.md); it imports data, distribute, keras,
checkpoints and SavedModel when a program first uses them (_LAZY below), so `import jitflow`
does not pay for them."""
import importlib
import sys

from . import _C, autodiff
from ._C import Tensor, from_dlpack, init_scope, jit_scope, name_scope
from .autodiff import GradientTape, gradients
from .autodiff import register_gradient as RegisterGradient
from .core import config, dtypes, errors, export, nest
from .core.device import device
from .core.dtypes import (
    DType,
    as_dtype,
    bfloat16,
    bool,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .core.tensor_spec import TensorSpec
from .ops import (
    array_ops,
    basic_ops,
    conv_ops,
    debugging,
    decomp_ops,
    einsum_ops,
    image_ops,
    linalg_ops,
    losses_clipping,
    mask_ops,
    nn_ops,
    random_ops,
    scatter_ops,
    sort_ops,
    stats_ops,
    strings,
)
from .ops import image_color as _image_color  # registers jf.image
from .ops import image_geometry as _image_geometry  # registers jf.image
from .ops import image_regions as _image_regions  # registers jf.image's crop_and_resize and ssim
from .ops import misc_ops as _misc_ops  # registers its names
from .ops import nn_linalg_more as _nn_linalg_more  # registers its names
from .ops import ragged_ops as _ragged_ops  # registers jf.ragged and jf.RaggedTensor
from .ops import signal_ops as _signal_ops  # registers jf.signal
from .ops import sparse_ops as _sparse_ops  # registers jf.sparse and jf.SparseTensor
from .ops import sparse_rows as _sparse_rows  # registers more of jf.sparse
from .ops.printing import print
from .ops.strings import string
from .ops.variables import Variable
from .state import lookup as _lookup  # registers jf.lookup
from .state import random_generator
from .state import summary as _summary  # registers jf.summary
from .state.module import Module
from .tracing import autograph, experimental, xla
from .tracing import box_suppression as _box_suppression  # registers tf.image's non-max suppression
from .tracing import csv_ops as _csv_ops  # registers its names
from .tracing import ctc as _ctc  # registers nn.ctc_loss and nn.ctc_greedy_decoder
from .tracing import functional_ops as _functional_ops  # registers its names
from .tracing import image_codecs as _image_codecs  # registers its names
from .tracing import io_ops as _io_ops  # registers its names
from .tracing import string_functions as _string_functions  # registers its names
from .tracing.control_flow import cond, control_dependencies, while_loop
from .tracing.explain import explain
from .tracing.function import function
from .tracing.py_function import numpy_function, py_function
from .tracing.tensor_array import TensorArray

# jf.random is its module (tests and users reach its seed state); the exported names are
# installed on it as on the other namespace modules (jf.config, jf.nest, jf.strings, ...).
random = random_ops

# What the first call of a function does not need, imported when first used: attribute ->
# the module to import (jf.optimizers is jf.keras.optimizers, as TF's tf.optimizers is
# tf.keras.optimizers, and likewise losses, metrics and initializers; jf.train and
# jf.saved_model are namespaces those modules export into).
# A name no namespace has loads them all first (the layers export into jf.nn and others too),
# so every name resolves as if they had been imported here.
_LAZY = {"data": "data", "distribute": "distribute", "keras": "keras", "optimizers": "keras",
         "losses": "keras", "metrics": "keras", "initializers": "keras",
         "saved_model": "state.saved_model", "train": "state.train"}


def _load(names=None):
    """Imports the lazy layers serving `names` (all when None) not imported by this function
    yet and installs their names; True when it imported any."""
    todo = [m for m in dict.fromkeys(_LAZY[n] for n in (names or _LAZY)) if m not in _loaded]
    if not todo or _loading:  # a layer being imported looking up a name: it is not there yet
        return False
    _loading.append(True)
    try:
        for m in todo:
            importlib.import_module(f"{__name__}.{m}")
            _loaded.add(m)
    finally:
        _loading.clear()
    package = sys.modules[__name__]
    if "keras" in _loaded:  # TF's tf.optimizers, tf.losses, ... are tf.keras's modules
        for name in ("optimizers", "losses", "metrics", "initializers"):
            setattr(package, name, getattr(package.keras, name))
    _install(package, lazy=[n for n, m in _LAZY.items() if m not in _loaded])
    return True


_loaded, _loading = set(), []
_install, _missing = export.install, export.missing("")


def __getattr__(name):
    if name in _LAZY:
        _load([name])
        if name in globals():
            return globals()[name]
    return _missing(name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


# Every @export'ed name (and the op records' elementwise wrappers) under jitflow.*, TF's
# namespaces (jf.math, jf.linalg, ...), and "not implemented yet" for TF names jitflow lacks.
export.install(sys.modules[__name__], lazy=_LAZY, load=_load)
del array_ops, basic_ops, conv_ops, decomp_ops, einsum_ops, image_ops, linalg_ops, mask_ops, scatter_ops, sort_ops, stats_ops, nn_ops, random_ops, losses_clipping
del random_generator, _summary, _lookup, _image_color, _image_geometry, _image_regions, _misc_ops, _nn_linalg_more, _signal_ops, _ragged_ops, _sparse_ops, _sparse_rows, _functional_ops, _box_suppression, _image_codecs, _io_ops, _string_functions, _csv_ops, _ctc, export

from .core.version import __version__
