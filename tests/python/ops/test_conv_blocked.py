"""Chains of float32 NHWC convolutions kept in oneDNN's blocked layout (passes/conv_layout.cc):
the value between two convolutions is never reordered, only the chain's first input and last
output are (counted in conv_blocked_runs / conv_layout_reorders and said by jf.explain). On an
AVX-512 core oneDNN prefers NHWC itself and no chain forms, so these run a child interpreter
with oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA), where it prefers nChw8c; values against float64
numpy direct convolutions."""

import json
import os
import subprocess
import sys

import conv_ref as R
import numpy as np
import pytest

import jitflow as jf

HERE = os.path.dirname(os.path.abspath(__file__))


def _has_avx2():
    if not os.path.exists("/proc/cpuinfo"):
        return False
    with open("/proc/cpuinfo") as f:
        return "avx2" in f.read()


pytestmark = pytest.mark.skipif(
    not _has_avx2(), reason="needs an x86 CPU with AVX2 (oneDNN's blocked layouts are asked for at that ISA)"
)

# The child: builds each case's inputs from a seed, runs it, prints values and counter deltas.
CHILD = r"""
import json, sys
import numpy as np
import jitflow as jf
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/.."]
import test_conv_blocked as T
out = {}
for name in sys.argv[2:]:
    fn, args, mode = T.case(name)
    f = {"compiled": jf.function(fn, jit_compile=True), "function": jf.function(fn), "eager": fn}[mode]
    tensors = [jf.constant(a) for a in args]
    f(*tensors)  # traced (and compiled) once, then counted on the second run
    s0 = jf.debugging.stats()
    y = f(*tensors)
    s1 = jf.debugging.stats()
    d = {k: s1[k] - s0[k] for k in ("conv_blocked_runs", "conv_layout_reorders", "cluster_runs")}
    ys = y if isinstance(y, (list, tuple)) else [y]
    d["values"] = [t.numpy().tolist() for t in ys]
    if mode != "eager":
        d["explain"] = {r.op: r.reason for r in jf.explain(f, *tensors)}
    out[name] = d
print(json.dumps(out))
"""


def _data(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (3, 9, 8, 3)).astype(np.float32)
    w1 = rng.uniform(-1, 1, (3, 3, 3, 16)).astype(np.float32)
    w2 = rng.uniform(-0.3, 0.3, (3, 3, 16, 16)).astype(np.float32)
    w3 = rng.uniform(-0.3, 0.3, (1, 1, 16, 5)).astype(np.float32)
    b = rng.uniform(-1, 1, (16,)).astype(np.float32)
    return x, w1, w2, w3, b


def _chain(x, w1, w2, w3, b):
    h = jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(x, w1, 1, "SAME"), b))
    h = jf.nn.conv2d(h, w2, 2, "SAME")
    return jf.nn.conv2d(h, w3, 1, "VALID")


def _chain_ref(x, w1, w2, w3, b):
    h = np.maximum(R.conv2d(x, w1, (1, 1), "SAME") + b, 0)
    return R.conv2d(R.conv2d(h, w2, (2, 2), "SAME"), w3, (1, 1), "VALID")


def _read_elsewhere(x, w1, w2, w3, b):
    h = jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(x, w1, 1, "SAME"), b))
    h2 = jf.nn.conv2d(h, w2, 2, "SAME")
    return jf.nn.conv2d(h2, w3, 1, "VALID"), jf.reduce_sum(h2, axis=[1, 2])


def _twelve_channels(x, w1, w2, w3, b):
    h = jf.nn.conv2d(x, w1[:, :, :, :12], 1, "SAME")
    return jf.nn.conv2d(h, w2[:, :, :12, :], 1, "SAME")


def _training(x, w1, w2, w3, b):
    with jf.GradientTape() as tape:
        tape.watch([w1, w2])
        y = _chain(x, w1, w2, w3, b)
        loss = jf.reduce_sum(y * y)
    return [y] + tape.gradient(loss, [w1, w2])


def _pools(x, w1, w2, w3, b):
    h = jf.nn.relu(jf.nn.bias_add(jf.nn.conv2d(x, w1, 1, "SAME"), b))
    h = jf.nn.max_pool2d(h, 2, 2, "VALID")
    h = jf.nn.avg_pool2d(jf.nn.conv2d(h, w2, 1, "SAME"), 3, 2, "SAME")
    return jf.nn.conv2d(h, w3, 1, "VALID")


def _pools_ref(x, w1, w2, w3, b):
    h = R.max_pool(np.maximum(R.conv2d(x, w1, (1, 1), "SAME") + b, 0), (2, 2), (2, 2), "VALID")
    h = R.avg_pool(R.conv2d(h, w2, (1, 1), "SAME"), (3, 3), (2, 2), "SAME")
    return R.conv2d(h, w3, (1, 1), "VALID")


def _nan_data():
    """NaN pixels, each alone in its 2x2 window, through 1x1 convolutions."""
    x, w1, w2, w3, b = _data(11)
    x[0, 2, 2, :], x[1, 5, 4, 1] = np.nan, np.nan
    return x, np.ascontiguousarray(w1[:1, :1]), w2, w3, b


def _pool_nan(x, w1, w2, w3, b):
    h = jf.nn.max_pool2d(jf.nn.conv2d(x, w1, 1, "VALID"), 2, 2, "VALID")
    return jf.nn.conv2d(h, w2[:1, :1], 1, "VALID")


CASES = {
    "chain_compiled": (_chain, "compiled"),
    "chain_function": (_chain, "function"),
    "read_elsewhere": (_read_elsewhere, "compiled"),
    "twelve_channels": (_twelve_channels, "compiled"),
    "training": (_training, "compiled"),
    "pools": (_pools, "compiled"),
    "pool_nan": (_pool_nan, "compiled"),
}


