"""jf.print: prints tensor values on every call (a PrintV2 op inside traced functions)."""
import sys

import numpy as _np

from .. import _C
from .._C import Tensor
from .strings import StringTensor, summarize_strings

_PRINT = _C.op_id("PrintV2")
_TENSOR_SLOT = "\x00"


def print(*inputs, output_stream=sys.stderr, sep=" ", end="\n", summarize=3, name=None):
    """Like tf.print: tensors are printed with their values when the op runs."""
    parts, tensors = [], []
    for x in inputs:
        if isinstance(x, StringTensor):  # a Python value, even in a trace: printed as TF's eager print
            parts.append(summarize_strings(x, summarize))
        elif isinstance(x, Tensor) or hasattr(x, "__jf_tensor__"):
            tensors.append(_C.convert_to_tensor(x))
            parts.append(_TENSOR_SLOT)
        else:
            parts.append(str(x))
    stream = "stdout" if output_stream is sys.stdout else "stderr"
    attrs = {"parts": parts, "sep": sep, "end": end, "output_stream": stream, "summarize": summarize}
    _C.execute_n(_PRINT, tensors, attrs, name)


def _format(t, summarize):
    a = t.numpy()
    if a.ndim == 0:
        return str(a.item())
    with _np.printoptions(threshold=2 * summarize * max(a.ndim, 1), edgeitems=summarize):
        return _np.array2string(a, separator=" ")


def _print_hook(tensors, attrs):
    it = iter(tensors)
    summarize = attrs.get("summarize", 3)
    parts = attrs.get("parts", [])
    if isinstance(parts, str):  # a single part arrives as a plain string
        parts = [parts]
    text = attrs.get("sep", " ").join(_format(next(it), summarize) if p == _TENSOR_SLOT else p for p in parts)
    stream = sys.stdout if attrs.get("output_stream") == "stdout" else sys.stderr
    stream.write(text + attrs.get("end", "\n"))
