"""jf.keras.metrics: streaming updates over several batches (eagerly and inside a jf.function)
against numpy over all the data, sample weights, reset_state, and Keras's thresholded ROC AUC
against a numpy transcription of its counts and trapezoids."""
import numpy as np
import pytest

import jitflow as jf
from jitflow.keras import metrics as M


def _batches(rng, n=30, k=3):
    logits = rng.normal(size=(n, k)).astype(np.float32)
    labels = rng.integers(0, k, n)
    return logits, labels


def _stream(metric, batches, mode):
    update = metric.update_state if mode == "eager" else jf.function(lambda *a: metric.update_state(*a))
    for args in batches:
        update(*[jf.constant(a) for a in args])
    return float(metric.result())


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_accuracies_stream_over_batches(rng, mode):
    logits, labels = _batches(rng)
    onehot = np.eye(3, dtype=np.float32)[labels]
    chunks = [slice(0, 8), slice(8, 20), slice(20, 30)]
    want = (logits.argmax(1) == labels).mean()
    got = _stream(M.SparseCategoricalAccuracy(), [(labels[s, None], logits[s]) for s in chunks], mode)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(_stream(M.CategoricalAccuracy(), [(onehot[s], logits[s]) for s in chunks], mode),
                               want, rtol=1e-6)
    probs = 1 / (1 + np.exp(-logits[:, 0]))
    binary = (labels == 0).astype(np.float32)
    np.testing.assert_allclose(_stream(M.BinaryAccuracy(threshold=0.4), [(binary[s], probs[s]) for s in chunks], mode),
                               ((probs > 0.4) == binary).mean(), rtol=1e-6)
    ints = labels.astype(np.float32)
    pred = rng.integers(0, 3, 30).astype(np.float32)
    np.testing.assert_allclose(_stream(M.Accuracy(), [(ints[s], pred[s]) for s in chunks], mode),
                               (ints == pred).mean(), rtol=1e-6)
    np.testing.assert_allclose(_stream(M.MeanSquaredError(), [(onehot[s], logits[s]) for s in chunks], mode),
                               ((onehot - logits) ** 2).mean(), rtol=1e-5)


def test_mean_sum_weights_and_reset():
    m = M.Mean()
    m.update_state([1.0, 2.0, 3.0])
    m.update_state([[4.0, 6.0]], sample_weight=[2.0])  # one sample (mean 5) of weight 2
    np.testing.assert_allclose(float(m.result()), (1 + 2 + 3 + 2 * 5) / 5)
    assert [v.name for v in m.variables] == ["mean/total:0", "mean/count:0"]
    m.reset_state()
    assert float(m.result()) == 0.0  # no samples: 0, not nan
    s = M.Sum()
    s.update_state([1.0, 2.5])
    np.testing.assert_allclose(float(s([4.0], sample_weight=[0.5])), 5.5)
    acc = M.SparseCategoricalAccuracy()
    acc.update_state([0, 1], [[0.9, 0.1], [0.8, 0.2]], sample_weight=[1.0, 3.0])
    np.testing.assert_allclose(float(acc.result()), 0.25)


def _auc_reference(y, p, w, n=200):
    """Keras's counts at thresholds [-eps, 1/(n-1), ..., 1+eps] (positive: p > t), then the
    trapezoids of recall over the false-positive rate."""
    eps = 1e-7
    t = np.array([-eps] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + eps], np.float32)
    above = p[None, :] > t[:, None]
    tp = (above & y[None]).astype(np.float64) @ w
    fp = (above & ~y[None]).astype(np.float64) @ w
    fn = (~above & y[None]).astype(np.float64) @ w
    tn = (~above & ~y[None]).astype(np.float64) @ w
    recall = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1e-300), 0)
    fpr = np.where(fp + tn > 0, fp / np.maximum(fp + tn, 1e-300), 0)
    return np.sum((fpr[:-1] - fpr[1:]) * (recall[:-1] + recall[1:]) / 2)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_auc_matches_kerass_thresholded_roc(rng, mode):
    y = rng.integers(0, 2, 64).astype(bool)
    p = np.clip(0.3 * y + rng.uniform(size=64) * 0.7, 0, 1).astype(np.float32)
    w = rng.uniform(0.5, 2.0, 64)
    auc = M.AUC()
    halves = [(y[:40].astype(np.float32), p[:40], w[:40].astype(np.float32)),
              (y[40:].astype(np.float32), p[40:], w[40:].astype(np.float32))]
    got = _stream(auc, halves, mode)
    np.testing.assert_allclose(got, _auc_reference(y, p, w), rtol=1e-5)
    # The exact ROC AUC (ranks) is close: 200 thresholds only bin the scores.
    pos, neg = p[y], p[~y]
    exact = ((pos[:, None] > neg[None]).mean() + 0.5 * (pos[:, None] == neg[None]).mean())
    unweighted = M.AUC()
    unweighted.update_state(y.astype(np.float32), p)
    assert abs(float(unweighted.result()) - exact) < 0.02
    np.testing.assert_allclose(float(unweighted.result()), _auc_reference(y, p, np.ones(64)), rtol=1e-5)


def test_get_and_config():
    assert isinstance(M.get("accuracy"), M.Accuracy) and isinstance(M.get("auc"), M.AUC)
    restored = M.deserialize(M.serialize(M.AUC(num_thresholds=50, from_logits=True)))
    assert restored.num_thresholds == 50 and len(restored.thresholds) == 50
    with pytest.raises(ValueError, match="Could not interpret metric identifier"):
        M.get("acuracy")
