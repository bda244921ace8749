"""TensorArrays inside compiled loops: an AutoGraph for loop reading one jf.TensorArray and
writing another (the RNN pattern) runs whole in one compiled cluster run, the written array
carried in one buffer that each iteration writes one element of (stats' compiled_loop_runs and
tensor_array_copied_bytes), with values against float64 numpy, gradients against finite
differences, and the forms that cannot compile keeping the executor's path with their reason."""

import numpy as np
import pytest

import jitflow as jf


def _stats():
    return jf.debugging.stats()


def _delta(before, key):
    return _stats()[key] - before[key]


def rnn(xs, w):
    n = jf.shape(xs)[0]
    xta = jf.TensorArray(xs.dtype, size=n).unstack(xs)
    out = jf.TensorArray(xs.dtype, size=n)
    h = jf.zeros(jf.shape(xs)[1:], xs.dtype)
    for t in jf.range(n):
        h = jf.tanh(xta.read(t) * w + h * 0.5 + 0.1)
        out = out.write(t, h)
    return out.stack(), h


def np_rnn(xs, w):
    xs = np.asarray(xs, np.float64)
    h = np.zeros(xs.shape[1:])
    out = np.zeros(xs.shape)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] * w + h * 0.5 + 0.1)
        out[t] = h
    return out, h


def _modes():
    def scoped(xs, w):
        with jf.jit_scope():
            return rnn(xs, w)

    sig = [jf.TensorSpec([None, None, None], jf.float32), jf.TensorSpec([], jf.float32)]
    return {
        "jit_compile": jf.function(rnn, jit_compile=True),
        "jit_scope": jf.function(scoped),
        "none_signature": jf.function(rnn, jit_compile=True, input_signature=sig),
    }


@pytest.mark.parametrize("mode", ["jit_compile", "jit_scope", "none_signature"])
@pytest.mark.parametrize("steps", [0, 1, 2, 7])
def test_an_rnn_over_tensor_arrays_runs_as_one_compiled_loop(mode, steps):
    f = _modes()[mode]
    rng = np.random.default_rng(steps)
    xs = rng.standard_normal((steps, 3, 5)).astype(np.float32)
    before = _stats()
    ys, h = f(jf.constant(xs), jf.constant(0.9))
    ref_ys, ref_h = np_rnn(xs, 0.9)
    if steps or mode != "none_signature":  # an empty array traced without its element shape stacks
        np.testing.assert_allclose(ys.numpy(), ref_ys, rtol=3e-6, atol=2e-6)  # as [0, 0, 0], as before
    np.testing.assert_allclose(h.numpy(), ref_h, rtol=3e-6, atol=2e-6)
    # every iteration in one run of the step; a zero-trip loop never runs it
    assert _delta(before, "compiled_loop_runs") == (1 if steps else 0)
    assert _delta(before, "compiled_loop_iterations") == steps
    assert _delta(before, "compiled_loop_fallbacks") == 0
    # the written array is copied once, from the caller's buffer, not once per iteration (traced
    # without its element shape, the first iteration gives it one and the loop then copies it)
    copies = 1 if mode != "none_signature" or steps > 1 else 0
    assert _delta(before, "tensor_array_copied_bytes") == steps * 3 * 5 * 4 * copies
    rows = jf.explain(f, jf.constant(xs), jf.constant(0.9)).by_op()
    assert rows["While"].status == "compiled"
    for op in ("TensorArrayRead", "TensorArrayWrite"):
        row = [r for k, r in rows.items() if k.startswith("While/body/") and r.type == op]
        assert row and row[0].status == "compiled", (op, row)


def test_plain_function_keeps_the_executor_and_gives_the_same_values():
    f = jf.function(rnn)
    xs = np.random.default_rng(1).standard_normal((4, 2, 3)).astype(np.float32)
    before = _stats()
    ys, _ = f(xs, np.float32(1.1))
    np.testing.assert_allclose(ys.numpy(), np_rnn(xs, 1.1)[0], rtol=3e-6, atol=2e-6)
    assert _delta(before, "compiled_loop_runs") == 0


def test_an_rnn_with_matmuls_and_two_arrays_runs_whole_in_float64():
    # matmuls are library steps: the loop takes the general path, still in one cluster run
    @jf.function(jit_compile=True)
    def f(xs, wx, wh):
        n = jf.shape(xs)[0]
        xta = jf.TensorArray(jf.float64, size=n).unstack(xs)
        hs = jf.TensorArray(jf.float64, size=n)
        ss = jf.TensorArray(jf.float64, size=n)
        h = jf.zeros([xs.shape[1], wh.shape[0]], jf.float64)
        for t in jf.range(n):
            h = jf.tanh(jf.matmul(xta.read(t), wx) + jf.matmul(h, wh))
            hs = hs.write(t, h)
            ss = ss.write(t, jf.reduce_sum(h, axis=1))
        return hs.stack(), ss.stack()

    rng = np.random.default_rng(3)
    xs, wx, wh = (
        rng.standard_normal((6, 2, 4)),
        rng.standard_normal((4, 3)) * 0.5,
        rng.standard_normal((3, 3)) * 0.5,
    )
    h = np.zeros((2, 3))
    ref_h, ref_s = [], []
    for t in range(6):
        h = np.tanh(xs[t] @ wx + h @ wh)
        ref_h.append(h)
        ref_s.append(h.sum(1))
    before = _stats()
    hs, ss = f(xs, wx, wh)
    np.testing.assert_allclose(hs.numpy(), np.stack(ref_h), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ss.numpy(), np.stack(ref_s), rtol=1e-12, atol=1e-13)
    assert _delta(before, "compiled_loop_runs") == 1
    assert _delta(before, "compiled_loop_iterations") == 6
    assert _delta(before, "tensor_array_copied_bytes") == (6 * 2 * 3 + 6 * 2) * 8


