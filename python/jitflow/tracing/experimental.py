"""jf.experimental: emit_ptx, the GPU code of a function's compiled clusters (works without a GPU),
and compare, eager against traced against compiled timings (tracing/compare.py)."""
from . import onnx_export as _onnx_export
from .compare import Comparison, compare  # noqa: F401 - re-exported


def emit_ptx(f, *args, arch="sm_80", **kwargs):
    """{cluster name: PTX text} for the compiled clusters of f's concrete function for these
    arguments. Each loop step of a cluster is one `.entry` kernel taking (bufs, params, total)."""
    cf = f.get_concrete_function(*args, **kwargs) if hasattr(f, "get_concrete_function") else f
    return {name: m["ptx"] for name, m in cf._cf.emit_ptx(arch).items()}


def ptx_kernels(f, *args, arch="sm_80", **kwargs):
    """{cluster name: [kernel entry names]}, matching emit_ptx."""
    cf = f.get_concrete_function(*args, **kwargs) if hasattr(f, "get_concrete_function") else f
    return {name: list(m["kernels"]) for name, m in cf._cf.emit_ptx(arch).items()}


def export_onnx(concrete_function, path=None, input_names=None, output_names=None):
    """An ONNX model of the concrete function's graph, written to path (docs/saving.md)."""
    return _onnx_export.export_onnx(concrete_function, path, input_names, output_names)
