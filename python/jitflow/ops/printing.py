"""jf.print: prints tensor values on every call (a PrintV2 op inside traced functions), laid out as
TF's tf.print lays them out: each input's Python structure (lists, tuples, dicts) printed by
pprint with a tensor's summary where the tensor is, the summaries in TF's format
(strings.summarize_array, TF's Tensor::SummarizeValue)."""
import logging
import os
import pprint
import random
import sys

from .. import _C
from .._C import Tensor
from ..core import nest
from .strings import StringTensor, string, summarize_array, summarize_strings

_PRINT = _C.op_id("PrintV2")
_LOGGER = logging.getLogger("jitflow")
_LOG_LEVELS = {"log(info)": logging.INFO, "log(warning)": logging.WARNING, "log(error)": logging.ERROR}


def print(*inputs, **kwargs):
    """Like tf.print: tensors (also inside lists, tuples and dicts) are printed with their values
    when the op runs. Keywords, as TF reads them: output_stream (sys.stderr, the one current at
    the call; sys.stdout; a logging level or function (info, warning, error); or
    "file://<path>", appended to), sep, end, summarize, name."""
    stream = _stream_name(kwargs.pop("output_stream", sys.stderr))
    name = kwargs.pop("name", None)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", os.linesep)
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {kwargs}")
    raw = False
    if len(inputs) == 1 and isinstance(inputs[0], StringTensor) and inputs[0].ndim == 0:
        # TF prints a lone string scalar as it is, unformatted (no quotes).
        parts, tensors = [inputs[0].numpy().decode("utf-8", "backslashreplace")], []
    elif (len(inputs) == 1 and isinstance(inputs[0], Tensor) and inputs[0].dtype == string
          and inputs[0].ndim == 0):  # a traced one too, when it runs
        parts, tensors, raw = ["", ""], [inputs[0]], True
    else:
        parts, tensors = _template(inputs, sep, summarize)
    attrs = {"parts": parts, "end": end, "output_stream": stream, "summarize": summarize, "raw_string": raw}
    _C.execute_n(_PRINT, tensors, attrs, name)


def _stream_name(output_stream):
    """TF's output streams by the names its PrintV2 kernel takes; anything else is its ValueError.
    The logging levels are Python's (tf.compat.v1.logging's are those); its functions stand in
    for tf.compat.v1.logging's, which jitflow lacks."""
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    names = {sys.stdout: "stdout", sys.stderr: "stderr",
             logging.INFO: "log(info)", logging.info: "log(info)",
             logging.WARNING: "log(warning)", logging.warning: "log(warning)", logging.warn: "log(warning)",
             logging.ERROR: "log(error)", logging.error: "log(error)"}
    try:
        name = names.get(output_stream)
    except TypeError:  # unhashable: not a stream
        name = None
    if not name:
        raise ValueError("Unsupported output stream, logging level, or file." + str(output_stream) +
                         ". Supported streams are sys.stdout, sys.stderr, tf.logging.info, tf.logging.warning, "
                         "tf.logging.error. File needs to be in the form of 'file://<filepath>'.")
    return name


def _is_tensor(x):
    return isinstance(x, (Tensor, StringTensor)) or hasattr(x, "__jf_tensor__")


def _template(inputs, sep, summarize):
    """TF's print_v2 template: a string input as it is, any other input pprint-formatted with a
    placeholder for each tensor in it (pprint sorts dict keys, as nest orders their tensors).
    Returns the literal text around the tensors (one more part than tensors) and the tensors;
    string tensors, which are Python values, are summarized into the text now."""
    free = " ".join(pprint.pformat(nest.map_structure(lambda x: "" if _is_tensor(x) else x, i)) for i in inputs)
    placeholder = _placeholder(free)
    templates, leaves = [], []
    for x in inputs:
        flat = nest.flatten(x)
        leaves += [v for v in flat if _is_tensor(v)]
        if isinstance(x, str):
            templates.append(x)
        else:
            templates.append(pprint.pformat(nest.pack_sequence_as(x, [placeholder if _is_tensor(v) else v
                                                                      for v in flat])))
    pieces = sep.join(templates).replace(f"'{placeholder}'", placeholder).split(placeholder)
    parts, tensors = [pieces[0]], []
    for leaf, rest in zip(leaves, pieces[1:]):
        if isinstance(leaf, StringTensor):
            parts[-1] += summarize_strings(leaf, summarize) + rest
        else:
            tensors.append(_C.convert_to_tensor(leaf))
            parts.append(rest)
    return parts, tensors


def _placeholder(text):
    """TF's choice of placeholder: "{}", with digits appended until it is not in text."""
    placeholder, rng = "{}", random.Random(5)
    while placeholder in text:
        placeholder += str(rng.randint(0, 9))
    return placeholder


def _print_hook(tensors, attrs):
    """The PrintV2 kernel (C++ calls it with the op's inputs and attrs when the op runs)."""
    limit = attrs.get("summarize", 3)
    parts = attrs.get("parts", [])
    if isinstance(parts, str):  # a single part arrives as a plain string
        parts = [parts]
    text = [parts[0]]
    for t, rest in zip(tensors, parts[1:]):
        if attrs.get("raw_string"):
            text += [t.numpy().decode("utf-8", "backslashreplace"), rest]
            continue
        text += [summarize_array(t.numpy(), t.dtype.name, limit), rest]
    text = "".join(text) + attrs.get("end", "\n")
    stream = attrs.get("output_stream", "stderr")
    if stream == "stdout":
        sys.stdout.write(text)
    elif stream in _LOG_LEVELS:
        _LOGGER.log(_LOG_LEVELS[stream], text.rstrip("\n"))
    elif stream.startswith("file://"):
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stderr.write(text)
