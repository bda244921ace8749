"""The Trainer's fit/evaluate/predict: a spiral classification task trained by fit matches a
float64 numpy transcription of the same training loop (same initial weights, batches and Adam),
seeded runs are identical, the train step is traced once (and compiled under jit_compile=True),
and fit reads arrays, generators, iterables and jf.data datasets."""
import warnings

import numpy as np
import pytest
from trainer_models import MLP, spiral

import jitflow as jf
from jitflow.keras import losses, metrics, optimizers


def _numpy_fit(weights, x, y, epochs, batch, lr, b1=0.9, b2=0.999, eps=1e-7):
    """fit's loop in float64 numpy: mean softmax cross-entropy over each batch, Keras's Adam."""
    w = [a.astype(np.float64) for a in weights]
    m = [np.zeros_like(a) for a in w]
    v = [np.zeros_like(a) for a in w]
    t = 0
    for _ in range(epochs):
        for s in range(0, len(x), batch):
            xb, yb = x[s:s + batch].astype(np.float64), y[s:s + batch]
            h_pre = xb @ w[0] + w[1]
            h = np.maximum(h_pre, 0)
            z = h @ w[2] + w[3]
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            dz = p.copy()
            dz[np.arange(len(yb)), yb] -= 1
            dz /= len(yb)
            dh = dz @ w[2].T * (h_pre > 0)
            grads = [xb.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0)]
            t += 1
            alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
            for i, g in enumerate(grads):
                m[i] += (g - m[i]) * (1 - b1)
                v[i] += (g * g - v[i]) * (1 - b2)
                w[i] -= alpha * m[i] / (np.sqrt(v[i]) + eps)
    z = np.maximum(x @ w[0] + w[1], 0) @ w[2] + w[3]
    return w, float((z.argmax(1) == y).mean())


def _compile(model, jit_compile="auto", lr=0.03, metric_list=("accuracy",)):
    model.compile(optimizers.Adam(lr), losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=list(metric_list), jit_compile=jit_compile)
    return model


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_matches_a_numpy_training_loop(jit_compile):
    x, y = spiral()
    model = _compile(MLP(seed=3, hidden=24), jit_compile)
    start = model.get_weights()
    early_w, _ = _numpy_fit(start, x, y, epochs=2, batch=32, lr=0.03)
    _, want_acc = _numpy_fit(start, x, y, epochs=30, batch=32, lr=0.03)
    runs = jf.debugging.stats()["cluster_runs"]
    model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    # Step for step the same updates (float32 against float64: later epochs drift apart at relu kinks).
    for got, want in zip(model.get_weights(), early_w):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    history = model.fit(x, y, batch_size=32, epochs=28, shuffle=False, verbose=0)
    _, acc = model.evaluate(x, y, verbose=0)
    assert want_acc > 0.8 and abs(acc - want_acc) <= 0.05  # fit learns the spiral as well as the reference
    assert history.history["accuracy"][-1] > 0.75 and len(history.history["loss"]) == 28
    # 240 samples in batches of 32: a last batch of 16, traced with the others (batch dim None);
    # the second fit reuses the function.
    assert model.train_function.experimental_get_tracing_count() == 1
    assert model.jit_compile is jit_compile
    if jit_compile:
        assert jf.debugging.stats()["cluster_runs"] - runs >= 30 * 8


def test_auto_compiles_a_compilable_step_and_not_a_random_one():
    x, y = spiral(64)
    model = _compile(MLP(seed=1))
    runs = jf.debugging.stats()["cluster_runs"]
    model.fit(x, y, epochs=2, verbose=0)
    assert model.jit_compile is True and jf.debugging.stats()["cluster_runs"] > runs
    dropout = _compile(MLP(seed=1, dropout=0.3))
    with pytest.warns(UserWarning, match="not every op compiles.*RandomUniform|not every op compiles.*stateful"):
        dropout.fit(x, y, epochs=2, verbose=0)
    assert dropout.jit_compile is False
    assert dropout.train_function.experimental_get_tracing_count() == 1
    # The test step has no dropout: it compiles.
    dropout.evaluate(x, y, verbose=0)
    assert dropout.test_function is not dropout.train_function
    assert dropout.jit_compile is False  # it tells the train step's choice
    with pytest.raises(jf.errors.InvalidArgumentError, match="must compile the whole function"):
        _compile(MLP(seed=1, dropout=0.3), jit_compile=True).fit(x, y, epochs=1, verbose=0)


