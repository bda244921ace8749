"""Stateful and threaded parts of jf.data: shuffle's buffer semantics and seeds, cache in memory
and in a file, reading text files, prefetch's bounded buffer and parallel map's ordering."""
import gc
import gzip
import threading
import time

import numpy as np
import pytest

import jitflow as jf

D = jf.data.Dataset


def _ints(ds):
    return [int(x) for x in ds.as_numpy_iterator()]


def test_shuffle_is_a_permutation_within_the_buffer():
    for size in (1, 4, 100):
        got = _ints(D.range(50).shuffle(size, seed=3))
        assert sorted(got) == list(range(50))
        # An element can come out only once it has entered the buffer: at output k at most
        # k + size elements have been read.
        assert all(v < k + size for k, v in enumerate(got))
    assert _ints(D.range(10).shuffle(1)) == list(range(10))  # a buffer of one keeps the order (TF)


def test_shuffle_seeds_and_reshuffling():
    a = D.range(20).shuffle(20, seed=7)
    e1, e2 = _ints(a), _ints(a)
    assert e1 != e2, "reshuffle_each_iteration: each epoch its own order"
    assert _ints(D.range(20).shuffle(20, seed=7)) == e1, "the same seed gives the same first epoch"
    b = D.range(20).shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert _ints(b) == _ints(b)
    jf.random.set_seed(5)
    g1 = _ints(D.range(20).shuffle(20))
    jf.random.set_seed(5)
    g2 = _ints(D.range(20).shuffle(20))
    assert g1 == g2 and sorted(g1) == list(range(20)), "the global seed makes it reproducible"
    jf.random.set_seed(None)


def test_cache_in_memory_replays_the_first_epoch():
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)
    ds = D.from_generator(gen, output_signature=jf.TensorSpec([], jf.int64)).cache()
    assert _ints(ds) == [0, 1, 2] and _ints(ds) == [0, 1, 2]
    assert len(calls) == 1
    shuffled = D.range(10).shuffle(10, seed=1).cache()
    assert _ints(shuffled) == _ints(shuffled), "a cache after shuffle fixes the order"


def test_cache_in_a_file(tmp_path):
    name = str(tmp_path / "c")
    calls = []

    def gen():
        calls.append(1)
        yield from ([1.5, 2.5], [3.5, 4.5])
    spec = jf.TensorSpec([2], jf.float32)
    assert [x.tolist() for x in D.from_generator(gen, output_signature=spec).cache(name).as_numpy_iterator()] == \
        [[1.5, 2.5], [3.5, 4.5]]
    # A new dataset on the same file reads it instead of running its input.
    again = D.from_generator(gen, output_signature=spec).cache(name)
    assert [x.tolist() for x in again.as_numpy_iterator()] == [[1.5, 2.5], [3.5, 4.5]]
    assert len(calls) == 1


def test_cache_file_of_strings_holds_no_pickle(tmp_path):
    name = str(tmp_path / "s")
    rows = [[b"a", b"", b"x\x00y"], [b"\xff\x00", b"bc", b"d"]]
    ds = D.from_tensor_slices((jf.constant(rows), [1, 2])).cache(name)
    first = [(list(s), int(i)) for s, i in ds.as_numpy_iterator()]
    assert first == [(rows[0], 1), (rows[1], 2)]
    # Readable without pickle (embedded and trailing NULs kept), and replayed from the file.
    with np.load(name + ".jfcache", allow_pickle=False) as z:
        assert int(z["count"]) == 2
    again = D.from_tensor_slices((jf.constant([[b"?"] * 3] * 2), [0, 0])).cache(name)
    assert [(list(s), int(i)) for s, i in again.as_numpy_iterator()] == first


