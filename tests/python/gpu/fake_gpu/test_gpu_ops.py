"""Eager GPU ops and GPU-placed functions against the stand-in driver: which kernels are
built and launched, how often, and the cuBLAS matmuls' values (the stand-in cuBLAS computes
them, so the row-major mapping is checked against numpy)."""

import numpy as np
import pytest

import jitflow as jf

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


def on_gpu(a):
    with jf.device("/GPU:0"):
        return jf.constant(a)


def stats():
    return jf._C.gpu_stats(0)


def test_an_eager_op_is_compiled_once_per_rank_and_broadcast_pattern(fake, rng):
    x = on_gpu(rng.standard_normal((8, 16)).astype(np.float32))
    s0 = stats()
    fake.clear()
    y = jf.math.tanh(x)
    s1 = stats()
    assert y.device == GPU and y.shape == (8, 16) and y.dtype == jf.float32
    assert s1["op_compilations"] == s0["op_compilations"] + 1
    ((name, _grid, block, total),) = fake.launches()
    assert name.startswith("jf_gpu_op_") and total == 8 * 16 and block == 256
    # Other sizes of the same rank reuse the kernel (dims are parameters) ...
    jf.math.tanh(on_gpu(rng.standard_normal((3, 40)).astype(np.float32)))
    s2 = stats()
    assert s2["op_compilations"] == s1["op_compilations"]
    assert s2["op_cache_hits"] == s1["op_cache_hits"] + 1
    assert fake.launches()[-1][3] == 120
    # ... a size-1 dim (another broadcast pattern) or another dtype builds a new one.
    jf.math.tanh(on_gpu(rng.standard_normal((1, 40)).astype(np.float32)))
    jf.math.tanh(on_gpu(rng.standard_normal((3, 40))))
    assert stats()["op_compilations"] == s2["op_compilations"] + 2


def test_a_reduction_keeps_its_axis_on_the_host_and_launches_a_block_reduction(fake, rng):
    x = on_gpu(rng.standard_normal((6, 300)).astype(np.float32))
    fake.clear()
    with jf.device("/GPU:0"):
        s = jf.reduce_sum(x, axis=1)
    assert s.device == GPU and s.shape == (6,)
    ((_name, grid, block, total),) = fake.launches()
    assert (grid, total) == (6, 6) and block % 32 == 0  # one block per output element
    jf.reduce_sum(x, axis=0)  # another axis value: another kernel
    assert fake.launches()[-1][3] == 300


def test_binary_ops_broadcast_and_return_one_output_per_op(fake, rng):
    a = on_gpu(rng.standard_normal((4, 1, 5)).astype(np.float32))
    b = on_gpu(rng.standard_normal((3, 1)).astype(np.float32))
    fake.clear()
    c = a * b
    assert c.shape == (4, 3, 5) and c.device == GPU
    assert [t for *_, t in fake.launches()] == [60]
    parts = jf.split(on_gpu(np.zeros((6, 4), np.float32)), 3, axis=0)
    assert [p.shape for p in parts] == [(2, 4)] * 3 and all(p.device == GPU for p in parts)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_runs_on_cublas_with_tf_transposes(fake, rng, ta, tb, dtype):
    m, k, n = 5, 7, 3
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    calls = fake.gemm_calls()
    y = jf.matmul(on_gpu(a), on_gpu(b), transpose_a=ta, transpose_b=tb)
    assert y.device == GPU and fake.gemm_calls() == calls + 1
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape_a,shape_b,ta", [((5, 7), (7, 3), False), ((7, 5), (7, 3), True),
                                                 ((2, 5, 7), (2, 7, 3), False)])
def test_a_scaled_product_is_one_gemm_with_alpha(fake, rng, dtype, shape_a, shape_b, ta):
    # The stand-in cuBLAS computes alpha * (A B) as cuBLAS defines it and runs no kernel, so
    # the right value with no launch shows the scale went into the GEMM.
    a = rng.standard_normal(shape_a).astype(dtype)
    b = rng.standard_normal(shape_b).astype(dtype)

    @jf.function(jit_compile=True)
    def f(a, b):
        return 0.3 * jf.matmul(a, b, transpose_a=ta)

    fake.clear()
    calls = fake.gemm_calls()
    y = f(on_gpu(a), on_gpu(b))
    assert fake.launches() == [] and fake.gemm_calls() == calls + 1
    ref = 0.3 * np.matmul(np.swapaxes(a, -1, -2) if ta else a, b.astype(np.float64))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_a_product_read_elsewhere_keeps_its_scale_kernel(fake, rng):
    a = on_gpu(rng.standard_normal((4, 4)).astype(np.float32))

    @jf.function(jit_compile=True)
    def f(a):
        p = a @ a
        return p, 0.5 * p

    fake.clear()
    f(a)
    assert len(fake.launches()) == 1  # the multiply, reading the GEMM's product