def case(name):
    fn, mode = CASES[name]
    return fn, _nan_data() if name == "pool_nan" else _data(len(name)), mode


@pytest.fixture(scope="module")
def child():
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    r = subprocess.run(
        [sys.executable, "-c", CHILD, HERE, *CASES],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["chain_compiled", "chain_function"])
def test_a_chain_of_three_convolutions_stays_blocked(child, name):
    got = child[name]
    x, w1, w2, w3, b = _data(len(name))
    np.testing.assert_allclose(got["values"][0], _chain_ref(x, w1, w2, w3, b), rtol=3e-5, atol=3e-5)
    # Three convolutions ran blocked; only the first input and the last output were reordered.
    assert got["conv_blocked_runs"] == 3 and got["conv_layout_reorders"] == 2, got
    if name == "chain_compiled":
        assert got["cluster_runs"] >= 1
    why = got["explain"]
    assert "its output stays in oneDNN's blocked layout" in why["Conv2D"], why
    assert "its input and output stay in oneDNN's blocked layout" in why["Conv2D_1"], why
    assert "its input stays in oneDNN's blocked layout" in why["Conv2D_2"], why


def test_a_value_read_by_another_op_is_not_blocked(child):
    got = child["read_elsewhere"]
    x, w1, w2, w3, b = _data(len("read_elsewhere"))
    h = np.maximum(R.conv2d(x, w1, (1, 1), "SAME") + b, 0)
    h2 = R.conv2d(h, w2, (2, 2), "SAME")
    np.testing.assert_allclose(got["values"][0], R.conv2d(h2, w3, (1, 1), "VALID"), rtol=3e-5, atol=3e-5)
    np.testing.assert_allclose(got["values"][1], h2.sum(axis=(1, 2)), rtol=3e-5, atol=3e-5)
    # The first link only: the second convolution's output is also summed.
    assert got["conv_blocked_runs"] == 2 and got["conv_layout_reorders"] == 2, got


def test_channels_that_do_not_fill_the_blocks_are_not_blocked(child):
    got = child["twelve_channels"]
    x, w1, w2, _, _ = _data(len("twelve_channels"))
    want = R.conv2d(R.conv2d(x, w1[:, :, :, :12], (1, 1), "SAME"), w2[:, :, :12, :], (1, 1), "SAME")
    np.testing.assert_allclose(got["values"][0], want, rtol=3e-5, atol=3e-5)
    assert got["conv_blocked_runs"] == 0, got


def test_a_training_step_keeps_its_values_read_by_gradients(child):
    """The relu's output is also read by its gradient (and w2's), so that link does not form;
    the second convolution's output only by the last (w3's gradient is not asked for), so that
    one does; gradients against float64."""
    got = child["training"]
    x, w1, w2, w3, b = _data(len("training"))
    np.testing.assert_allclose(got["values"][0], _chain_ref(x, w1, w2, w3, b), rtol=3e-5, atol=3e-5)
    assert got["conv_blocked_runs"] == 2 and got["conv_layout_reorders"] == 2, got
    # d(sum y^2)/dw2 by the chain rule through the last 1x1 convolution.
    h = np.maximum(R.conv2d(x, w1, (1, 1), "SAME") + b, 0)
    h2 = R.conv2d(h, w2, (2, 2), "SAME")
    y = R.conv2d(h2, w3, (1, 1), "VALID")
    dh2 = R.conv2d_input_grad(h2.shape, w3, 2 * y, (1, 1), "VALID")
    np.testing.assert_allclose(
        got["values"][2], R.conv2d_filter_grad(h, w2.shape, dh2, (2, 2), "SAME"), rtol=1e-4, atol=1e-4
    )


def test_this_process_gives_the_same_values_whatever_layout_onednn_prefers(rng):
    x, w1, w2, w3, b = _data(7)
    y = jf.function(_chain, jit_compile=True)(*(jf.constant(t) for t in (x, w1, w2, w3, b)))
    np.testing.assert_allclose(y.numpy(), _chain_ref(x, w1, w2, w3, b), rtol=3e-5, atol=3e-5)


def test_pools_between_convolutions_stay_blocked(child):
    """conv-relu, 2x2 max pool, conv, 3x3 SAME average pool, conv: oneDNN's pooling on the
    blocked layout, five links, reordered only at the ends."""
    got = child["pools"]
    np.testing.assert_allclose(got["values"][0], _pools_ref(*_data(len("pools"))), rtol=3e-5, atol=3e-5)
    assert got["conv_blocked_runs"] == 5 and got["conv_layout_reorders"] == 2, got
    assert "its input and output stay in oneDNN's blocked layout" in got["explain"]["MaxPool"], got["explain"]


def test_a_blocked_max_pool_skips_nan_as_tf(child):
    """TF's max pool never picks NaN (its comparisons keep the larger value); oneDNN's on the
    blocked layout gives the same: a window holding one NaN gives the others' maximum."""
    got = child["pool_nan"]
    x, w1, w2, _, _ = _nan_data()
    with np.errstate(invalid="ignore"):
        h = R.max_pool(R.conv2d(x, w1, (1, 1), "VALID"), (2, 2), (2, 2), "VALID")
        want = R.conv2d(h, w2[:1, :1], (1, 1), "VALID")
    assert not np.isnan(want).any()
    np.testing.assert_allclose(got["values"][0], want, rtol=3e-5, atol=3e-5)
    assert got["conv_blocked_runs"] == 3 and got["conv_layout_reorders"] == 2, got
