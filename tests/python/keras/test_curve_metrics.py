"""jf.keras.metrics' AUC over the precision-recall curve and the summation methods, the four
rate-at-constraint metrics and R2Score against TF 2.21's Keras 3: the values below were printed
there for the same inputs (two updates, the second weighted) and are hard-coded."""
import numpy as np
import pytest

import jitflow as jf

M = jf.keras.metrics


def _data():
    rng = np.random.default_rng(3)
    yt = (rng.random(40) > 0.4).astype(np.float32)
    yp = np.clip(yt * 0.3 + rng.random(40) * 0.7, 0, 1).astype(np.float32)
    return yt, yp, rng.random(40).astype(np.float32), rng


CASES = [
    (lambda: M.AUC(curve="PR"), 0.927356),
    (lambda: M.AUC(curve="PR", summation_method="minoring"), 0.886969),
    (lambda: M.AUC(summation_method="majoring"), 0.895554),
    (lambda: M.AUC(curve="PR", num_thresholds=7), 0.905924),
    (lambda: M.SensitivityAtSpecificity(0.6), 1.0),
    (lambda: M.SpecificityAtSensitivity(0.8, num_thresholds=50), 0.729966),
    (lambda: M.PrecisionAtRecall(0.7), 0.821328),
    (lambda: M.RecallAtPrecision(0.75), 1.0),
    (lambda: M.RecallAtPrecision(0.99), 0.653448),
]


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_curve_metrics_match_keras(case, traced):
    make, want = CASES[case]
    yt, yp, w, _ = _data()
    m = make()
    update = jf.function(m.update_state) if traced else m.update_state
    update(jf.constant(yt), jf.constant(yp))
    update(jf.constant(yt[:10]), jf.constant(yp[:10]), sample_weight=jf.constant(w[:10]))
    assert abs(float(m.result()) - want) < 2e-6
    again = type(m).from_config(m.get_config())
    assert again.get_config() == m.get_config()
    m.reset_state()
    assert float(m.result()) == 0.0


def test_r2_score_matches_keras():
    _, _, _, rng = _data()
    y = rng.standard_normal((12, 3)).astype(np.float32)
    p = (y + rng.standard_normal((12, 3)) * 0.5).astype(np.float32)
    weights = np.linspace(0.5, 1.5, 12).astype(np.float32)
    got = []
    for m in (M.R2Score(), M.R2Score(class_aggregation="variance_weighted_average"), M.R2Score(num_regressors=2)):
        m.update_state(y, p, sample_weight=weights)
        got.append(float(m.result()))
    np.testing.assert_allclose(got, [0.563952, 0.711721, 0.537525], atol=2e-6)
    per_column = M.R2Score(class_aggregation=None)
    per_column.update_state(y, p)
    np.testing.assert_allclose(per_column.result().numpy(), [0.266824, 0.80051, 0.816384], atol=2e-6)
    yd, pd = y.astype(np.float64), p.astype(np.float64)  # the unweighted score, from numpy
    want = 1 - ((yd - pd) ** 2).sum(0) / ((yd - yd.mean(0)) ** 2).sum(0)
    np.testing.assert_allclose(per_column.result().numpy(), want, rtol=1e-5)
    few = M.R2Score(num_regressors=50)
    few.update_state(y[:2], p[:2])
    with pytest.warns(UserWarning, match="Falling back to standard R2 score"):
        few.result()
    with pytest.raises(ValueError, match="class_aggregation"):
        M.R2Score(class_aggregation="median")
    with pytest.raises(ValueError, match="2D inputs"):
        M.R2Score().update_state(y[:, 0], p[:, 0])


def test_iou_metrics_match_keras():
    # Two updates, the second with float weights in [0, 1): Keras's int64 matrix truncates them
    # (to 0, with its warning), so TF 2.21's values below are those of the first update.
    rng = np.random.default_rng(5)
    yt, yp = rng.integers(0, 4, 30), rng.integers(0, 4, 30)
    w = rng.random(30).astype(np.float32)
    yt[3], yp[5] = 7, -1  # out of range: left out
    cases = [(lambda: M.MeanIoU(4), (yt, yp), 0.220659), (lambda: M.IoU(4, [0, 2]), (yt, yp), 0.322727),
             (lambda: M.MeanIoU(4, ignore_class=1), (yt, yp), 0.22803),
             (lambda: M.BinaryIoU(), (yt % 2, rng.random(30).astype(np.float32)), 0.176154),
             (lambda: M.BinaryIoU([1], threshold=0.3), (yt % 2, rng.random(30).astype(np.float32)), 0.521739),
             (lambda: M.OneHotIoU(4, [1, 3]), (np.eye(4)[yt % 4], rng.random((30, 4)).astype(np.float32)), 0.178571),
             (lambda: M.OneHotMeanIoU(4), (np.eye(4)[yt % 4], rng.random((30, 4)).astype(np.float32)), 0.121612)]
    for make, args, want in cases:
        m = make()
        m.update_state(*args)
        with pytest.warns(UserWarning, match="passing weight as `float`"):
            m.update_state(*args, sample_weight=w)
        assert abs(float(m.result()) - want) < 2e-6, type(m).__name__
        assert type(m).from_config(m.get_config()).get_config() == m.get_config()
    with pytest.raises(ValueError, match="out of range"):
        M.IoU(3, [0, 3])
    weighted = M.MeanIoU(2, dtype="float32")  # a float matrix keeps the weights
    weighted.update_state([0, 1, 1], [0, 1, 0], sample_weight=[1.0, 0.5, 0.25])
    cm = np.array([[1.0, 0.0], [0.25, 0.5]])
    union = cm.sum(0) + cm.sum(1) - np.diag(cm)
    assert abs(float(weighted.result()) - (np.diag(cm) / union).mean()) < 1e-6
