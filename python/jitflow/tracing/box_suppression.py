"""tf.image's non-maximum suppression: non_max_suppression, _with_scores, _padded and _overlaps,
TF's greedy rule (candidates by decreasing score, the lower index first among equal scores; a
candidate is dropped when its IoU, or given overlap, with a kept box is above the threshold or
its score is not above score_threshold). The selection is a data-dependent loop over a few
hundred boxes, done in numpy: eagerly now, traced as a py_function node (so it works in
Dataset.map; a jit_compile=True function that holds it refuses it by name)."""
import numpy as np

from .. import _C
from ..core import dtypes as _dt
from ..core.errors import InvalidArgumentError
from ..core.export import export
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops as _ops
from .py_function import py_function


def _iou(boxes):
    """[n, n] intersection over union of boxes given as any two opposite corners (y, x)."""
    y1, y2 = np.minimum(boxes[:, 0], boxes[:, 2]), np.maximum(boxes[:, 0], boxes[:, 2])
    x1, x2 = np.minimum(boxes[:, 1], boxes[:, 3]), np.maximum(boxes[:, 1], boxes[:, 3])
    area = (y2 - y1) * (x2 - x1)
    h = np.clip(np.minimum(y2[:, None], y2[None]) - np.maximum(y1[:, None], y1[None]), 0, None)
    w = np.clip(np.minimum(x2[:, None], x2[None]) - np.maximum(x1[:, None], x1[None]), 0, None)
    inter = h * w
    union = area[:, None] + area[None] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def _select(overlap, scores, max_output_size, threshold, score_threshold):
    """TF's greedy selection: the kept indices (int32) in the order they were kept."""
    order = np.lexsort((np.arange(len(scores)), -scores))  # score descending, index ascending
    kept = []
    for i in order:
        if len(kept) >= max_output_size:
            break
        if not scores[i] > score_threshold:
            break
        if all(not overlap[i, k] > threshold for k in kept):
            kept.append(i)
    return np.asarray(kept, np.int32)


def _value(x, dtype=None):
    a = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    return a if dtype is None else a.astype(dtype)


def _checked(boxes, scores, max_output_size, what):
    boxes, scores = _ops.convert_to_tensor(boxes), _ops.convert_to_tensor(scores)
    if boxes.shape.rank is not None and (boxes.shape.rank != 2 or boxes.shape[-1] not in (4, None)):
        raise InvalidArgumentError(f"{what}: boxes must be [num_boxes, 4], got shape {tuple(boxes.shape)}")
    if scores.shape.rank is not None and scores.shape.rank != 1:
        raise InvalidArgumentError(f"{what}: scores must be a vector, got shape {tuple(scores.shape)}")
    return boxes, scores, _ops.convert_to_tensor(max_output_size, _dt.int32)


def _thresholds(*values):
    """The thresholds as float32 tensors (TF takes Python numbers or tensors for them)."""
    return [_ops.cast(_ops.convert_to_tensor(v), _dt.float32) for v in values]


def _run(fn, inputs, tout):
    if any(isinstance(t, _C.Tensor) and t._is_symbolic for t in inputs):
        return py_function(lambda *ts: fn(*[t.numpy() for t in ts]), list(inputs), Tout=tout)
    out = fn(*[_value(t) for t in inputs])
    if isinstance(out, tuple):
        return tuple(_ops.convert_to_tensor(o, s.dtype) for o, s in zip(out, tout))
    return _ops.convert_to_tensor(out, tout.dtype)


@export("image.non_max_suppression")
def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"),
                        name=None):
    """The indices (int32) of at most max_output_size boxes kept by greedy NMS, best first."""
    boxes, scores, limit = _checked(boxes, scores, max_output_size, "NonMaxSuppressionV3")

    def select(b, s, n, iou_t, score_t):
        return _select(_iou(b.astype(np.float64)), s, int(n), float(iou_t), float(score_t))
    return _run(select, [boxes, scores, limit, *_thresholds(iou_threshold, score_threshold)],
                TensorSpec([None], _dt.int32))


@export("image.non_max_suppression_with_scores")
def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0, name=None):
    """non_max_suppression's indices and their scores (soft_nms_sigma 0: hard suppression)."""
    if float(_value(soft_nms_sigma)) != 0.0:
        raise NotImplementedError("jitflow's non_max_suppression_with_scores implements soft_nms_sigma=0 (hard "
                                  "NMS) only")
    boxes, scores, limit = _checked(boxes, scores, max_output_size, "NonMaxSuppressionV5")

    def select(b, s, n, iou_t, score_t):
        kept = _select(_iou(b.astype(np.float64)), s, int(n), float(iou_t), float(score_t))
        return kept, s[kept]
    return _run(select, [boxes, scores, limit, *_thresholds(iou_threshold, score_threshold)],
                (TensorSpec([None], _dt.int32), TensorSpec([None], scores.dtype)))


@export("image.non_max_suppression_padded")
def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"),
                               pad_to_max_output_size=False, name=None, sorted_input=False,
                               canonicalized_coordinates=False, tile_size=512):
    """non_max_suppression's indices (zero-padded to max_output_size when asked) and how many
    are valid, for one set of boxes."""
    boxes, scores, limit = _checked(boxes, scores, max_output_size, "NonMaxSuppressionV4")

    def select(b, s, n, iou_t, score_t):
        kept = _select(_iou(b.astype(np.float64)), s, int(n), float(iou_t), float(score_t))
        valid = np.int32(len(kept))
        if pad_to_max_output_size:
            kept = np.concatenate([kept, np.zeros(int(n) - len(kept), np.int32)])
        return kept, valid
    return _run(select, [boxes, scores, limit, *_thresholds(iou_threshold, score_threshold)],
                (TensorSpec([None], _dt.int32), TensorSpec([], _dt.int32)))


@export("image.non_max_suppression_overlaps")
def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=float("-inf"), name=None):
    """Greedy NMS on a given [n, n] overlap matrix instead of box IoUs."""
    overlaps, scores = _ops.convert_to_tensor(overlaps), _ops.convert_to_tensor(scores)
    limit = _ops.convert_to_tensor(max_output_size, _dt.int32)

    def select(o, s, n, o_t, score_t):
        return _select(o, s, int(n), float(o_t), float(score_t))
    return _run(select, [overlaps, scores, limit, *_thresholds(overlap_threshold, score_threshold)],
                TensorSpec([None], _dt.int32))
