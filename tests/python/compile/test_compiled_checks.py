"""Compiled code keeps eager's checks and semantics: integer floordiv, floormod and pow compile
(XLA compiles them), and a zero divisor or a negative integer exponent raises the same error
compiled as eager, naming the op, instead of the silent values XLA would give; compiled
ArgMax/ArgMin follow TF eager's NaN rule, not XLA's."""
import numpy as np
import pytest

import jitflow as jf

INTS = [np.int32, np.int64]


def _modes(fn):
    """fn eagerly, traced, in a jit_scope and with jit_compile=True."""
    def scoped(*a):
        with jf.jit_scope():
            return fn(*a)

    def tensors(g):
        return lambda *a: g(*[jf.constant(x) for x in a])
    return {"eager": tensors(fn), "function": tensors(jf.function(fn)), "jit_scope": tensors(jf.function(scoped)),
            "jit_compile": tensors(jf.function(fn, jit_compile=True))}


def _compiled_ran(f, *args):
    before = jf.debugging.stats()["cluster_runs"]
    out = f(*args)
    return out, jf.debugging.stats()["cluster_runs"] > before


@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_and_powers_compile_and_match_numpy(dtype, rng):
    x = rng.integers(-50, 50, size=(4, 64)).astype(dtype)
    y = rng.integers(-7, 8, size=(64,)).astype(dtype)
    y[y == 0] = 3
    e = rng.integers(0, 6, size=(64,)).astype(dtype)
    x[0, 0], y[0] = np.iinfo(dtype).min, -1  # lowest // -1 wraps, as eager and numpy
    for mode, f in _modes(lambda a, b, c: (a // b, a % b, jf.pow(a, c))).items():
        (q, m, p), ran = _compiled_ran(f, x, y, e)
        assert ran == (mode in ("jit_scope", "jit_compile")), mode
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(q.numpy(), np.floor_divide(x, y), err_msg=mode)
            np.testing.assert_array_equal(m.numpy(), np.mod(x, y), err_msg=mode)
            np.testing.assert_array_equal(p.numpy(), np.power(x, e), err_msg=mode)


@pytest.mark.parametrize("op,fn", [("FloorDiv", lambda a, b: a // b), ("FloorMod", lambda a, b: a % b)])
@pytest.mark.parametrize("dtype", INTS)
def test_division_by_zero_raises_in_every_mode(op, fn, dtype, rng):
    x = rng.integers(-50, 50, size=(3, 40)).astype(dtype)
    y = rng.integers(1, 5, size=(3, 40)).astype(dtype)
    y[2, 17] = 0
    for mode, f in _modes(fn).items():
        with pytest.raises(jf.errors.InvalidArgumentError, match=f"{op}: Integer division by zero") as e:
            f(x, y)
        # Compiled modes raise from the compiled kernel's check, not from an eager rerun.
        assert ("compiled in" in str(e.value)) == (mode in ("jit_scope", "jit_compile")), (mode, str(e.value))
        # The cluster still runs afterwards (its state is not broken by the error).
        y2 = y.copy()
        y2[2, 17] = 1
        np.testing.assert_array_equal(f(x, y2).numpy(), fn(x, y2), err_msg=mode)  # numpy's fn


@pytest.mark.parametrize("dtype", INTS)
def test_negative_integer_power_raises_in_every_mode(dtype):
    x = np.arange(1, 9, dtype=dtype)
    y = np.full(8, 2, dtype=dtype)
    y[5] = -1
    for mode, f in _modes(jf.pow).items():
        with pytest.raises(jf.errors.InvalidArgumentError, match="Pow: Integers to negative integer powers") as e:
            f(x, y)
        assert ("compiled in" in str(e.value)) == (mode in ("jit_scope", "jit_compile")), (mode, str(e.value))


def test_the_error_names_the_node_compiled(rng):
    @jf.function(jit_compile=True)
    def f(a, b):
        return jf.math.floordiv(a * 2, b, name="my_div") + 1

    x = np.ones((2, 3), np.int32)
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"FloorDiv: Integer division by zero \(node my_div"):
        f(x, np.zeros((2, 3), np.int32))


def test_a_clean_run_costs_no_check_branch_for_floats(rng):
    # Float floordiv has no check: it stays a vectorizable loop (values as numpy).
    x = rng.standard_normal((8, 33)).astype(np.float32)
    y = rng.standard_normal((8, 33)).astype(np.float32) + 3
    f = jf.function(lambda a, b: a // b, jit_compile=True)
    np.testing.assert_array_equal(f(x, y).numpy(), np.floor_divide(x, y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_argmax_follows_tf_eager_over_nan_and_inf(dtype):
    """ArgMax/ArgMin compile (XLA compiles them) with TF eager's rule, not XLA's NaN one:
    NaNs are skipped and nothing beating the lowest finite value gives 0."""
    nan, inf = np.nan, np.inf
    rows = [[4, 5.5, nan], [nan, -inf, 2], [nan, nan, nan], [-inf, -inf, -inf], [1, 7, 7], [inf, 3, inf]]
    x = np.array(rows, dtype)
    want_max = [1, 2, 0, 0, 1, 0]
    want_min = [0, 1, 0, 0, 0, 1]
    for mode, f in _modes(lambda a: (jf.argmax(a, 1), jf.argmin(a, 1, output_type=jf.int32))).items():
        (mx, mn), ran = _compiled_ran(f, x)
        assert ran == (mode in ("jit_scope", "jit_compile")), mode
        assert mx.numpy().tolist() == want_max and mn.numpy().tolist() == want_min, mode
        assert mn.dtype == jf.int32
