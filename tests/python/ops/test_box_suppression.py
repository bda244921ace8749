"""tf.image's non-max suppression against TF 2.21 (its outputs for the same boxes printed there
and hard-coded) and against a brute-force numpy check of the greedy rule on random boxes;
eagerly, inside jf.function and in a Dataset.map."""
import numpy as np
import pytest

import jitflow as jf

BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                  [0, 100, 1, 101]], np.float32)
SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)


@pytest.mark.parametrize("traced", [False, True])
def test_matches_tf(traced):
    image = jf.image

    def run(fn, *args, **kw):
        if not traced:
            return fn(*args, **kw)
        return jf.function(lambda *a: fn(*a, **kw))(*[jf.constant(a) for a in args])

    assert run(image.non_max_suppression, BOXES, SCORES, 3, 0.5).numpy().tolist() == [3, 0, 5]
    assert run(image.non_max_suppression, BOXES, SCORES, 10, 0.5, score_threshold=0.4).numpy().tolist() == [3, 0]
    idx, sc = run(image.non_max_suppression_with_scores, BOXES, SCORES, 10, 0.5)
    assert idx.numpy().tolist() == [3, 0, 5]
    np.testing.assert_allclose(sc.numpy(), [0.95, 0.9, 0.3])
    idx, valid = run(image.non_max_suppression_padded, BOXES, SCORES, 4, 0.5, pad_to_max_output_size=True)
    assert idx.numpy().tolist() == [3, 0, 5, 0] and int(valid) == 3
    flipped = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], np.float32)  # one box, corners either way
    assert run(image.non_max_suppression, flipped, np.array([0.5, 0.5], np.float32), 2, 0.5).numpy().tolist() == [0]
    overlaps = np.array([[1.0, 0.6], [0.6, 1.0]], np.float32)
    got = run(image.non_max_suppression_overlaps, overlaps, np.array([0.4, 0.8], np.float32), 2, 0.5)
    assert got.numpy().tolist() == [1]


def test_empty_input_and_errors():
    out = jf.image.non_max_suppression(np.zeros((0, 4), np.float32), np.zeros((0,), np.float32), 2)
    assert out.dtype == jf.int32 and out.shape == (0,)
    with pytest.raises(jf.errors.InvalidArgumentError, match="boxes must be"):
        jf.image.non_max_suppression(np.zeros((3, 3), np.float32), np.zeros((3,), np.float32), 2)
    with pytest.raises(NotImplementedError, match="soft_nms_sigma"):
        jf.image.non_max_suppression_with_scores(BOXES, SCORES, 2, soft_nms_sigma=0.5)


def test_greedy_rule_on_random_boxes(rng):
    corners = rng.uniform(0, 10, size=(60, 2, 2))
    boxes = np.concatenate([corners.min(1), corners.min(1) + rng.uniform(0.5, 3, size=(60, 2))], 1)
    scores = rng.permutation(60).astype(np.float32) / 60
    kept = jf.image.non_max_suppression(boxes.astype(np.float32), scores, 20, 0.3).numpy()

    def iou(a, b):
        h = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        w = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = h * w
        return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)

    want = []
    for i in np.argsort(-scores, kind="stable"):
        if len(want) < 20 and all(iou(boxes[i], boxes[k]) <= 0.3 for k in want):
            want.append(i)
    assert kept.tolist() == want


def test_in_a_dataset_map():
    ds = jf.data.Dataset.from_tensors((BOXES, SCORES)).map(lambda b, s: jf.image.non_max_suppression(b, s, 2))
    assert [x.tolist() for x in ds.as_numpy_iterator()] == [[3, 0]]