def test_seeded_runs_are_identical_and_shuffle_changes_batches():
    x, y = spiral(100)

    def run(seed):
        jf.random.set_seed(seed)
        model = _compile(MLP())  # unseeded initializers: from the global seed
        model.fit(x, y, batch_size=16, epochs=3, verbose=0)  # shuffled each epoch
        return model.get_weights()

    a, b, c = run(5), run(5), run(6)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])


def test_generators_iterables_and_datasets_give_the_array_results():
    x, y = spiral(96)

    def batches():
        for s in range(0, 96, 32):
            yield x[s:s + 32], y[s:s + 32]

    def fitted(data, **kw):
        model = _compile(MLP(seed=9))
        model.fit(data, **kw, verbose=0)
        return model

    class Batches:  # re-iterable, with a length (a list would be read as several input arrays, as Keras)
        def __iter__(self):
            return batches()

        def __len__(self):
            return 3

    want = fitted(x, y=y, batch_size=32, epochs=3, shuffle=False).get_weights()
    endless = (b for _ in range(3) for b in batches())
    sources = {"generator": fitted(endless, epochs=3, steps_per_epoch=3),
               "iterable": fitted(Batches(), epochs=3),
               "dataset": fitted(jf.data.Dataset.from_tensor_slices((x, y)).batch(32), epochs=3)}
    for name, model in sources.items():
        for got, ref in zip(model.get_weights(), want):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=name)
        assert model.train_function.experimental_get_tracing_count() == 1, name
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        history = fitted(batches(), epochs=3)  # a generator without steps_per_epoch: one epoch's worth
    assert len(history.history.history["loss"]) == 1


def test_evaluate_predict_and_batch_methods():
    x, y = spiral(50)
    model = _compile(MLP(seed=2), metric_list=["accuracy", metrics.AUC(name="auc_unused")][:1])
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert model.metrics_names == ["loss", "accuracy"]
    logits = model.predict(x, batch_size=7, verbose=0)
    assert logits.shape == (50, 3)
    z = logits.astype(np.float64)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want_loss = -np.log(p[np.arange(50), y]).mean()
    loss, acc = model.evaluate(x, y, batch_size=9, verbose=0)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(acc, (z.argmax(1) == y).mean(), rtol=1e-6)
    sw = np.linspace(0, 2, 50)
    weighted = model.evaluate(x, y, sample_weight=sw, batch_size=50, verbose=0, return_dict=True)
    per = -np.log(p[np.arange(50), y])
    np.testing.assert_allclose(weighted["loss"], (per * sw).mean(), rtol=1e-5)
    np.testing.assert_allclose(model.predict_on_batch(x[:4]), logits[:4], rtol=1e-5, atol=1e-6)
    model.reset_metrics()  # the batch methods accumulate metrics, as Keras 3's
    np.testing.assert_allclose(model.test_on_batch(x, y, return_dict=True)["loss"], want_loss, rtol=1e-5)
    before = model.get_weights()[0].copy()
    out = model.train_on_batch(x[:10], y[:10])
    assert len(out) == 2 and not np.array_equal(before, model.get_weights()[0])


