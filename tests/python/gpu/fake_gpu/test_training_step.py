"""A whole training step on /GPU:0 under jit_compile=True, counted through the stand-in driver:
what crosses between host and device, what is allocated, how often the host waits, and how
many kernels a step launches. The stand-in runs no kernel, so values are not checked here
(test_gpu_execution.py does that on a GPU); the stand-in cuBLAS skips its arithmetic too, so
the step runs at the sizes of the workload it stands for."""

import ctypes

import numpy as np
import pytest

import jitflow as jf

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
BATCH, FEATURES, HIDDEN, CLASSES = 512, 1024, 4096, 10


@pytest.fixture
def big(fake):
    fake.compute_gemms(False)
    yield fake
    fake.compute_gemms(True)


def mlp_step(rng):
    """The MLP step: relu(x @ w1) @ w2, sparse softmax cross-entropy, both gradients, SGD."""
    with jf.device("/GPU:0"):
        w1 = jf.Variable(rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32) * 0.02)
        w2 = jf.Variable(rng.standard_normal((HIDDEN, CLASSES)).astype(np.float32) * 0.02)
        x = jf.constant(rng.standard_normal((BATCH, FEATURES)).astype(np.float32))
        y = jf.constant(rng.integers(0, CLASSES, BATCH).astype(np.int32))

    @jf.function(jit_compile=True)
    def step(x, y):
        with jf.GradientTape() as tape:
            logits = jf.nn.relu(x @ w1) @ w2
            loss = jf.reduce_mean(jf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.1 * g1)
        w2.assign_sub(0.1 * g2)
        return loss

    return step, (x, y), (w1, w2)


def test_the_mlp_step_compiles_whole_for_the_gpu(big, rng):
    step, args, (w1, w2) = mlp_step(rng)
    assert w1.read_value().device == GPU and w2.read_value().device == GPU  # made under the GPU scope
    cf = step.get_concrete_function(*args)
    assert [c.backend for c in cf.clusters] == ["gpu"]
    # Everything but the variable reads and updates is in the one cluster (log-softmax, the
    # label gather, the cross-entropy's gradient included): nothing runs on host kernels.
    rows = jf.explain(step, *args)
    eager = [r for r in rows if r.status == "eager"]
    assert sorted({r.type for r in eager}) == ["AssignSubVariableOp", "ReadVariableOp"], eager
    assert all(r.reason == "stateful op" for r in eager)
    compiled = {r.type for r in rows if r.status == "compiled"}
    assert {"LogSoftmax", "GatherV2", "MatMul", "Relu", "Mean"} <= compiled, compiled


def test_the_mlp_step_stays_on_the_device(big, rng):
    step, args, (w1, w2) = mlp_step(rng)
    float(step(*args).numpy())  # the first step compiles, links, uploads constants and fills the pool
    jf.debugging.reset_stats()
    steps = 4
    for _ in range(steps):
        before = big.counters()
        big.clear()
        loss = step(*args)
        assert loss.device == GPU
        float(loss.numpy())  # the one value the host reads
        del loss
        d = {k: v - before[k] for k, v in big.counters().items()}
        launches = big.launches()
        # Reading the 4-byte loss is the only copy and the only wait; the pool serves every
        # buffer (the previous step's came back to it); nothing else is uploaded: the kernels
        # take their buffer and dim tables as launch parameters, and the run-time checks
        # report through a mapped status word.
        assert d == {
            "allocations": 0,
            "h2d": 0,
            "h2d_bytes": 0,
            "d2h": 1,
            "d2h_bytes": 4,
            "d2d": 0,
            "synchronizations": 1,
            "gemms": 5,
        }, d
        # 5 cuBLAS GEMMs (x @ w1 and h @ w2 forward; dlogits @ w2^T, and h^T @ dlogits and
        # x^T @ dh backward, those two scaled by 0.1 as their alpha) and 7 kernel launches:
        #   5 from the cluster: the relu (B*H elements); the forward row kernel, one block
        #     per row of logits (B rows: log-softmax's max, sum of exponentials, their log,
        #     the log-softmax values, the label's pick); the mean (1); the backward row kernel
        #     (B rows: the row sum of the log-softmax gradient, the logits' gradient); the
        #     relu's gradient (B*H);
        #   2 variable updates, each w -= 0.1 * g in the variable's own buffer (F*H, H*C).
        cluster = sorted(
            (n.rsplit("_", 1)[-1].rstrip("0123456789"), t)
            for n, _g, _b, t in launches
            if n.startswith("step_")
        )
        B, C, F, H = BATCH, CLASSES, FEATURES, HIDDEN
        want = [
            ("step", B * H),
            ("rows", B),
            ("step", 1),
            ("rows", B),
            ("step", B * H),
        ]
        assert cluster == sorted(want), cluster
        updates = [(i, t) for i, (n, _g, _b, t) in enumerate(launches) if n.startswith("jf_gpu_op_")]
        assert [t for _, t in updates] == [F * H, H * C] and len(launches) == 7
        for i, _ in updates:  # the Sub kernel's table: (variable, delta, output, status word)
            table = (ctypes.c_uint64 * 4).from_address(big.tables(i))
            assert table[2] == table[0], "the update did not write the variable's buffer"
    stats = jf.debugging.stats()
    assert stats["cluster_runs"] == steps * 3  # the step's cluster and the two updates
    assert stats["cluster_fallbacks"] == 0
    assert stats["row_group_runs"] == steps * 2  # the forward and backward row kernels
    assert w1.read_value().device == GPU and w2.read_value().device == GPU


@pytest.fixture
def graphs(big):
    big.enable_graphs(True)
    yield big
    big.enable_graphs(False)