def test_float32_matmuls_may_use_tensor_float_32_as_in_tf(fake, rng):
    # TF's default is on; switching it off gives cuBLAS's default (full float32) math mode.
    assert jf.config.experimental.tensor_float_32_execution_enabled()
    a = on_gpu(rng.standard_normal((4, 4)).astype(np.float32))
    try:
        jf.matmul(a, a)
        assert fake.sgemm_math_mode() == 3  # CUBLAS_TF32_TENSOR_OP_MATH
        jf.config.experimental.enable_tensor_float_32_execution(False)
        assert not jf.config.experimental.tensor_float_32_execution_enabled()
        jf.matmul(a, a)
        assert fake.sgemm_math_mode() == 0  # CUBLAS_DEFAULT_MATH
    finally:
        jf.config.experimental.enable_tensor_float_32_execution(True)
    jf.matmul(a, a)
    assert fake.sgemm_math_mode() == 3


@pytest.mark.parametrize(
    "sa,sb", [((2, 3), (2, 3)), ((2, 3), ()), ((), (4,)), ((2, 1), (1, 3)), ((3,), (2, 1))]
)
def test_batched_matmul_broadcasts_batches_like_tf(fake, rng, sa, sb):
    a = rng.standard_normal(sa + (4, 6))
    b = rng.standard_normal(sb + (6, 2))
    y = jf.matmul(on_gpu(a), on_gpu(b))
    np.testing.assert_allclose(y.numpy(), np.matmul(a, b), rtol=1e-12)


def test_empty_contraction_gives_zeros_on_the_gpu(rng):
    y = jf.matmul(on_gpu(np.zeros((3, 0))), on_gpu(np.zeros((0, 2))))
    np.testing.assert_array_equal(y.numpy(), np.zeros((3, 2)))


def test_integer_matmul_falls_back_to_the_cpu():
    y = jf.matmul(on_gpu(np.ones((2, 2), np.int32)), on_gpu(np.ones((2, 2), np.int32)))
    assert y.device.endswith("CPU:0")
    np.testing.assert_array_equal(y.numpy(), np.full((2, 2), 2))


def test_a_function_is_traced_per_placement_and_runs_on_the_gpu(fake, rng):
    @jf.function
    def f(x, w):
        return jf.nn.relu(x @ w) * 2.0

    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    gx, gw = on_gpu(x), on_gpu(w)
    fake.clear()
    calls = fake.gemm_calls()
    y = f(gx, gw)
    assert y.device == GPU
    assert fake.gemm_calls() == calls + 1 and len(fake.launches()) >= 1
    f(gx, gw)
    assert f.experimental_get_tracing_count() == 1
    yc = f(x, w)  # host inputs: a CPU trace
    assert f.experimental_get_tracing_count() == 2 and yc.device.endswith("CPU:0")
    with jf.device("/GPU:0"):
        assert f(x, w).device == GPU  # the scope places host inputs' call on the GPU ...
    assert f.experimental_get_tracing_count() == 2  # ... where the GPU trace serves it


def test_a_jit_scope_cluster_compiles_to_ptx_and_runs_on_the_gpu(fake, rng):
    @jf.function
    def g(x, w):
        with jf.xla.experimental.jit_scope():
            return jf.math.tanh(x @ w + 1.0)

    gx = on_gpu(rng.standard_normal((4, 8)).astype(np.float32))
    gw = on_gpu(rng.standard_normal((8, 3)).astype(np.float32))
    jf._C.reset_stats()
    fake.clear()
    calls = fake.gemm_calls()
    y = g(gx, gw)
    assert y.device == GPU and y.shape == (4, 3)
    assert jf._C.stats()["cluster_runs"] == 1
    assert jf._C.stats()["compilations"] == 1  # one cluster, compiled (to PTX) once
    assert fake.gemm_calls() == calls + 1
    names = [n for n, *_ in fake.launches()]
    assert names and all("cluster_0" in n for n in names), names
    clusters = g.get_concrete_function(gx, gw).clusters
    assert [c.backend for c in clusters] == ["gpu"]


