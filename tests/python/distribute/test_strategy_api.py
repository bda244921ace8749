"""jf.distribute in one process: the default strategy and its contexts, MirroredStrategy with one
replica (eager and traced) and with two replicas over logical CPUs (a training step against float64
numpy, per-replica values and their reductions, datasets split between replicas, a failing
replica), CommunicationOptions and compute_average_loss."""
import numpy as np
import pytest

import jitflow as jf


@pytest.fixture
def two_cpus():
    cpu = jf.config.list_physical_devices("CPU")[0]
    jf.config.set_logical_device_configuration(cpu, [jf.config.LogicalDeviceConfiguration()] * 2)
    yield [d.name for d in jf.config.list_logical_devices("CPU")]
    jf.config.set_logical_device_configuration(cpu, [])


def test_default_strategy_and_contexts():
    assert not jf.distribute.has_strategy()
    default = jf.distribute.get_strategy()
    assert default.num_replicas_in_sync == 1
    ctx = jf.distribute.get_replica_context()
    assert ctx is not None and ctx.num_replicas_in_sync == 1
    np.testing.assert_array_equal(ctx.all_reduce(jf.distribute.ReduceOp.SUM, jf.constant([1.0, 2.0])).numpy(), [1, 2])
    strategy = jf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 1
    with strategy.scope():
        assert jf.distribute.has_strategy() and jf.distribute.get_strategy() is strategy
        assert jf.distribute.get_replica_context() is None  # the cross-replica context
        assert jf.distribute.in_cross_replica_context()

        def replica_fn():
            ctx = jf.distribute.get_replica_context()
            return ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync

        rid, n = strategy.run(replica_fn)
        assert int(rid) == 0 and n == 1
    assert not jf.distribute.has_strategy()
    with pytest.raises(ValueError, match="ReduceOp"):
        strategy.reduce("PROD", jf.constant(1.0), axis=None)


def test_one_replica_reduce_and_traced_run():
    strategy = jf.distribute.MirroredStrategy()
    v = jf.constant([1.0, 2.0, 6.0])
    assert float(strategy.reduce(jf.distribute.ReduceOp.MEAN, v, axis=0)) == 3.0
    assert float(strategy.reduce("SUM", v, axis=0)) == 9.0
    with strategy.scope():
        w = jf.Variable(2.0)

    @jf.function
    def step(x):
        return strategy.run(lambda x: jf.distribute.get_replica_context().all_reduce("SUM", x * w), args=(x,))

    assert float(step(jf.constant(3.0))) == 6.0
    assert strategy.experimental_local_results(v) == (v,)


def test_two_logical_cpus_train_like_one_batch(two_cpus):
    assert two_cpus == ["/device:CPU:0", "/device:CPU:1"]
    strategy = jf.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    with strategy.scope():
        w = jf.Variable(np.full((3, 1), 0.5, np.float32))
        opt = jf.optimizers.SGD(0.05)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(12, 3)).astype(np.float32)
    y = rng.normal(size=(12, 1)).astype(np.float32)
    dataset = strategy.experimental_distribute_dataset(jf.data.Dataset.from_tensor_slices((x, y)).batch(6))

    def step(xb, yb):
        with jf.GradientTape() as tape:
            loss = jf.nn.compute_average_loss(jf.reduce_sum(jf.square(jf.matmul(xb, w) - yb), axis=1))
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        return loss

    losses = []
    for xb, yb in dataset:
        assert [t.shape[0] for t in strategy.experimental_local_results(xb)] == [3, 3]
        losses.append(float(strategy.reduce("SUM", strategy.run(step, args=(xb, yb)), axis=None)))
    want, want_losses = np.full((3, 1), 0.5), []
    for i in range(2):
        xb, yb = x[6 * i:6 * i + 6].astype(np.float64), y[6 * i:6 * i + 6].astype(np.float64)
        err = xb @ want - yb
        want_losses.append(np.sum(err ** 2) / 6)
        want = want - 0.05 * xb.T @ (2 * err) / 6
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    assert int(opt.iterations.numpy()) == 2  # applied once per step, not once per replica


def test_two_replicas_values_contexts_and_errors(two_cpus):
    strategy = jf.distribute.MirroredStrategy(["/device:CPU:0", "/device:CPU:1"])

    def replica_fn():
        ctx = jf.distribute.get_replica_context()
        i = ctx.replica_id_in_sync_group
        value = jf.cast(i, jf.float32) * 10.0 + jf.constant([1.0, 2.0])
        return ctx.all_reduce(jf.distribute.ReduceOp.MEAN, value), value

    mean, per = strategy.run(replica_fn)
    for r in strategy.experimental_local_results(mean):
        np.testing.assert_allclose(r.numpy(), [6.0, 7.0])
    np.testing.assert_allclose(strategy.reduce("SUM", per, axis=None).numpy(), [12.0, 14.0])
    assert float(strategy.reduce("MEAN", per, axis=0)) == 6.5  # mean of 1, 2, 11, 12
    np.testing.assert_array_equal(strategy.gather(per, axis=0).numpy(), [1, 2, 11, 12])

    def dataset_fn(ctx):
        assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (1, 0, 2)
        return jf.data.Dataset.range(4).batch(ctx.get_per_replica_batch_size(2))

    firsts = [[int(t.numpy()[0]) for t in batch.values] for batch in strategy.distribute_datasets_from_function(dataset_fn)]
    assert firsts == [[0, 1], [2, 3]]

    def failing():
        ctx = jf.distribute.get_replica_context()
        if ctx._replica_id == 1:
            raise KeyError("replica one is broken")
        return ctx.all_reduce("SUM", jf.constant(1.0))

    with pytest.raises(KeyError, match="replica one is broken"):
        strategy.run(failing)

    with pytest.raises(ValueError, match="does not exist"):
        jf.distribute.MirroredStrategy(["cpu:0", "cpu:7"])