def test_regularization_losses_join_the_loss_and_validation_logs():
    x, y = spiral(60)
    model = _compile(MLP(seed=4, l2=0.5))
    history = model.fit(x, y, batch_size=60, epochs=1, shuffle=False, validation_data=(x, y), verbose=0)
    z = np.maximum(x @ model.w1.numpy() + model.b1.numpy(), 0) @ model.w2.numpy() + model.b2.numpy()
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want = -np.log(p[np.arange(60), y]).mean() + 0.5 * (model.w1.numpy().astype(np.float64) ** 2).sum()
    np.testing.assert_allclose(history.history["val_loss"][0], want, rtol=1e-5)
    assert sorted(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    with pytest.raises(ValueError, match="must call `compile"):
        MLP().fit(x, y, verbose=0)


def test_validation_split_takes_the_last_samples():
    x, y = spiral(50)
    model = _compile(MLP(seed=5))
    history = model.fit(x, y, validation_split=0.2, epochs=1, verbose=0, shuffle=False)
    model2 = _compile(MLP(seed=5))
    model2.fit(x[:40], y[:40], epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(model.get_weights()[0], model2.get_weights()[0], rtol=1e-6)
    np.testing.assert_allclose(history.history["val_loss"][0], model.evaluate(x[40:], y[40:], verbose=0)[0],
                               rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="validation_split` is only supported for Tensors or NumPy arrays"):
            model.fit(iter([(x, y)]), validation_split=0.5, verbose=0)


def test_a_functional_model_with_two_inputs_and_metrics_named_as_given():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(64, 3)).astype(np.float32), rng.normal(size=(64, 2)).astype(np.float32)
    y = (a.sum(1) - b.sum(1) > 0).astype(np.float32)
    keras = jf.keras
    ia, ib = keras.Input((3,)), keras.Input((2,))
    out = keras.layers.Dense(1, activation="sigmoid")(keras.layers.Concatenate()([ia, ib]))
    model = keras.Model([ia, ib], out)
    model.compile(optimizers.Adam(0.05), "binary_crossentropy", metrics=["acc", "mae", "AUC", metrics.MeanSquaredError()])
    history = model.fit([a, b], y, epochs=20, batch_size=16, verbose=0)
    # Keras 3.15 logs a metric given as a string under that string, an object under its name.
    assert sorted(history.history) == ["AUC", "acc", "loss", "mae", "mean_squared_error"]
    assert model.metrics_names == ["loss", "acc", "mae", "AUC", "mean_squared_error"]
    p = model.predict([a, b], batch_size=10, verbose=0)
    assert p.shape == (64, 1)
    np.testing.assert_allclose(model.evaluate([a, b], y, verbose=0)[1], ((p[:, 0] > 0.5) == y).mean(), rtol=1e-6)
    assert history.history["acc"][-1] > 0.9


def test_class_weight_is_a_sample_weight_per_class():
    x, y = spiral(48)
    weights = {0: 2.0, 1: 0.0, 2: 0.5}
    by_class = _compile(MLP(seed=6))
    by_class.fit(x, y, class_weight=weights, batch_size=16, epochs=2, shuffle=False, verbose=0)
    by_sample = _compile(MLP(seed=6))
    by_sample.fit(x, y, sample_weight=np.array([weights[c] for c in y]), batch_size=16, epochs=2, shuffle=False,
                  verbose=0)
    for a, b in zip(by_class.get_weights(), by_sample.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    plain = _compile(MLP(seed=6))
    plain.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert not np.allclose(plain.get_weights()[0], by_class.get_weights()[0])


def test_run_eagerly_gives_the_traced_results():
    x, y = spiral(40)
    eager = MLP(seed=8)
    eager.compile(optimizers.Adam(0.03), losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                  run_eagerly=True)
    h_eager = eager.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    traced = _compile(MLP(seed=8))
    h_traced = traced.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert eager.train_function is None and sorted(h_eager.history) == ["accuracy", "loss"]
    np.testing.assert_allclose(h_eager.history["loss"], h_traced.history["loss"], rtol=1e-5)
    for a, b in zip(eager.get_weights(), traced.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