def test_input_signature_functions_keep_one_trace_per_placement(rng):
    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32)])
    def h(x):
        return x * 3.0

    x = rng.standard_normal(5).astype(np.float32)
    assert h(x).device.endswith("CPU:0")
    assert h(on_gpu(x)).device == GPU
    assert h(on_gpu(x[:3])).device == GPU
    assert h.experimental_get_tracing_count() == 2


def test_bad_shapes_raise_the_cpu_kernels_error_and_do_not_poison_the_cache(fake, rng):
    a = on_gpu(rng.standard_normal((3, 4)).astype(np.float32))
    with pytest.raises(
        jf.errors.InvalidArgumentError, match=r"MatMul: Matrix size-incompatible: In\[0\]: \[3,4\]"
    ):
        jf.matmul(a, a)
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"Incompatible shapes: \[3,4\] vs. \[5\]"):
        a + on_gpu(np.ones(5, np.float32))
    calls = fake.gemm_calls()
    y = jf.matmul(a, on_gpu(np.ones((4, 2), np.float32)))  # the same key, now valid: cuBLAS
    assert y.device.endswith("GPU:0") and fake.gemm_calls() == calls + 1


def test_argmax_compiles_to_a_gpu_kernel_with_its_dimension_read_on_the_host(fake, rng):
    # ArgMax has an emitter: it runs on the GPU (the stand-in records its kernel, computes nothing).
    x = on_gpu(rng.standard_normal((3, 5)).astype(np.float32))
    s0 = stats()
    fake.clear()
    r = jf.argmax(x, 1)
    assert r.device.endswith("GPU:0") and tuple(r.shape) == (3,) and r.dtype == jf.int64
    assert stats()["op_compilations"] == s0["op_compilations"] + 1
    assert stats()["op_cpu_fallbacks"] == s0["op_cpu_fallbacks"]


def test_a_cpu_scope_reuses_the_cpu_trace_and_brings_gpu_inputs_back(rng):
    @jf.function
    def f(x):
        return x * 2.0

    x = rng.standard_normal(4).astype(np.float32)
    f(x)
    with jf.device("/CPU:0"):
        assert f(x).device.endswith("CPU:0")
        y = f(on_gpu(x))
    assert f.experimental_get_tracing_count() == 1
    assert y.device.endswith("CPU:0")
    np.testing.assert_allclose(y.numpy(), x * 2.0)


def test_a_gpu_loop_keeps_one_step_per_iteration_and_says_why(fake):
    # the whole-loop form is CPU-only: a GPU function's loop runs its PTX step per iteration
    @jf.function(jit_compile=True)
    def f(x, n):
        for _ in jf.range(n):
            x = jf.tanh(x * 1.01 + 0.1) * 0.9
        return x

    gx = on_gpu(np.ones(8, np.float32))
    rows = jf.explain(f, gx, jf.constant(3)).by_op()
    assert rows["While"].status == "eager"
    assert "CPU-only" in rows["While"].reason
    body = [r for k, r in rows.items() if k.startswith("While/body/") and r.status == "compiled"]
    assert body


def test_a_gpu_function_keeps_its_if_as_a_branch_and_says_why(fake):
    # computing an If inline is CPU-only: on a GPU its branches are clustered on their own
    @jf.function(jit_compile=True)
    def f(x, p):
        return jf.cond(p, lambda: x * 2.0, lambda: x - 1.0)

    gx = on_gpu(np.ones(8, np.float32))
    row = jf.explain(f, gx, jf.constant(True)).by_op()["If"]
    assert row.status == "eager" and "on a GPU an If is not computed inline" in row.reason


@pytest.mark.parametrize("batched", [False, True], ids=["matmul", "batch_matmul"])
def test_a_compiled_gpu_matmul_reads_a_reshaped_input_in_the_nodes_shape(fake, rng, batched):
    # The reshape is no kernel: cuBLAS reads the input's buffer with the matmul's input shape.
    @jf.function(jit_compile=True)
    def f(x, w):
        return jf.matmul(jf.reshape(x, [2, 3, 4] if batched else [6, 4]), w)

    x = rng.standard_normal(24)
    w = rng.standard_normal((2, 4, 5) if batched else (4, 5))
    jf._C.reset_stats()
    y = f(on_gpu(x), on_gpu(w))
    assert y.device == GPU and jf._C.stats()["cluster_runs"] == 1
    np.testing.assert_allclose(
        y.numpy(), np.matmul(x.reshape((2, 3, 4) if batched else (6, 4)), w), rtol=1e-12
    )
