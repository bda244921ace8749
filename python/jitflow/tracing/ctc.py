"""Connectionist temporal classification: nn.ctc_loss (the negative log-probability of each
label sequence under per-frame class scores, by the forward recursion over the blank-extended
label in log space) and nn.ctc_greedy_decoder (the best class per frame, repeats merged and
blanks dropped, as a SparseTensor), plus Keras's backend.ctc_batch_cost. Written with jf ops and
a fold over frames, so they trace, and the loss's gradient is the recursion's own."""
from ..core import dtypes as _dt
from ..core.export import export
from ..ops import array_ops as _array
from ..ops import basic_ops as _ops
from ..ops import mask_ops as _mask
from ..ops import nn_ops as _nn
from ..ops import sort_ops as _sort
from ..ops import sparse_ops as _sparse
from ..ops.dispatch import to_tensor
from ..ops.sparse_ops import SparseTensor
from .functional_ops import foldl

_NEG_INF = float("-inf")


def _logsumexp(*terms):
    """log(sum(exp(terms))) elementwise, -inf where every term is -inf, with finite gradients."""
    peak = terms[0]
    for t in terms[1:]:
        peak = _ops.maximum(peak, t)
    dead = _ops.equal(peak, _NEG_INF)
    safe_peak = _ops.where(dead, _ops.zeros_like(peak), peak)
    total = _ops.zeros_like(terms[0])
    for t in terms:
        total = total + _ops.exp(t - safe_peak)
    total = _ops.where(dead, _ops.ones_like(total), total)
    return _ops.where(dead, _ops.zeros_like(peak) + _NEG_INF, safe_peak + _ops.log(total))


def _shift(x, k):
    """x [batch, S] moved k places to the right along S, -inf coming in."""
    pad = _ops.zeros_like(x[:, :k]) + _NEG_INF
    return _ops.concat([pad, x[:, :-k]], 1)


@export("nn.ctc_loss")
def ctc_loss(labels, logits, label_length, logit_length, logits_time_major=True, unique=None, blank_index=None,
             name=None):
    """Per batch entry, -log p(labels | logits): logits [frames, batch, classes] (time major) or
    [batch, frames, classes]; dense int labels [batch, max_label_length] with label_length of
    them used, logit_length frames used; blank_index the blank class (default 0; negative
    counts from the end)."""
    if isinstance(labels, SparseTensor):  # TF's sparse labels: the same rows, zero-padded
        if label_length is None:
            rows = labels.indices[:, 0]
            label_length = _array.unsorted_segment_sum(_ops.ones_like(rows), rows, labels.dense_shape[0])
        labels = _sparse.to_dense(labels, validate_indices=False)
    if unique is not None:
        raise NotImplementedError("jitflow's ctc_loss does not take `unique` (it only speeds TF's kernel up)")
    logits = to_tensor(logits)
    if not logits_time_major:
        logits = _ops.transpose(logits, [1, 0, 2])
    classes = logits.shape[-1]
    blank = 0 if blank_index is None else int(blank_index)
    if blank < 0:
        blank += classes
    labels = _ops.cast(to_tensor(labels), _dt.int32)
    label_length = _ops.cast(to_tensor(label_length), _dt.int32)
    logit_length = _ops.cast(to_tensor(logit_length), _dt.int32)
    batch, max_len = _ops.shape(labels)[0], _ops.shape(labels)[1]
    # the blank-extended label [blank, l1, blank, l2, ..., blank], S = 2 L + 1
    blanks = _ops.zeros_like(labels) + blank
    ext = _ops.reshape(_ops.stack([blanks, labels], axis=2), _ops.stack([batch, 2 * max_len]))
    ext = _ops.concat([ext, _ops.zeros_like(ext[:, :1]) + blank], 1)
    positions = _ops.range(2 * max_len + 1)
    skip = _ops.logical_and(_ops.logical_and(_ops.expand_dims(positions >= 2, 0), _ops.not_equal(ext, blank)),
                            _ops.not_equal(ext, _ops.concat([ext[:, :2] * 0 - 1, ext[:, :-2]], 1)))
    log_probs = _nn.log_softmax(logits, axis=-1)  # [T, B, C]
    emit = _array.gather(_ops.transpose(log_probs, [1, 0, 2]), ext, axis=2, batch_dims=1)  # [B, T, S]
    emit = _ops.transpose(emit, [1, 0, 2])
    frames = _ops.range(_ops.shape(logits)[0])
    active = _ops.expand_dims(frames, 1) < _ops.expand_dims(logit_length, 0)  # [T, B]
    start = _ops.concat([_ops.zeros_like(emit[0, :, :1]),
                         _ops.zeros_like(emit[0, :, 1:]) + _NEG_INF], 1)  # before the first frame
    no_skip = _ops.zeros_like(start) + _NEG_INF

    def step(alpha, frame):
        e, on = frame
        hop = _ops.where(skip, _shift(alpha, 2), no_skip)
        new = _logsumexp(alpha, _shift(alpha, 1), hop) + e
        return _ops.where(_ops.expand_dims(on, 1), new, alpha)

    alpha = foldl(step, (emit, active), initializer=start)
    last = 2 * label_length
    end = _array.gather(alpha, _ops.expand_dims(last, 1), axis=1, batch_dims=1)[:, 0]
    before = _array.gather(alpha, _ops.expand_dims(_ops.maximum(last - 1, 0), 1), axis=1, batch_dims=1)[:, 0]
    before = _ops.where(label_length > 0, before, _ops.zeros_like(before) + _NEG_INF)
    return -_logsumexp(end, before)