def np_loss(xs, wx, wh):
    h = np.zeros((xs.shape[1], wh.shape[0]))
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh)
        loss += np.sum(h * h) * (t + 1)
    return loss


@pytest.mark.parametrize("steps", [1, 5])
def test_gradients_through_a_compiled_loop_with_tensor_arrays(steps):
    @jf.function(jit_compile=True)
    def grads(xs, wx, wh, weights):
        with jf.GradientTape() as tape:
            tape.watch([xs, wx, wh])
            n = xs.shape[0]  # a run-time length's stack gradient needs Range, which does not compile
            xta = jf.TensorArray(jf.float64, size=n).unstack(xs)
            hs = jf.TensorArray(jf.float64, size=n)
            h = jf.zeros([xs.shape[1], wh.shape[0]], jf.float64)
            for t in jf.range(n):
                h = jf.tanh(jf.matmul(xta.read(t), wx) + jf.matmul(h, wh))
                hs = hs.write(t, h)
            stacked = hs.stack()
            loss = jf.reduce_sum(stacked * stacked * weights)
        return (loss, *tape.gradient(loss, [xs, wx, wh]))

    rng = np.random.default_rng(7)
    xs, wx, wh = (
        rng.standard_normal((steps, 2, 3)),
        rng.standard_normal((3, 4)) * 0.5,
        rng.standard_normal((4, 4)) * 0.5,
    )
    before = _stats()
    weights = np.arange(1, steps + 1, dtype=np.float64).reshape(-1, 1, 1)
    loss, gxs, gwx, gwh = grads(xs, wx, wh, weights)
    assert _delta(before, "compiled_loop_runs") >= 1  # the forward loop, whole
    assert float(loss) == pytest.approx(np_loss(xs, wx, wh), rel=1e-12)
    eps = 1e-6
    for arg, g in ((0, gxs), (1, gwx), (2, gwh)):
        args = [xs, wx, wh]
        num = np.zeros(args[arg].shape)
        for idx in np.ndindex(*args[arg].shape):
            up = [a.copy() for a in args]
            dn = [a.copy() for a in args]
            up[arg][idx] += eps
            dn[arg][idx] -= eps
            num[idx] = (np_loss(*up) - np_loss(*dn)) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), num, rtol=1e-6, atol=1e-8)


def test_an_array_read_and_written_in_one_iteration_keeps_its_old_rows():
    # the write cannot go in place (the read sees the array before it): a copy per write
    @jf.function(jit_compile=True)
    def f(x0, n):
        acc = jf.TensorArray(jf.float32, size=n).write(0, x0)
        for t in jf.range(1, n):
            acc = acc.write(t, acc.read(t - 1) * 0.5 + acc.read(0))
        return acc.stack()

    x0 = np.array([1.0, -2.0, 4.0], np.float32)
    ref = [x0.astype(np.float64)]
    for _ in range(1, 5):
        ref.append(ref[-1] * 0.5 + ref[0])
    before = _stats()
    np.testing.assert_allclose(f(x0, jf.constant(5)).numpy(), np.stack(ref), rtol=2e-6)
    assert _delta(before, "compiled_loop_runs") == 1
    assert _delta(before, "compiled_loop_iterations") == 4


def test_a_write_past_the_end_raises_eagers_error():
    def f(x, n):
        out = jf.TensorArray(jf.float32, size=3)
        for t in jf.range(n):
            out = out.write(t, x * jf.cast(t, jf.float32))
        return out.stack()

    x = np.ones(2, np.float32)
    for g in (jf.function(f, jit_compile=True), jf.function(f)):
        with pytest.raises(
            jf.errors.InvalidArgumentError, match="Trying to modify element 3 in a list with 3 elements"
        ):
            g(x, jf.constant(5))
        np.testing.assert_array_equal(g(x, jf.constant(3)).numpy(), [[0, 0], [1, 1], [2, 2]])