def test_text_lines_and_list_files(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"l1\nl2\r\n\nl4")
    (tmp_path / "b.txt").write_bytes(b"m1\n")
    with gzip.open(tmp_path / "c.gz", "wb") as f:
        f.write(b"z1\nz2\n")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    ds = jf.data.TextLineDataset(files)
    assert ds.element_spec == jf.TensorSpec([], jf.string)
    assert list(ds.as_numpy_iterator()) == [b"l1", b"l2", b"", b"l4", b"m1"]  # TF's lines
    assert list(jf.data.TextLineDataset(str(tmp_path / "c.gz"), compression_type="GZIP").as_numpy_iterator()) == \
        [b"z1", b"z2"]
    pattern = str(tmp_path / "*.txt")
    assert list(D.list_files(pattern, shuffle=False).as_numpy_iterator()) == [f.encode() for f in files]
    assert sorted(D.list_files(pattern).as_numpy_iterator()) == [f.encode() for f in files]
    with pytest.raises(jf.errors.InvalidArgumentError, match="No files matched pattern"):
        D.list_files(str(tmp_path / "none" / "*.txt"))
    lengths = D.list_files(pattern, shuffle=False).interleave(jf.data.TextLineDataset, cycle_length=1)
    assert list(lengths.as_numpy_iterator()) == [b"l1", b"l2", b"", b"l4", b"m1"]


def test_prefetch_memory_is_bounded_by_its_buffer():
    produced = []

    def gen():
        for i in range(1000):
            produced.append(i)
            yield np.full(1000, i, np.float32)
    ds = D.from_generator(gen, output_signature=jf.TensorSpec([1000], jf.float32)).prefetch(3)
    it = iter(ds)
    first = next(it)
    assert float(first[0]) == 0.0
    time.sleep(0.3)  # give the producer every chance to run ahead
    # One element handed out, three in the buffer, and one the producer holds while it waits.
    assert len(produced) <= 1 + 3 + 1, f"prefetch(3) read {len(produced)} elements ahead"
    assert [float(next(it)[0]) for _ in range(5)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    del it
    gc.collect()
    time.sleep(0.1)
    stopped_at = len(produced)
    time.sleep(0.3)
    assert len(produced) == stopped_at, "a dropped iterator stops its prefetch worker"


def test_parallel_map_runs_calls_at_once_up_to_num_parallel_calls():
    lock, state = threading.Lock(), {"now": 0, "max": 0}

    def work(x):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return x

    def f(x):  # traced: the worker runs its graph, and the graph calls back into Python
        return jf.py_function(work, [x], Tout=jf.int64) * 2
    assert _ints(D.range(24).map(f, num_parallel_calls=4)) == [2 * i for i in range(24)]
    assert 1 < state["max"] <= 4


def test_parallel_map_order():
    def slow(x):
        return x * 10
    ds = D.range(40).map(slow, num_parallel_calls=4)
    assert _ints(ds) == [10 * i for i in range(40)]
    loose = D.range(40).map(slow, num_parallel_calls=4, deterministic=False)
    assert sorted(_ints(loose)) == [10 * i for i in range(40)]


def test_prefetch_passes_errors_in_order():
    def gen():
        yield 1
        yield 2
        raise RuntimeError("generator broke")
    it = iter(D.from_generator(gen, output_signature=jf.TensorSpec([], jf.int32)).prefetch(2))
    assert [int(next(it)), int(next(it))] == [1, 2]
    with pytest.raises(RuntimeError, match="generator broke"):
        next(it)


def test_parallel_map_in_chunks_keeps_order_and_errors_in_place():
    # A traced map's workers take chunks of elements (16): 70 elements end in a short chunk,
    # an upstream error after 37 elements comes after those 37, and a map that fails on one
    # element gives the ones before it first.
    ds = D.range(70).map(lambda x: x * 3, num_parallel_calls=2)
    assert _ints(ds) == [3 * i for i in range(70)]

    def gen():
        yield from range(37)
        raise RuntimeError("generator broke")
    it = iter(D.from_generator(gen, output_signature=jf.TensorSpec([], jf.int64))
              .map(lambda x: x + 1, num_parallel_calls=2))
    assert [int(next(it)) for _ in range(37)] == list(range(1, 38))
    with pytest.raises(RuntimeError, match="generator broke"):
        next(it)

    def check(x):
        jf.debugging.assert_less(x, jf.constant(21, jf.int64), message="too big")
        return x * 2
    it = iter(D.range(50).map(check, num_parallel_calls=2))
    assert [int(next(it)) for _ in range(21)] == [2 * i for i in range(21)]
    with pytest.raises(jf.errors.InvalidArgumentError, match="too big"):
        next(it)