@pytest.mark.parametrize("mode", ["function", "jit_compile"])
def test_two_logical_cpus_in_one_function(two_cpus, mode):
    # both replicas are traced into the one graph; their all-reduce is a sum of the two symbolic
    # values, so under jit_compile=True the whole step, update included, compiles
    strategy = jf.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
    with strategy.scope():
        w = jf.Variable(np.full((3, 1), 0.5, np.float32))
        opt = jf.optimizers.SGD(0.05)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(12, 3)).astype(np.float32)
    y = rng.normal(size=(12, 1)).astype(np.float32)

    def replica_step(xb, yb):
        with jf.GradientTape() as tape:
            loss = jf.nn.compute_average_loss(jf.reduce_sum(jf.square(jf.matmul(xb, w) - yb), axis=1))
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        return loss, jf.distribute.get_replica_context().replica_id_in_sync_group

    @jf.function(jit_compile=mode == "jit_compile")
    def step(xb, yb):
        def part(ctx):
            i, n = ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync
            rows = jf.shape(xb)[0]
            return xb[rows * i // n:rows * (i + 1) // n], yb[rows * i // n:rows * (i + 1) // n]
        parts = strategy.experimental_distribute_values_from_function(part)
        losses, ids = strategy.run(replica_step, args=parts)
        return strategy.reduce("SUM", losses, axis=None), strategy.reduce("SUM", ids, axis=None)

    before = jf.debugging.stats()["cluster_runs"]
    got = [step(x[6 * i:6 * i + 6], y[6 * i:6 * i + 6]) for i in range(2)]
    if mode == "jit_compile":
        assert jf.debugging.stats()["cluster_runs"] >= before + 2
    want, want_losses = np.full((3, 1), 0.5), []
    for i in range(2):
        xb, yb = x[6 * i:6 * i + 6].astype(np.float64), y[6 * i:6 * i + 6].astype(np.float64)
        err = xb @ want - yb
        want_losses.append(np.sum(err ** 2) / 6)
        want = want - 0.05 * xb.T @ (2 * err) / 6
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-5)
    np.testing.assert_allclose([float(loss) for loss, _ in got], want_losses, rtol=1e-5)
    assert [int(ids) for _, ids in got] == [1, 1]  # replicas 0 and 1 both ran
    assert int(opt.iterations.numpy()) == 2  # applied once per step, not once per replica
    assert step.experimental_get_tracing_count() == 1


def test_communication_options_and_average_loss():
    opts = jf.distribute.experimental.CommunicationOptions(
        bytes_per_pack=1024, timeout_seconds=5, implementation=jf.distribute.experimental.CommunicationImplementation.RING)
    assert (opts.bytes_per_pack, opts.timeout_seconds) == (1024, 5)
    with pytest.raises(ValueError, match="bytes_per_pack"):
        jf.distribute.experimental.CommunicationOptions(bytes_per_pack=-1)
    per_example = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    weights = np.array([1.0, 0.0, 2.0, 1.0], np.float32)
    got = jf.nn.compute_average_loss(per_example, sample_weight=weights, global_batch_size=8)
    np.testing.assert_allclose(float(got), (1 + 6 + 4) / 8.0, rtol=1e-7)
    assert float(jf.nn.compute_average_loss(per_example)) == 2.5  # one replica: the local batch


def test_keras_mean_losses_are_scaled_for_the_replicas(two_cpus):
    # TF 2.21 + Keras 3.15 under MirroredStrategy(['/cpu:0', '/cpu:1']) gave 1.25, 2.5 and 5.0 here
    # (the mean divided by the two replicas; reduction='none' and 'sum' untouched), and 2.5 outside
    strategy = jf.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
    y, p = np.array([[1.0], [2.0]], np.float32), np.zeros((2, 1), np.float32)

    def fn():
        return (jf.keras.losses.MeanSquaredError()(y, p),
                jf.reduce_mean(jf.keras.losses.MeanSquaredError(reduction="none")(y, p)),
                jf.keras.losses.MeanSquaredError(reduction="sum")(y, p))

    for value, want in zip(strategy.run(fn), (1.25, 2.5, 5.0)):
        assert [float(v) for v in strategy.experimental_local_results(value)] == [want, want]
    assert float(jf.keras.losses.MeanSquaredError()(y, p)) == 2.5