def test_a_loop_with_an_op_that_cannot_compile_keeps_the_executor_and_says_why():
    @jf.function
    def f(xs):
        n = jf.shape(xs)[0]
        xta = jf.TensorArray(jf.float32, size=n).unstack(xs)
        out = jf.TensorArray(jf.float32, size=n)
        with jf.jit_scope():
            for t in jf.range(n):
                v = jf.math.unsorted_segment_sum(jf.tanh(xta.read(t)), [0, 1, 0, 1], 2) * 0.5
                out = out.write(t, v)
        return out.stack()

    xs = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    t = np.tanh(xs.astype(np.float64))
    ref = np.stack([t[:, 0] + t[:, 2], t[:, 1] + t[:, 3]], 1) * 0.5
    before = _stats()
    np.testing.assert_allclose(f(xs).numpy(), ref, rtol=2e-6, atol=1e-6)
    assert _delta(before, "compiled_loop_runs") == 0
    # the executor writes the carried array in place: one copy of the initial zeros, no more
    assert _delta(before, "tensor_array_copied_bytes") <= 3 * 2 * 4
    rows = jf.explain(f, xs).by_op()
    assert rows["While"].status == "eager"
    assert "one run of its compiled step per iteration" in rows["While"].reason
    w = [r for k, r in rows.items() if k.startswith("While/body/") and r.type == "TensorArrayWrite"]
    assert w and w[0].status == "eager"
    assert "compiles only in the step of a loop that runs whole" in w[0].reason


def test_a_growing_array_stays_on_the_executor_with_its_reason():
    @jf.function(jit_compile=True)
    def f(x, n):
        out = jf.TensorArray(jf.float32, size=0, dynamic_size=True)
        for t in jf.range(n):
            x = x * 2.0
            out = out.write(t, x)
        return out.stack()

    before = _stats()
    np.testing.assert_array_equal(f(np.ones(2, np.float32), jf.constant(3)).numpy(), [[2, 2], [4, 4], [8, 8]])
    assert _delta(before, "compiled_loop_runs") == 0
    rows = jf.explain(f, np.ones(2, np.float32), jf.constant(3)).by_op()
    w = [r for k, r in rows.items() if k.startswith("While/body/") and r.type == "TensorArrayWrite"]
    assert w and w[0].status == "eager" and "dynamic_size" in w[0].reason


def test_a_read_past_the_size_raises_in_the_compiled_loop():
    # the second loop's array grew to a capacity of 4 for its 3 elements: a read at 3 is past
    # its size though inside its buffer, and must fail as eagerly
    @jf.function(jit_compile=True)
    def f(n, m):
        grown = jf.TensorArray(jf.float32, size=0, dynamic_size=True)
        for t in jf.range(n):
            grown = grown.write(t, jf.fill([2], jf.cast(t, jf.float32)))
        total = jf.zeros([2])
        for t in jf.range(m):
            total = total + grown.read(t) * 2.0
        return total

    before = _stats()
    np.testing.assert_array_equal(f(jf.constant(3), jf.constant(3)).numpy(), [6.0, 6.0])
    assert _delta(before, "compiled_loop_runs") == 1  # the reading loop; the growing one is per step
    with pytest.raises(jf.errors.InvalidArgumentError, match="TensorArrayRead"):
        f(jf.constant(3), jf.constant(4))


def test_scan_map_fn_and_foldl_run_as_one_compiled_loop():
    # each is one while_loop over TensorArrays when traced
    x = np.random.default_rng(4).standard_normal((9, 5)).astype(np.float32)
    xd = x.astype(np.float64)
    a = xd[0]
    scanned = [a]
    for e in xd[1:]:
        a = np.tanh(a * 0.5 + e)
        scanned.append(a)
    cases = [
        (lambda v: jf.scan(lambda acc, e: jf.tanh(acc * 0.5 + e), v), np.stack(scanned)),
        (lambda v: jf.map_fn(lambda e: jf.tanh(e) * 2.0, v), np.tanh(xd) * 2.0),
        (lambda v: jf.foldl(lambda acc, e: acc + jf.tanh(e), v), xd[0] + np.tanh(xd[1:]).sum(0)),
    ]
    for fn, ref in cases:
        before = _stats()
        np.testing.assert_allclose(jf.function(fn, jit_compile=True)(x).numpy(), ref, rtol=3e-6, atol=2e-6)
        assert _delta(before, "compiled_loop_runs") == 1
        assert _delta(before, "compiled_loop_fallbacks") == 0


def test_all_none_signature_with_size_one_and_empty_element_dims():
    # size-1 dims run the loop in a specialization; an array of empty elements learns [0, 2]
    f = _modes()["none_signature"]
    for shape in [(5, 1, 4), (4, 1, 1), (1, 1, 1), (3, 0, 2)]:
        xs = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
        before = _stats()
        ys, h = f(jf.constant(xs), jf.constant(0.8))
        ref_ys, ref_h = np_rnn(xs, 0.8)
        assert ys.shape == shape
        np.testing.assert_allclose(ys.numpy(), ref_ys, rtol=3e-6, atol=2e-6)
        np.testing.assert_allclose(h.numpy(), ref_h, rtol=3e-6, atol=2e-6)
        assert _delta(before, "compiled_loop_runs") == 1
        assert _delta(before, "compiled_loop_iterations") == shape[0]
        assert _delta(before, "compiled_loop_fallbacks") == 0
