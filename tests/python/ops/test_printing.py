"""jf.print (ops/printing.py) prints what TF 2.21's tf.print prints, eagerly and from a traced
function: Python structures holding tensors laid out by pprint with each tensor's values, values
in TF's SummarizeValue format (not numpy's), TF's output streams and its errors. The expected
texts are TF 2.21's output for the same calls (the tests do not import tensorflow)."""
import logging
import sys

import numpy as np
import pytest

import jitflow as jf

C = jf.constant
_VARIABLES = []


def _variable():
    """A variable made once (outside the traced function, which may not create one per trace)."""
    if not _VARIABLES:
        _VARIABLES.append(jf.Variable([1.0, 2.0]))
    return _VARIABLES[0]


def printed(capsys, mode, make, **kwargs):
    """What jf.print(*make()) writes to stdout, called eagerly or inside a jf.function (where the
    tensors are symbolic when the print is traced)."""
    def body():
        jf.print(*make(), output_stream=sys.stdout, **kwargs)
        return C(0)
    capsys.readouterr()
    (body if mode == "eager" else jf.function(body))()
    return capsys.readouterr().out


STRUCTURES = [
    (lambda: [{"a": C([1, 2, 3])}], "{'a': [1 2 3]}\n"),
    (lambda: [{"b": C(1.5), "a": [C(1), 2, "s"]}], "{'a': [1, 2, 's'], 'b': 1.5}\n"),
    (lambda: [[C(1), C([1.0, 2.0])], "x"], "[1, [1 2]] x\n"),
    (lambda: [(C(1),)], "(1,)\n"),
    (lambda: [[C(1.0), [C([True])]], (1, C(2))], "[1, [[1]]] (1, 2)\n"),
    (lambda: [{"z": 1, "a": C("s")}], "{'a': \"s\", 'z': 1}\n"),
    (lambda: [{"a": "{}", "b": C(1)}], "{'a': '{}', 'b': 1}\n"),
    (lambda: [1.5, [1, 2], {"k": 1}, None], "1.5 [1, 2] {'k': 1} None\n"),
    (lambda: [np.array([1, 2])], "array([1, 2])\n"),
    (lambda: [_variable()], "[1 2]\n"),
    (lambda: [{f"alpha_long_key_{i}": C(i) for i in range(3)} | {"k" * 60: C(9)}],
     "{'alpha_long_key_0': 0,\n 'alpha_long_key_1': 1,\n 'alpha_long_key_2': 2,\n 'k" + "k" * 59 + "': 9}\n"),
]


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("make, want", STRUCTURES, ids=[str(i) for i in range(len(STRUCTURES))])
def test_structures_holding_tensors_print_their_values_in_tfs_layout(capsys, mode, make, want):
    # Traced, the dict's tensors printed their symbolic reprs ("<jf.Tensor 'x:0' ...>").
    assert printed(capsys, mode, make) == want


NUMBERS = [
    (lambda: [C([0.1, 1e-8, 1e8, 123456789.0, 1.0, -0.0, np.nan, np.inf])], {},
     "[0.1 1e-08 1e+08 ... -0 nan inf]\n"),
    (lambda: [C([0.1, 1e-8, 1 / 3], jf.float64)], {}, "[0.1 1e-08 0.33333333333333331]\n"),
    (lambda: [C(0.1), C(1e-8), C(1e20), C(3.0), C(1 / 3)], {}, "0.1 1e-08 1e+20 3 0.333333343\n"),
    (lambda: [C([1e-5, 1e-4, 0.5, 100000.0, 1e6, 1e7])], {"summarize": -1}, "[1e-05 0.0001 0.5 100000 1e+06 1e+07]\n"),
    (lambda: [C([np.float32("nan"), -np.float32("nan"), -np.inf])], {}, "[nan -nan -inf]\n"),
    (lambda: [C([2**31 - 1, -5]), C(2**62, jf.int64), C(-2**63, jf.int64)], {},
     "[2147483647 -5] 4611686018427387904 -9223372036854775808\n"),
    (lambda: [C([True, False]), C(True)], {}, "[1 0] 1\n"),
    (lambda: [jf.reshape(jf.range(24), [2, 3, 4])], {},
     "[[[0 1 2 3]\n  [4 5 6 7]\n  [8 9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]\n"),
    (lambda: [jf.range(10)], {}, "[0 1 2 ... 7 8 9]\n"),
    (lambda: [jf.range(10)], {"summarize": 1}, "[0 ... 9]\n"),
    (lambda: [jf.range(10)], {"summarize": -1}, "[0 1 2 3 4 5 6 7 8 9]\n"),
    (lambda: [jf.range(5)], {"summarize": 0}, "[ ...]\n"),
    (lambda: [jf.reshape(jf.range(12), [4, 3])], {"summarize": 1}, "[[0 ... 2]\n ...\n [9 ... 11]]\n"),
    (lambda: [jf.reshape(jf.range(100), [10, 10])], {},
     ("[[0 1 2 ... 7 8 9]\n [10 11 12 ... 17 18 19]\n [20 21 22 ... 27 28 29]\n ...\n"
      " [70 71 72 ... 77 78 79]\n [80 81 82 ... 87 88 89]\n [90 91 92 ... 97 98 99]]\n")),
    (lambda: [jf.zeros([0]), jf.zeros([2, 0]), jf.zeros([0, 2])], {}, "[] [\n ...] []\n"),
    (lambda: [C(1), C([2])], {"sep": ",", "end": "|"}, "1,[2]|"),
]


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("make, kwargs, want", NUMBERS, ids=[str(i) for i in range(len(NUMBERS))])
def test_values_print_in_tfs_number_format(capsys, mode, make, kwargs, want):
    # numpy's layout printed 1e-08 as "1.e-08", bools as True/False, float32 1/3 as 0.33333334.
    assert printed(capsys, mode, make, **kwargs) == want


def test_a_lone_string_scalar_prints_unquoted(capsys):
    jf.print(C("just a string"), output_stream=sys.stdout)
    jf.print(C(["x"]), output_stream=sys.stdout)
    assert capsys.readouterr().out == 'just a string\n["x"]\n'


@pytest.mark.parametrize("stream", [5, "stdout", None])
def test_unsupported_output_stream_is_tfs_value_error(stream):
    with pytest.raises(ValueError, match=r"Unsupported output stream, logging level, or file\..*Supported streams "
                                         r"are sys.stdout, sys.stderr"):
        jf.print(C(1), output_stream=stream)


def test_unknown_keyword_is_tfs_value_error():
    with pytest.raises(ValueError, match="Unrecognized keyword arguments for tf.print"):
        jf.print(C(1), stream=sys.stdout)


def test_file_and_logging_output_streams(tmp_path, caplog):
    path = tmp_path / "out.txt"
    @jf.function
    def f(x):
        jf.print({"a": x}, output_stream=f"file://{path}")
    f(C([1, 2]))
    jf.print("second", output_stream=f"file://{path}", end="!")
    assert path.read_text() == "{'a': [1 2]}\nsecond!"  # TF appends to the file
    with caplog.at_level(logging.INFO, logger="jitflow"):
        jf.print("to log", C(1), output_stream=logging.WARNING)
        jf.print("info", output_stream=logging.INFO)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, "to log 1"),
                                                                     (logging.INFO, "info")]
