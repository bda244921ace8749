"""nn.ctc_loss, nn.ctc_greedy_decoder and keras.backend.ctc_batch_cost: the loss against a
brute-force numpy sum over every alignment (float64) and TF 2.21's values for the same inputs
(printed there, hard-coded), its gradient against central differences, and the decoder's
SparseTensor against TF's; eagerly and inside jf.function."""
import itertools

import numpy as np
import pytest

import jitflow as jf

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((6, 2, 4)).astype(np.float32)  # [frames, batch, classes]
LABELS = np.array([[1, 2, 2], [3, 1, 0]], np.int32)
LABEL_LEN = np.array([3, 2], np.int32)
LOGIT_LEN = np.array([6, 5], np.int32)


def _brute_force(logits, label, blank):
    """-log of the summed probability of every frame labelling that collapses to `label`."""
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    total = 0.0
    for path in itertools.product(range(logits.shape[1]), repeat=logits.shape[0]):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1])]
        if collapsed == list(label):
            total += np.exp(sum(logp[t, c] for t, c in enumerate(path)))
    return -np.log(total)


@pytest.mark.parametrize("traced", [False, True])
def test_loss_matches_tf_and_brute_force(traced):
    fn = jf.function(jf.nn.ctc_loss) if traced else jf.nn.ctc_loss
    loss = fn(LABELS, LOGITS, LABEL_LEN, LOGIT_LEN)
    np.testing.assert_allclose(loss.numpy(), [5.6737099, 3.9928756], rtol=1e-6)  # TF 2.21, blank 0
    for b in range(2):
        want = _brute_force(LOGITS[:LOGIT_LEN[b], b].astype(np.float64), LABELS[b, :LABEL_LEN[b]], 0)
        assert loss.numpy()[b] == pytest.approx(want, rel=1e-5)
    batch_major = fn(LABELS, np.transpose(LOGITS, [1, 0, 2]), LABEL_LEN, LOGIT_LEN, logits_time_major=False)
    np.testing.assert_allclose(batch_major.numpy(), loss.numpy(), rtol=1e-6)
    labels = np.array([[1, 2, 2], [0, 1, 0]], np.int32)
    np.testing.assert_allclose(jf.nn.ctc_loss(labels, LOGITS, LABEL_LEN, LOGIT_LEN, blank_index=-1).numpy(),
                               [5.8114018, 3.5921936], rtol=1e-6)
    sparse = jf.sparse.from_dense(LABELS)  # TF takes sparse labels, their lengths from the rows
    np.testing.assert_allclose(jf.nn.ctc_loss(sparse, LOGITS, None, LOGIT_LEN).numpy(), loss.numpy(), rtol=1e-6)


def test_gradient_matches_central_differences():
    x = LOGITS[:4, :1].astype(np.float64)
    label, ll, tl = LABELS[:1, :2], np.array([2], np.int32), np.array([4], np.int32)
    t = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(t)
        loss = jf.reduce_sum(jf.nn.ctc_loss(label, t, ll, tl))
    got = tape.gradient(loss, t).numpy()
    eps, want = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        want[idx] = (_brute_force(hi[:, 0], [1, 2], 0) - _brute_force(lo[:, 0], [1, 2], 0)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("traced", [False, True])
def test_greedy_decoder_matches_tf(traced):
    fn = jf.function(jf.nn.ctc_greedy_decoder) if traced else jf.nn.ctc_greedy_decoder
    (decoded,), log_probs = fn(LOGITS, LOGIT_LEN)
    assert decoded.indices.numpy().tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]]
    assert decoded.values.numpy().tolist() == [2, 0, 1, 2, 1] and decoded.dense_shape.numpy().tolist() == [2, 3]
    np.testing.assert_allclose(log_probs.numpy(), [[-4.6825], [-4.1653]], atol=1e-4)
    (decoded,), _ = jf.nn.ctc_greedy_decoder(LOGITS, LOGIT_LEN, blank_index=0)
    assert decoded.values.numpy().tolist() == [2, 3, 1, 2, 1, 3]
    (decoded,), _ = jf.nn.ctc_greedy_decoder(LOGITS, LOGIT_LEN, merge_repeated=False)
    assert decoded.values.numpy().tolist() == [2, 0, 1, 1, 2, 1, 1, 1]


def test_keras_ctc_batch_cost_matches_tf():
    labels = np.array([[1, 2, 2], [0, 1, 0]], np.int32)
    probs = jf.nn.softmax(np.transpose(LOGITS, [1, 0, 2])).numpy()
    got = jf.keras.backend.ctc_batch_cost(labels, probs, LOGIT_LEN[:, None], LABEL_LEN[:, None])
    assert got.shape == (2, 1)
    np.testing.assert_allclose(got.numpy()[:, 0], [5.8114009, 3.5921931], rtol=2e-6)
