"""jf.keras's hinge, percentage, logarithmic, cosine, log-cosh, KL and Poisson losses, and the
top-k, RMSE, cross-entropy, confusion-count, F-score and IoU metrics against float64 numpy
formulas written here (Keras 3's definitions), including sample weights, accumulation over
batches, inside a traced function, and configs."""
import numpy as np
import pytest

import jitflow as jf

losses, metrics = jf.keras.losses, jf.keras.metrics
EPS = 1e-7


def _hinge_labels(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


def _norm(x):
    return x / np.sqrt(np.maximum((x ** 2).sum(-1, keepdims=True), 1e-12))


LOSSES = {
    "hinge": lambda t, p: np.maximum(1 - _hinge_labels(t) * p, 0).mean(-1),
    "squared_hinge": lambda t, p: (np.maximum(1 - _hinge_labels(t) * p, 0) ** 2).mean(-1),
    "categorical_hinge": lambda t, p: np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0),
    "mean_absolute_percentage_error": lambda t, p: 100 * np.abs((t - p) / np.maximum(np.abs(t), EPS)).mean(-1),
    "mean_squared_logarithmic_error": lambda t, p: ((np.log(np.maximum(p, EPS) + 1)
                                                     - np.log(np.maximum(t, EPS) + 1)) ** 2).mean(-1),
    "cosine_similarity": lambda t, p: -(_norm(t) * _norm(p)).sum(-1),
    "log_cosh": lambda t, p: np.log(np.cosh(p - t)).mean(-1),
    "kl_divergence": lambda t, p: (np.clip(t, EPS, 1) * np.log(np.clip(t, EPS, 1) / np.clip(p, EPS, 1))).sum(-1),
    "poisson": lambda t, p: (p - t * np.log(p + EPS)).mean(-1),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_functions_and_classes(name, rng):
    t = rng.uniform(0.05, 1, size=(4, 5))
    p = rng.uniform(0.05, 1, size=(4, 5))
    if "hinge" in name:
        t = rng.integers(0, 2, size=(4, 5)).astype(np.float64)
        p = rng.normal(size=(4, 5))
    want = LOSSES[name](t, p)
    # Keras computes losses in floatx (float32)
    np.testing.assert_allclose(losses.get(name)(t, p).numpy(), want, rtol=2e-5, atol=1e-6)
    w = rng.uniform(size=4)
    for obj in [c for c in losses._CLASSES if c().name == name]:
        np.testing.assert_allclose(obj()(t, p, sample_weight=w).numpy(), (want * w).mean(), rtol=2e-5, atol=1e-6)
        assert type(losses.deserialize(losses.serialize(obj()))) is obj


def test_top_k_and_rmse_metrics(rng):
    p = rng.normal(size=(6, 5))
    labels = rng.integers(0, 5, size=6)
    top3 = np.argsort(-p, axis=1)[:, :3]
    want = np.mean([labels[i] in top3[i] for i in range(6)])
    m = metrics.SparseTopKCategoricalAccuracy(k=3)
    m.update_state(labels[:3], p[:3])
    m.update_state(labels[3:], p[3:])
    np.testing.assert_allclose(m.result().numpy(), want, rtol=1e-6)
    onehot = np.eye(5)[labels]
    np.testing.assert_allclose(metrics.TopKCategoricalAccuracy(k=3)(onehot, p).numpy(), want, rtol=1e-6)
    t = rng.normal(size=(6, 2))
    rmse = metrics.RootMeanSquaredError()
    rmse.update_state(t[:2], p[:2, :2])
    rmse.update_state(t[2:], p[2:, :2])
    np.testing.assert_allclose(rmse.result().numpy(), np.sqrt(((p[:, :2] - t) ** 2).mean()), rtol=1e-5)


def test_mean_wrappers_of_losses(rng):
    t = np.eye(4)[rng.integers(0, 4, size=5)]
    logits = rng.normal(size=(5, 4))
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    ce = -(t * np.log(probs)).sum(-1)
    np.testing.assert_allclose(metrics.CategoricalCrossentropy(from_logits=True)(t, logits).numpy(), ce.mean(),
                               rtol=1e-5)
    np.testing.assert_allclose(metrics.SparseCategoricalCrossentropy()(t.argmax(-1), probs).numpy(), ce.mean(),
                               rtol=1e-5)
    cos = metrics.CosineSimilarity()
    np.testing.assert_allclose(cos(probs, t).numpy(), (_norm(probs) * _norm(t)).sum(-1).mean(), rtol=1e-5)
    again = metrics.deserialize(metrics.serialize(metrics.BinaryCrossentropy(label_smoothing=0.1)))
    assert type(again).__name__ == "BinaryCrossentropy" and again.get_config()["label_smoothing"] == 0.1
    assert isinstance(metrics.get("kld"), metrics.KLDivergence) and type(metrics.LogCoshError()).__name__ == "LogCoshError"


def test_precision_recall_and_counts(rng):
    t = rng.integers(0, 2, size=20)
    p = rng.uniform(size=20)
    w = rng.uniform(size=20)
    pos = p > 0.5
    tp, fp, fn = (w * (pos & (t == 1))).sum(), (w * (pos & (t == 0))).sum(), (w * (~pos & (t == 1))).sum()
    prec = metrics.Precision()
    prec.update_state(t[:10], p[:10], sample_weight=w[:10])
    prec.update_state(t[10:], p[10:], sample_weight=w[10:])
    np.testing.assert_allclose(prec.result().numpy(), tp / (tp + fp), rtol=1e-5)
    np.testing.assert_allclose(metrics.Recall()(t, p, sample_weight=w).numpy(), tp / (tp + fn), rtol=1e-5)
    multi = metrics.Recall(thresholds=[0.2, 0.8])(t, p).numpy()
    np.testing.assert_allclose(multi, [((p > th) & (t == 1)).sum() / (t == 1).sum() for th in (0.2, 0.8)], rtol=1e-6)
    np.testing.assert_array_equal(metrics.TruePositives()(t, p).numpy(), (pos & (t == 1)).sum())
    np.testing.assert_array_equal(metrics.TrueNegatives(thresholds=0.3)(t, p).numpy(), ((p <= 0.3) & (t == 0)).sum())
    # top_k and class_id on multi-label data
    y = rng.integers(0, 2, size=(6, 4))
    s = rng.uniform(size=(6, 4))
    best = np.argsort(-s, axis=1)[:, :1]
    kept = np.zeros_like(y, bool)
    np.put_along_axis(kept, best, True, axis=1)
    np.testing.assert_allclose(metrics.Precision(top_k=1)(y, s).numpy(), (kept & (y == 1)).sum() / kept.sum(),
                               rtol=1e-6)
    c = metrics.Recall(class_id=2)(y, s).numpy()
    np.testing.assert_allclose(c, ((s[:, 2] > 0.5) & (y[:, 2] == 1)).sum() / max((y[:, 2] == 1).sum(), 1), rtol=1e-6)


def _fbeta(y, pred, beta, average):
    tp = (pred * y).sum(0)
    fp = (pred * (1 - y)).sum(0)
    fn = ((1 - pred) * y).sum(0)
    if average == "micro":
        tp, fp, fn = tp.sum(), fp.sum(), fn.sum()
    prec, rec = tp / (tp + fp + EPS), tp / (tp + fn + EPS)
    score = (1 + beta ** 2) * prec * rec / (beta ** 2 * prec + rec + EPS)
    if average == "weighted":
        return (score * y.sum(0) / (y.sum(0).sum() + EPS)).sum()
    return score.mean() if average else score


@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
def test_f_scores(average, rng):
    y = np.eye(3)[rng.integers(0, 3, size=12)]
    s = rng.uniform(size=(12, 3))
    argmax_pred = (s == s.max(-1, keepdims=True)).astype(float)
    np.testing.assert_allclose(metrics.F1Score(average=average)(y, s).numpy(), _fbeta(y, argmax_pred, 1, average),
                               rtol=1e-5)
    f2 = metrics.FBetaScore(average=average, beta=2.0, threshold=0.4)
    f2.update_state(y[:6], s[:6])
    f2.update_state(y[6:], s[6:])
    np.testing.assert_allclose(f2.result().numpy(), _fbeta(y, (s > 0.4).astype(float), 2, average), rtol=1e-5)


def test_mean_iou_and_traced_updates(rng):
    t = rng.integers(0, 4, size=30)
    p = rng.integers(0, 3, size=30)
    cm = np.zeros((4, 4))
    np.add.at(cm, (t, p), 1)
    union = cm.sum(0) + cm.sum(1) - np.diag(cm)
    want = (np.diag(cm)[union > 0] / union[union > 0]).mean()
    m = metrics.MeanIoU(num_classes=4)
    step = jf.function(lambda a, b: m.update_state(a, b))
    step(jf.constant(t[:15]), jf.constant(p[:15]))
    step(jf.constant(t[15:]), jf.constant(p[15:]))
    np.testing.assert_allclose(m.result().numpy(), want, rtol=1e-6)
    m.reset_state()
    assert float(m.result().numpy()) == 0.0
    scores = np.eye(4)[p]
    np.testing.assert_allclose(metrics.MeanIoU(4, sparse_y_pred=False)(t, scores).numpy(), want, rtol=1e-6)