@export("nn.ctc_greedy_decoder")
def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """([decoded], log_probabilities): per batch entry the argmax class of each of its frames,
    a class equal to the previous frame's dropped when merge_repeated, blanks (the last class
    by default) dropped, as one SparseTensor [batch, longest]; and minus the sum of the frames'
    largest scores, [batch, 1]."""
    inputs = to_tensor(inputs)  # [T, B, C]
    classes = inputs.shape[-1]
    blank = classes - 1 if blank_index is None else int(blank_index)
    if blank < 0:
        blank += classes
    lengths = _ops.cast(to_tensor(sequence_length), _dt.int32)
    best = _ops.cast(_ops.argmax(inputs, axis=-1), _dt.int32)  # [T, B]
    frames = _ops.range(_ops.shape(inputs)[0])
    active = _ops.expand_dims(frames, 1) < _ops.expand_dims(lengths, 0)
    score = -_ops.reduce_sum(_ops.where(active, _ops.reduce_max(inputs, axis=-1), _ops.zeros_like(best, inputs.dtype)),
                             axis=0)
    keep = _ops.logical_and(active, _ops.not_equal(best, blank))
    if merge_repeated:
        previous = _ops.concat([_ops.zeros_like(best[:1]) - 1, best[:-1]], 0)
        keep = _ops.logical_and(keep, _ops.not_equal(best, previous))
    keep_bt, best_bt = _ops.transpose(keep, [1, 0]), _ops.transpose(best, [1, 0])  # [B, T]
    position = _sort.cumsum(_ops.cast(keep_bt, _dt.int64), axis=1) - 1
    rows = _ops.zeros_like(position) + _ops.expand_dims(_ops.range(_ops.shape(best_bt, out_type=_dt.int64)[0]), 1)
    indices = _ops.stack([_mask.boolean_mask(rows, keep_bt), _mask.boolean_mask(position, keep_bt)], axis=1)
    values = _ops.cast(_mask.boolean_mask(best_bt, keep_bt), _dt.int64)
    counts = _ops.reduce_sum(_ops.cast(keep_bt, _dt.int64), axis=1)
    shape = _ops.stack([_ops.shape(best_bt, out_type=_dt.int64)[0],
                        _ops.reduce_max(_ops.concat([counts, _ops.zeros([1], _dt.int64)], 0))])
    return [SparseTensor(indices, values, shape)], _ops.expand_dims(score, 1)



def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """Keras's backend.ctc_batch_cost: softmax outputs y_pred [batch, frames, classes] (the last
    class the blank), dense labels y_true, lengths as [batch, 1]; the losses as [batch, 1]."""
    logits = _ops.log(_ops.transpose(_ops.cast(to_tensor(y_pred), _dt.float32), [1, 0, 2]) + 1e-7)
    loss = ctc_loss(y_true, logits, _ops.reshape(label_length, [-1]), _ops.reshape(input_length, [-1]),
                    blank_index=-1)
    return _ops.expand_dims(loss, 1)
