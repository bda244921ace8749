"""interleave and batch with num_parallel_calls: TF 2.21's order (the sequential one unless
deterministic=False), with the work running on several threads at once, and string elements
mapped by traced functions (TextLineDataset -> map with string ops)."""
import threading
import time

import numpy as np
import pytest

import jitflow as jf

D = jf.data.Dataset


def _ints(ds):
    return [int(x) for x in ds.as_numpy_iterator()]


def _child(x):
    return D.range(10 * x, 10 * x + x + 2)


# Printed by TF 2.21 for range(5).interleave(_child, cycle_length, block_length,
# num_parallel_calls=2): the same as without num_parallel_calls.
TF_INTERLEAVE = {
    (2, 2): [0, 1, 10, 11, 12, 20, 21, 30, 31, 22, 23, 32, 33, 34, 40, 41, 42, 43, 44, 45],
    (3, 1): [0, 10, 20, 1, 11, 21, 12, 22, 30, 23, 31, 40, 32, 41, 33, 42, 34, 43, 44, 45],
    (2, 3): [0, 1, 10, 11, 12, 20, 21, 22, 23, 30, 31, 32, 40, 41, 42, 33, 34, 43, 44, 45],
}


@pytest.mark.parametrize("cycle,block", sorted(TF_INTERLEAVE))
def test_parallel_interleave_order_is_tfs(cycle, block):
    ds = D.range(5).interleave(_child, cycle_length=cycle, block_length=block, num_parallel_calls=2)
    assert _ints(ds) == TF_INTERLEAVE[(cycle, block)]
    assert _ints(ds) == TF_INTERLEAVE[(cycle, block)], "a second pass"
    loose = D.range(5).interleave(_child, cycle_length=cycle, block_length=block, num_parallel_calls=2,
                                  deterministic=False)
    assert sorted(_ints(loose)) == sorted(TF_INTERLEAVE[(cycle, block)])


def _concurrency_probe():
    lock, state = threading.Lock(), {"now": 0, "max": 0}

    def work(v):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.01)
        with lock:
            state["now"] -= 1
        return v
    return work, state


def test_parallel_interleave_reads_its_cycle_at_once():
    work, state = _concurrency_probe()

    def child(x):
        def gen():
            for i in range(4):
                yield work(int(x) * 10 + i)
        return D.from_generator(gen, output_signature=jf.TensorSpec([], jf.int64))
    ds = D.range(3).interleave(child, cycle_length=3, num_parallel_calls=3)
    assert _ints(ds) == [0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23]
    assert state["max"] > 1, "the cycle's datasets produced at the same time"


def test_parallel_interleave_error_reaches_the_caller():
    def child(x):
        def gen():
            yield int(x)
            if int(x) == 1:
                raise RuntimeError("child broke")
            yield int(x) + 100
        return D.from_generator(gen, output_signature=jf.TensorSpec([], jf.int64))
    it = iter(D.range(2).interleave(child, cycle_length=2, num_parallel_calls=2))
    assert [int(next(it)) for _ in range(3)] == [0, 1, 100]
    with pytest.raises(RuntimeError, match="child broke"):
        next(it)


def test_parallel_batch_order_and_remainder():
    # TF 2.21: range(10).batch(3, num_parallel_calls=2) -> [[0,1,2],[3,4,5],[6,7,8],[9]].
    ds = D.range(10).batch(3, num_parallel_calls=2)
    assert [b.tolist() for b in ds.as_numpy_iterator()] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    ds = D.range(10).batch(3, num_parallel_calls=2, drop_remainder=True, deterministic=False)
    assert sorted(b.tolist() for b in ds.as_numpy_iterator()) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    with pytest.raises(jf.errors.InvalidArgumentError, match="Cannot add tensor to the batch"):
        list(D.range(5).map(lambda x: jf.fill([x], x)).batch(2, num_parallel_calls=2))


def test_parallel_batch_of_slices_maps_on_several_threads():
    work, state = _concurrency_probe()

    def f(v):  # traced: the batch's workers run its graph, which calls back into Python
        return jf.py_function(work, [v], Tout=jf.int64) * 2
    ds = D.from_tensor_slices(np.arange(40, dtype=np.int64)).map(f).batch(4, num_parallel_calls=4)
    assert ds._node.plan is not None
    assert [b.tolist() for b in ds.as_numpy_iterator()] == [[2 * i for i in range(k, k + 4)] for k in range(0, 40, 4)]
    assert 1 < state["max"] <= 4


def test_text_lines_mapped_by_string_ops_in_a_graph(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("1.5\n-3\n42\n")
    traces = []

    def parse(line):
        traces.append(1)
        n = jf.strings.length(line)
        return n, jf.strings.to_number(line, jf.float32), jf.strings.join([line, jf.strings.as_string(n)], "|")

    ds = jf.data.TextLineDataset(str(path)).map(parse)
    got = list(ds.as_numpy_iterator())
    assert len(traces) == 1, "traced once, not run per element"
    # TF 2.21 gives (3, 1.5, b'1.5|3'), (2, -3.0, b'-3|2'), (2, 42.0, b'42|2').
    assert [(int(n), float(v), s) for n, v, s in got] == [(3, 1.5, b"1.5|3"), (2, -3.0, b"-3|2"), (2, 42.0, b"42|2")]
    assert [s.dtype for s in ds.element_spec] == [jf.int32, jf.float32, jf.string]


def test_string_function_the_graph_cannot_hold_runs_per_element(tmp_path):
    # split's result is ragged in TF, which jitflow's graphs lack: the function runs eagerly
    # on each element (TF 2.21: [b'1.5', b'2'], [b'-3', b'4.25'], [b'x', b'7']).
    path = tmp_path / "t.csv"
    path.write_text("1.5,2\n-3,4.25\nx,7\n")
    ds = jf.data.TextLineDataset(str(path)).map(lambda line: jf.strings.split(line, ","))
    assert [list(v) for v in ds.as_numpy_iterator()] == [[b"1.5", b"2"], [b"-3", b"4.25"], [b"x", b"7"]]