def test_a_repeated_step_replays_its_cluster_as_one_cuda_graph(graphs, rng):
    step, args, _ = mlp_step(rng)
    float(step(*args).numpy())  # compiles; its buffer addresses are seen once
    jf.debugging.reset_stats()
    for _ in range(4):  # the pool's blocks come back in a short cycle: a key repeats, is captured
        float(step(*args).numpy())
    assert 1 <= jf.debugging.stats()["gpu_graph_captures"] <= 2
    jf.debugging.reset_stats()
    for _ in range(4):
        before, replays = graphs.counters(), graphs.graph_launches()
        graphs.clear()
        float(step(*args).numpy())
        d = {k: v - before[k] for k, v in graphs.counters().items()}
        # The cluster is one graph launch: its 5 kernels and 5 GEMMs replay inside it (the
        # stand-in records the kernels again; the GEMMs were called once, when captured).
        # The two variable updates stay single launches.
        assert graphs.graph_launches() - replays == 1
        assert d["gemms"] == 0 and d["allocations"] == 0 and d["h2d"] == 0 and d["synchronizations"] == 1
        names = [n for n, *_ in graphs.launches()]
        assert len(names) == 7 and sum(n.startswith("step_") for n in names) == 5, names
    s = jf.debugging.stats()
    assert s["gpu_graph_launches"] == 4 and s["gpu_graph_captures"] == 0 and s["cluster_runs"] == 12


def test_a_step_on_fresh_inputs_each_call_is_never_captured(graphs, rng):
    step, args, _ = mlp_step(rng)
    jf.debugging.reset_stats()
    xs = []
    for _ in range(4):
        with jf.device("/GPU:0"):
            xs.append(args[0] * 1.0)  # a new buffer every call, kept: no key repeats
        float(step(xs[-1], args[1]).numpy())
    assert jf.debugging.stats()["cluster_runs"] == 4 * (3 + 1)  # the step's three runs and the copy
    assert jf.debugging.stats()["gpu_graph_captures"] == 0


def test_a_variable_keeps_its_device_when_assigned_host_values(fake):
    with jf.device("/GPU:0"):
        v = jf.Variable(np.zeros((3, 2), np.float32))
    assert v.read_value().device == GPU
    v.assign(np.arange(6, dtype=np.float32).reshape(3, 2))  # a host value: copied to the GPU
    assert v.read_value().device == GPU
    np.testing.assert_array_equal(v.numpy(), np.arange(6, dtype=np.float32).reshape(3, 2))
    with jf.device("/GPU:0"):
        w = jf.Variable(np.array([1, 2, 3], np.int64))
    w.assign_add(np.array([10, 20, 30], np.int64))  # no int64 GPU kernel needed: still right
    assert w.read_value().device == GPU
    np.testing.assert_array_equal(w.numpy(), [11, 22, 33])


def test_a_failed_run_time_check_surfaces_at_the_next_synchronization(fake):
    # The stand-in runs no kernel, so the test stores a division-by-zero code into the status
    # word the way a kernel would (the last entry of the launch's buffer table).
    with jf.device("/GPU:0"):
        a = jf.constant(np.array([7, 8], np.int32))
        b = jf.constant(np.array([2, 0], np.int32))
    fake.clear()
    before = fake.counters()
    with jf.device("/GPU:0"):
        q = jf.math.floordiv(a, b)
    after = fake.counters()
    assert len(fake.launches()) == 1
    assert all(after[k] == before[k] for k in ("h2d", "d2h", "synchronizations"))  # queued, not awaited
    table = (ctypes.c_uint64 * 4).from_address(fake.tables(0))  # a, b, q, status word
    word = ctypes.c_int64.from_address(table[3])
    assert word.value == 0
    word.value = 3 * 8 + 1  # expression 2 (the FloorDiv), CheckKind::kDivisionByZero
    with pytest.raises(jf.errors.InvalidArgumentError, match="Integer division by zero"):
        q.numpy()
    assert word.value == 0  # reported once
    np.testing.assert_array_equal(q.numpy(), q.numpy())


def test_an_op_without_a_gpu_routine_is_named_and_refused(fake, rng):
    with jf.device("/GPU:0"):
        x = jf.constant(rng.standard_normal((4, 6)).astype(np.float32))

    @jf.function(jit_compile=True)
    def must(x):
        return jf.math.cumsum(x, axis=1) * 2.0

    with pytest.raises(
        jf.errors.InvalidArgumentError, match=r"cannot be compiled: Cumsum \(Cumsum on float32\): no GPU"
    ):
        must(x)

    @jf.function
    def hinted(x):
        with jf.jit_scope():
            return jf.math.cumsum(x, axis=1) * 2.0

    with pytest.warns(RuntimeWarning, match="could not be compiled and runs on eager kernels"):
        assert hinted(x).device == GPU
    rows = jf.explain(hinted, x).by_op()
    assert rows["Cumsum"].status == "eager" and "no GPU routine" in rows["Cumsum"].reason


def test_tables_too_large_for_kernel_parameters_go_through_device_memory(fake):
    # 600 inputs: the buffer table (600 pointers and more) passes the 4 KB of kernel
    # parameters, so the run uploads it and the dim table, still without waiting.
    with jf.device("/GPU:0"):
        xs = [jf.constant(np.full((4, 3), i, np.float32)) for i in range(600)]

    @jf.function(jit_compile=True)
    def f(*xs):
        return jf.math.tanh(jf.add_n([x * 2.0 for x in xs]))

    f(*xs)
    before = fake.counters()
    fake.clear()
    y = f(*xs)
    d = {k: v - before[k] for k, v in fake.counters().items()}
    assert y.device == GPU and len(fake.launches()) == 1
    assert (d["h2d"], d["synchronizations"], d["allocations"]) == (2, 0, 0), d
