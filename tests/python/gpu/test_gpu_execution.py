"""GPU execution against float64 numpy references: every op family with an emitter and the
fused clusters of gpu_bodies.py (whose PTX test_gpu_codegen.py checks), eagerly on /GPU:0 and
compiled; placement and copies; the seed's LSTM cell. These need a real GPU and skip without one (the stand-in driver of
test_fake_gpu.py records launches but does not run kernels)."""

import os

import numpy as np
import pytest
from gpu_bodies import BODIES

import jitflow as jf

pytestmark = pytest.mark.skipif(
    not jf._C.cuda_status()["available"] or bool(os.environ.get("JITFLOW_FAKE_GPU")),
    reason="GPU execution tests need a GPU (the CUDA driver is not available)",
)

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.fixture(autouse=True)
def full_float32_matmuls():
    """Float32 references to 1e-4 and tighter: TensorFloat-32 (TF's default, 10-bit inputs)
    is off here, as TF's own precision tests turn it off; test_tensor_float_32 checks it."""
    jf.config.experimental.enable_tensor_float_32_execution(False)
    yield
    jf.config.experimental.enable_tensor_float_32_execution(True)


def as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def reference(body, x, y):
    """The body on the CPU in float64: the numpy-backed reference for the GPU results."""
    return [
        r.numpy() for r in as_list(body(jf.constant(x.astype(np.float64)), jf.constant(y.astype(np.float64))))
    ]


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(BODIES))
def test_op_families_on_gpu_match_float64(name, mode, rng):
    body = BODIES[name]
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = rng.standard_normal((4, 8)).astype(np.float32)
    with jf.device("/GPU:0"):
        gx, gy = jf.constant(x), jf.constant(y)
    if mode == "eager":
        out = as_list(body(gx, gy))
    else:

        def compiled(a, b):
            with jf.jit_scope():
                return body(a, b)

        f = jf.function(compiled)
        out = as_list(f(gx, gy))
        clusters = f.get_concrete_function(gx, gy).clusters
        assert clusters and all(c.backend == "gpu" for c in clusters)
    ref = reference(body, x, y)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert o.device == GPU
        np.testing.assert_allclose(o.numpy(), r, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("shape", [(1,), (1000,), (3, 1025), (257, 33)])
def test_large_and_odd_shapes_cover_the_grid_stride_loops(shape, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    with jf.device("/GPU:0"):
        g = jf.constant(x)
        s = jf.reduce_sum(jf.tanh(g), axis=-1)
    np.testing.assert_allclose(s.numpy(), np.tanh(x.astype(np.float64)).sum(-1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_matmul_on_cublas_matches_float64(ta, tb, rng):
    a = rng.standard_normal((64, 96) if not ta else (96, 64)).astype(np.float32)
    b = rng.standard_normal((96, 48) if not tb else (48, 96)).astype(np.float32)
    with jf.device("/GPU:0"):
        y = jf.matmul(jf.constant(a), jf.constant(b), transpose_a=ta, transpose_b=tb)
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_tensor_float_32_rounds_float32_matmul_inputs_when_on(rng):
    a = rng.standard_normal((256, 512)).astype(np.float32)
    b = rng.standard_normal((512, 128)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    with jf.device("/GPU:0"):
        ga, gb = jf.constant(a), jf.constant(b)
    full = jf.matmul(ga, gb).numpy()
    jf.config.experimental.enable_tensor_float_32_execution(True)
    tf32 = jf.matmul(ga, gb).numpy()
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    full_err, tf32_err = (np.max(np.abs(y - ref) / scale) for y in (full, tf32))
    assert full_err < 1e-6
    assert tf32_err < 2e-3  # two inputs rounded to 11 significant bits each: about 2**-10
    if jf._C.cuda_compute_capability(0) >= 80:  # tensor cores that take TF32
        assert tf32_err > 4 * full_err


def test_repeated_compiled_steps_replayed_as_a_cuda_graph_match_float64(rng):
    # The same inputs and variable every step: after a few steps the cluster's run is a
    # graph replay, which must read the variable as the previous step left it.
    x = rng.standard_normal((64, 32)).astype(np.float32)
    y = rng.standard_normal((64, 16)).astype(np.float32)
    w0 = (rng.standard_normal((32, 16)) * 0.1).astype(np.float32)
    with jf.device("/GPU:0"):
        gx, gy = jf.constant(x), jf.constant(y)
        w = jf.Variable(w0)

    @jf.function(jit_compile=True)
    def step(x, y):
        with jf.GradientTape() as tape:
            loss = jf.reduce_mean(jf.square(jf.tanh(x @ w) - y))
        w.assign_sub(0.5 * tape.gradient(loss, w))
        return loss

    X, Y, W = x.astype(np.float64), y.astype(np.float64), w0.astype(np.float64)
    jf.debugging.reset_stats()
    for _ in range(8):
        loss = float(step(gx, gy).numpy())
        t = np.tanh(X @ W)
        np.testing.assert_allclose(loss, np.mean((t - Y) ** 2), rtol=1e-5)
        W = W - 0.5 * (X.T @ (2 * (t - Y) * (1 - t * t)) / t.size)
    np.testing.assert_allclose(w.numpy(), W, rtol=1e-4, atol=1e-6)
    assert jf.debugging.stats()["gpu_graph_launches"] >= 4


def test_placement_and_copies_round_trip(rng):
    x = rng.standard_normal((5, 6))
    with jf.device("/GPU:0"):
        g = jf.constant(x)
    assert g.device == GPU
    np.testing.assert_array_equal(g.numpy(), x)
    with jf.device("/CPU:0"):
        back = jf.identity(g)
    np.testing.assert_array_equal(back.numpy(), x)


def test_seed_lstm_cell_on_gpu_matches_cpu(rng):
    cell = jf.nn.LSTMCell(10)
    x = rng.standard_normal((10, 10)).astype(np.float32)
    state = [jf.zeros([10, 10]), jf.zeros([10, 10])]
    h_cpu, _ = cell(jf.constant(x), state)
    with jf.device("/GPU:0"):
        h_gpu, _state = cell(jf.constant(x), [jf.identity(s) for s in state])
    assert h_gpu.device == GPU
    np.testing.assert_allclose(h_gpu.numpy(), h_cpu.numpy(), rtol=1e-5, atol=1e-5)


def _np_log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


# Row kernels (one block per row, warp-shuffle reductions): a row shorter than a warp, one
# wider than a block, more rows than the grid has blocks (the rows' grid-stride loop).
@pytest.mark.parametrize("shape", [(1, 1), (3, 33), (5000, 7), (2, 3000), (64, 1024)])
def test_row_kernels_match_float64_numpy(shape, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    labels = rng.integers(0, shape[-1], shape[0]).astype(np.int32)
    with jf.device("/GPU:0"):
        gx, gl = jf.constant(x), jf.constant(labels)

    @jf.function(jit_compile=True)
    def rows(x, labels):
        mu = jf.reduce_mean(x, -1, keepdims=True)
        ln = (x - mu) * jf.math.rsqrt(jf.reduce_mean(jf.square(x - mu), -1, keepdims=True) + 1e-5)
        with jf.GradientTape() as tape:
            tape.watch(x)
            loss = jf.reduce_sum(jf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x))
        return jf.nn.softmax(x), jf.nn.log_softmax(x), ln, loss, tape.gradient(loss, x)

    before = jf.debugging.stats()
    sm, lsm, ln, loss, grad = (t.numpy() for t in rows(gx, gl))
    after = jf.debugging.stats()
    assert after["cluster_runs"] > before["cluster_runs"]
    # Rows of one element need no reduction (the passes fold a sum over one element away),
    # so no row kernel forms; every longer row runs through one.
    assert (after["row_group_runs"] > before["row_group_runs"]) == (shape[-1] > 1)
    x64 = x.astype(np.float64)
    ref_lsm = _np_log_softmax(x64)
    ref_sm = np.exp(ref_lsm)
    mu = x64.mean(-1, keepdims=True)
    ref_ln = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    picked = ref_lsm[np.arange(shape[0]), labels]
    onehot = np.eye(shape[-1])[labels]
    np.testing.assert_allclose(sm, ref_sm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lsm, ref_lsm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ln, ref_ln, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(loss, -picked.sum(), rtol=1e-4)
    np.testing.assert_allclose(grad, ref_sm - onehot, rtol=1e-5, atol=1e-5)
