"""jf.strings' host-computed functions (lower, upper, strip, regex_replace, regex_full_match,
substr, reduce_join, ngrams) against Python's own string methods, eagerly and inside a
jf.function (py_function nodes run when the function runs)."""
import re

import numpy as np
import pytest

import jitflow as jf

TEXT = [["Hello World", "  a B  "], ["xyz", "Ünï"]]


def _b(rows):
    return [[s.encode() for s in row] for row in rows]


@pytest.mark.parametrize("traced", [False, True])
def test_case_strip_and_regex(traced):
    def run(fn, *args):
        f = jf.function(fn) if traced else fn
        return f(jf.constant(TEXT), *args).numpy().tolist()

    assert run(lambda s: jf.strings.lower(s)) == [[v.lower() for v in r] for r in _b(TEXT)]  # ASCII only
    assert run(lambda s: jf.strings.upper(s, encoding="utf-8")) == [[v.upper().encode() for v in r] for r in TEXT]
    assert run(lambda s: jf.strings.strip(s)) == [[v.strip() for v in r] for r in _b(TEXT)]
    assert run(lambda s: jf.strings.regex_replace(s, r"([aeiou])", r"<\1>")) == \
        [[re.sub(rb"([aeiou])", rb"<\1>", v) for v in r] for r in _b(TEXT)]
    assert run(lambda s: jf.strings.regex_replace(s, "o", "0", replace_global=False))[0][0] == b"Hell0 World"
    assert run(lambda s: jf.strings.regex_full_match(s, "[a-z]+")) == [[False, False], [True, False]]


def test_substr_reduce_join_and_ngrams():
    s = jf.constant(TEXT)
    assert jf.strings.substr(s, 1, 3).numpy().tolist() == [[v[1:4] for v in r] for r in _b(TEXT)]
    assert jf.strings.substr(s, -2, 2).numpy().tolist()[0] == [b"ld", b"  "]
    assert jf.strings.substr(jf.constant(["Ünï"]), 1, 2, unit="UTF8_CHAR").numpy().tolist() == ["nï".encode()]
    with pytest.raises(jf.errors.InvalidArgumentError, match="out of range"):
        jf.strings.substr(jf.constant(["ab"]), 5, 1)
    assert jf.strings.reduce_join(s, axis=1, separator="|").numpy().tolist() == \
        [b"|".join(r) for r in _b(TEXT)]
    assert jf.strings.reduce_join(s).numpy() == b"".join(v for r in _b(TEXT) for v in r)
    assert jf.strings.reduce_join(s, axis=0, keepdims=True).numpy().shape == (1, 2)
    words = jf.constant([["a", "b", "c", "d"]])
    assert jf.strings.ngrams(words, (2, 3)).numpy().tolist() == [[b"a b", b"b c", b"c d", b"a b c", b"b c d"]]
    f = jf.function(lambda w: jf.strings.ngrams(w, 2, separator="_"))
    np.testing.assert_array_equal(f(words).numpy(), np.array([[b"a_b", b"b_c", b"c_d"]], dtype=object))
    with pytest.raises(TypeError, match="Expected string"):
        jf.strings.lower(jf.constant([1]))
