"""AutoGraph's converted code kept across processes (tracing/autograph/code_cache.py) and the
source lookup that replaced inspect's: a second process loads the conversion instead of
redoing it and computes the same values; an edited function (same file, same name) is
converted again; the def's lines are found exactly, decorators and trailing statements that
compile to nothing included."""
import json
import os
import subprocess
import sys
import textwrap

import jitflow as jf
from jitflow.tracing.autograph import code_cache, conversion

# A module whose function AutoGraph converts (a tensor-dependent while and if); {step} and
# {extra} vary between versions of the file.
_MODULE = '''
import jitflow as jf


@jf.function
def collatz(n):
    steps = jf.constant(0)
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = {step} * n + 1
        steps += 1
    return steps{extra}
'''

_RUN = '''
import json, sys
sys.path.insert(0, sys.argv[1])
import jitflow as jf
import mod
out = int(mod.collatz(jf.constant(int(sys.argv[2]))).numpy())
print(json.dumps({"out": out, "stats": jf.debugging.stats()}))
'''


def _run(directory, cache, n):
    # No .pyc: an edit within the same second and of the same size would run the old one.
    env = {**os.environ, "JITFLOW_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([sys.executable, "-c", _RUN, str(directory), str(n)], capture_output=True, text=True,
                       env=env, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _collatz(n, step):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else step * n + 1
        steps += 1
    return steps


def _write(directory, step, extra=""):
    (directory / "mod.py").write_text(_MODULE.format(step=step, extra=extra))


def test_a_second_process_loads_the_conversion_and_an_edit_is_converted_again(tmp_path):
    cache = tmp_path / "cache"
    src = tmp_path / "src"
    src.mkdir()
    _write(src, 3)
    first = _run(src, cache, 27)
    assert first["out"] == _collatz(27, 3) == 111
    assert first["stats"]["autograph_conversions"] >= 1 and first["stats"]["autograph_cache_loads"] == 0
    second = _run(src, cache, 27)
    assert second["out"] == 111
    assert second["stats"]["autograph_conversions"] == 0 and second["stats"]["autograph_cache_loads"] >= 1
    # Same file, same function name, other code: converted again, and the new code runs.
    _write(src, 5)
    edited = _run(src, cache, 6)
    assert edited["stats"]["autograph_conversions"] >= 1
    assert edited["out"] == _collatz(6, 5) == 6 != _collatz(6, 3)
    # A change that leaves the bytecode alone but moves the lines: the positions differ, so
    # tracebacks keep pointing at the right lines (converted again).
    (src / "mod.py").write_text("\n\n" + _MODULE.format(step=5, extra=""))
    moved = _run(src, cache, 6)
    assert moved["stats"]["autograph_conversions"] >= 1 and moved["out"] == 6


def test_the_cache_is_off_with_the_compile_cache(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _write(src, 3)
    for _ in range(2):
        out = _run(src, "off", 7)
        assert out["out"] == _collatz(7, 3)
        assert out["stats"]["autograph_cache_loads"] == 0 and out["stats"]["autograph_conversions"] >= 1


def test_keys_follow_the_code_and_the_strict_flag():
    def f(x):
        return x + 1

    def g(x):
        return x + 2

    def h(x):
        return x + 1
    assert code_cache.key(f.__code__, False) == code_cache.key(f.__code__, False)
    assert code_cache.key(f.__code__, False) != code_cache.key(f.__code__, True)
    assert code_cache.key(f.__code__, False) != code_cache.key(g.__code__, False)
    # h has f's bytecode but another name and line: another key.
    assert code_cache.key(f.__code__, False) != code_cache.key(h.__code__, False)
    # A frozenset constant's order follows string hashing; its key part does not.
    assert code_cache._const(frozenset({"a", "b", "c"})) == "frozenset{" + ",".join(
        sorted(f"str:{c!r}" for c in "abc")) + "}"


def _decorated(fn):
    return fn


@_decorated
@_decorated
def _trailing(x):
    y = x * 2
    if y > 0:
        y = y + 1
    else:
        pass
    z: int  # noqa: F842 - an annotation compiles to nothing: the lookup must keep it
    return y
    # a comment at the end of the body


def test_the_source_lookup_finds_the_whole_def():
    lines, first = conversion._source_lines(_trailing)
    text = "".join(lines)
    assert lines[0].startswith("@_decorated") and first == _trailing.__code__.co_firstlineno
    assert "    z: int  # noqa" in text and "pass" in text and text.rstrip().endswith("# a comment at the end of the body")
    # The converted function computes what the original does, both branches.
    conv = conversion.convert(_trailing)
    assert conv(3) == 7 and conv(-3) == -6
    assert int(jf.function(_trailing)(jf.constant(-3)).numpy()) == -6


def test_a_def_whose_last_lines_compile_to_nothing_matches_inspect():
    import inspect
    src = textwrap.dedent('''
        def tail(x):
            if x:
                return 1
            else:
                pass
        ''')
    ns = {}
    exec(compile(src, __file__, "exec"), ns)  # noqa: S102 - a function with this file's name
    fn = ns["tail"]
    # inspect reads this file at line 2 for it: compare the block our lookup cuts the same way.
    code = fn.__code__
    assert code.co_firstlineno == 2
    lines = src.splitlines(True)
    block = conversion._block_by_positions(code, lines, 1)
    assert block is None or "".join(block) == "".join(inspect.getblock(lines[1:]))
