"""jf.keras.losses: every loss (function and class, with reductions, sample weights, from_logits
and label smoothing) against float64 numpy formulas of Keras 3's definitions, eagerly and in a
jf.function."""
import numpy as np
import pytest

import jitflow as jf
from jitflow.keras import losses as L

EPS = 1e-7


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _data(rng, n=6, k=4):
    logits = rng.normal(size=(n, k))
    labels = rng.integers(0, k, n)
    return logits, labels, np.eye(k)[labels], rng.uniform(size=(n, k)), rng.integers(0, 2, (n, k)).astype(np.float64)


def _bce(y, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(-1)


def _cce(y, p):
    p = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    return -(y * np.log(p)).sum(-1)


def _huber(y, p, d):
    e = np.abs(p - y)
    return np.where(e <= d, 0.5 * e * e, d * e - 0.5 * d * d).mean(-1)


def _cases(rng):
    logits, labels, onehot, target, binary = _data(rng)
    probs = _softmax(logits)
    return {
        "mse": (L.MeanSquaredError(), target, logits, ((logits - target) ** 2).mean(-1)),
        "mae": (L.MeanAbsoluteError(), target, logits, np.abs(logits - target).mean(-1)),
        "huber": (L.Huber(delta=0.7), target, logits, _huber(target, logits, 0.7)),
        "bce": (L.BinaryCrossentropy(), binary, _sigmoid(logits), _bce(binary, _sigmoid(logits))),
        "bce_logits_smoothing": (L.BinaryCrossentropy(from_logits=True, label_smoothing=0.2), binary, logits,
                                 _bce(binary * 0.8 + 0.1, _sigmoid(logits))),
        "cce": (L.CategoricalCrossentropy(), onehot, probs, _cce(onehot, probs)),
        "cce_logits_smoothing": (L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1), onehot, logits,
                                 -((onehot * 0.9 + 0.1 / 4) * np.log(probs)).sum(-1)),
        "scce": (L.SparseCategoricalCrossentropy(), labels, probs, _cce(onehot, probs)),
        "scce_logits": (L.SparseCategoricalCrossentropy(from_logits=True), labels[:, None], logits,
                        -np.log(probs[np.arange(6), labels])),
    }


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("name", ["mse", "mae", "huber", "bce", "bce_logits_smoothing", "cce",
                                  "cce_logits_smoothing", "scce", "scce_logits"])
def test_loss_against_numpy(rng, name, mode):
    loss, y, p, per_sample = _cases(rng)[name]
    sw = rng.uniform(size=6)
    y_t = jf.constant(y.astype(np.int64) if "scce" in name else y.astype(np.float32))
    p_t = jf.constant(p.astype(np.float32))

    def run(yt, pt, w):
        return (loss(yt, pt), loss(yt, pt, sample_weight=w), loss.fn(yt, pt, **loss._fn_kwargs))

    run = run if mode == "eager" else jf.function(run)
    mean, weighted, values = run(y_t, p_t, jf.constant(sw.astype(np.float32)))
    np.testing.assert_allclose(values.numpy(), per_sample, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(float(mean), per_sample.mean(), rtol=1e-4)
    np.testing.assert_allclose(float(weighted), (per_sample * sw).mean(), rtol=1e-4)


def test_reductions_and_rank_alignment():
    y, p = np.array([1.0, 2.0, 3.0]), np.array([[1.5], [2.0], [1.0]])
    per = np.array([0.25, 0.0, 4.0])  # y [3] against p [3, 1]: p's last dim is squeezed
    assert L.MeanSquaredError(reduction="none")(y, p).shape == (3,)
    np.testing.assert_allclose(L.MeanSquaredError(reduction="none")(y, p).numpy(), per)
    np.testing.assert_allclose(float(L.MeanSquaredError(reduction="sum")(y, p)), per.sum())
    w = np.array([1.0, 0.0, 3.0])
    np.testing.assert_allclose(float(L.MeanSquaredError(reduction="mean_with_sample_weight")(y, p, w)),
                               (per * w).sum() / w.sum(), rtol=1e-6)
    with pytest.raises(ValueError, match="Invalid value for argument `reduction`"):
        L.MeanSquaredError(reduction="avg")


def test_function_forms_and_get():
    y, p = np.array([[0.0, 1.0]]), np.array([[0.5, 0.5]])
    assert L.mse is L.mean_squared_error and L.get("mse") is L.mean_squared_error
    np.testing.assert_allclose(L.mse(y, p).numpy(), [0.25])
    np.testing.assert_allclose(L.mae(y, p).numpy(), [0.5])
    assert isinstance(L.get("CategoricalCrossentropy"), L.CategoricalCrossentropy)
    restored = L.deserialize(L.serialize(L.BinaryCrossentropy(from_logits=True, label_smoothing=0.3)))
    assert restored.get_config()["label_smoothing"] == 0.3 and restored.from_logits
    with pytest.raises(ValueError, match="Could not interpret loss identifier"):
        L.get("msee")


def test_focal_dice_and_tversky_losses_match_keras():
    # TF 2.21's Keras 3 printed these for the same inputs (hard-coded, 7 decimals).
    yt = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
    yp = np.array([[0.2, 0.7, 0.1], [0.5, 0.3, 0.2]], np.float32)
    logits = np.array([[1.5, -0.5, 0.2], [0.3, 2.0, -1.0]], np.float32)

    cases = [L.BinaryFocalCrossentropy(),
             L.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.3, gamma=1.5, label_smoothing=0.1),
             L.CategoricalFocalCrossentropy(), L.CategoricalFocalCrossentropy(alpha=0.5, gamma=3.0, label_smoothing=0.2),
             L.Dice(), L.Dice(axis=-1), L.Tversky(), L.Tversky(alpha=0.7, beta=0.3, axis=-1)]
    got = [float(c(yt, yp)) for c in cases]
    np.testing.assert_allclose(got, [0.0427322, 0.0336989, 0.0256734, 0.0831861, 0.4, 0.4, 0.4, 0.4000001], atol=2e-7)
    got = [float(L.BinaryFocalCrossentropy(from_logits=True)(yt, logits)),
           float(L.CategoricalFocalCrossentropy(from_logits=True)(yt, logits))]
    np.testing.assert_allclose(got, [0.5881841, 0.4123091], atol=2e-7)
    np.testing.assert_allclose(L.dice(yt, yp, axis=-1).numpy(), [0.3, 0.5], atol=1e-7)
    np.testing.assert_allclose(L.binary_focal_crossentropy(yt, yp).numpy(), [0.0140267, 0.0714378], atol=1e-7)
    assert isinstance(L.get("Dice"), L.Dice) and L.get("tversky") is L.tversky
    f = jf.function(lambda a, b: L.BinaryFocalCrossentropy(gamma=1.0)(a, b))
    eager = float(L.BinaryFocalCrossentropy(gamma=1.0)(yt, yp))
    assert abs(float(f(jf.constant(yt), jf.constant(yp))) - eager) < 1e-7
