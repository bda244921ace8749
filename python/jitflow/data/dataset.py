"""jf.data.Dataset: TF 2.21's tf.data.Dataset methods, each making a new pipeline step
(base.Node) over this dataset's, and the eager iterators that pull elements through them."""
import numpy as np

from ..core.errors import InvalidArgumentError, OutOfRangeError
from ..core.export import export
from ..ops import basic_ops
from . import fast, readers, sources, structure, traced, transforms
from .base import INFINITE, UNKNOWN, DatasetSpec, Node
from .functions import ElementFunction
from .options import Options
from .prefetch import Prefetch, parallel_map
from .shuffle import Shuffle


class _WithOptions(Node):
    """with_options: the elements of its input, unchanged, with Options for the pipeline."""

    passes_elements = True

    def __init__(self, node, options):
        self.node, self.tree, self.specs, self.options = node, node.tree, node.specs, options

    def cardinality(self):
        return self.node.cardinality()

    def iterate(self):
        return self.node.iterate()


def _options_of(node, out):
    """The Options set upstream of node, merged inputs first (a later with_options wins)."""
    for name in ("node", "a", "b"):
        child = getattr(node, name, None)
        if isinstance(child, Node):
            _options_of(child, out)
    for child in getattr(node, "nodes", ()):
        if isinstance(child, Node):
            _options_of(child, out)
    if isinstance(node, _WithOptions):
        out._merge_from(node.options)
    return out


class _ParallelMap(transforms.Map):
    def __init__(self, node, func, num_parallel_calls, deterministic):
        super().__init__(node, func)
        self.calls, self.deterministic = num_parallel_calls, deterministic

    def iterate(self):
        return parallel_map(self.fn, self.node, self.calls, self.deterministic)


@export("data.Dataset")
class Dataset:
    """A sequence of elements, each a nested structure (tuples, dicts, namedtuples) of
    tensors, as TF's tf.data.Dataset. Iterating it (eagerly, or in a jf.function's `for`)
    runs the pipeline."""

    def __init__(self, node):
        self._node = node

    # Recognised by tracing (AutoGraph's `for`, jf.function's arguments) without importing this layer.
    __jf_dataset__ = True

    @property
    def element_spec(self):
        return self._node.tree.pack(list(self._node.specs))

    def _spec(self):
        return DatasetSpec(self.element_spec)

    def __repr__(self):
        return f"<{type(self._node).__name__}Dataset element_spec={self.element_spec!r}>"

    def __iter__(self):
        if traced.is_tracing():  # inside a jf.function: the graph pulls the elements when it runs
            return traced.GraphIterator(self._node)
        return OwnedIterator(self)

    def __jf_spec_leaf__(self):
        """A jf.function keys a dataset argument by its element spec, as TF does, and passes an
        int64 handle in its place (cpp/python/nest.h): one trace serves every dataset of
        that spec."""
        key = repr(self.element_spec).encode()
        return key, basic_ops.constant(traced.handle(self._node), dtype="int64")

    def __jf_spec_leaf_traced__(self, placeholder):
        """The dataset argument inside the trace: its spec, its elements pulled from the
        caller's dataset when the function runs."""
        return Dataset(traced.ArgumentNode(self._node, placeholder))

    def __jf_graph_iterator__(self):
        """For AutoGraph's `for x in dataset` in a traced function (tracing cannot import this
        layer): the graph iterator whose pulls a while loop repeats."""
        return traced.GraphIterator(self._node)

    def __bool__(self):
        return True

    def __len__(self):
        n = self._node.cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def cardinality(self):
        return basic_ops.constant(self._node.cardinality(), dtype="int64")

    def as_numpy_iterator(self):
        return NumpyIterator(self)

    # ---- sources -------------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors, name=None):
        return Dataset(sources.Tensors(tensors))

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        return Dataset(sources.TensorSlices(tensors))

    @staticmethod
    def range(*args, output_type="int64", name=None):
        return Dataset(sources.Range(args, output_type))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        tree, specs = sources._signature_of(output_signature, output_types, output_shapes)
        return Dataset(sources.Generator(generator, tree, specs, tuple(args or ())))

    @staticmethod
    def zip(*args, datasets=None, name=None):
        if datasets is None:
            datasets = args[0] if len(args) == 1 else tuple(args)
        elif args:
            raise TypeError("Both `*args` and `datasets` cannot be set.")
        tree = structure.Tree.of(datasets)
        leaves = tree.flatten(datasets)
        for d in leaves:
            if not isinstance(d, Dataset):
                raise TypeError("Invalid input to `zip`. Inputs are expected to be (nested) structures of "
                                f"`tf.data.Dataset` objects but encountered object of type {type(d)}.")
        nodes = [d._node for d in leaves]
        full = _graft(tree, [n.tree for n in nodes])
        return Dataset(sources.Zip(full, nodes))

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        files = readers.matching_files(file_pattern)
        ds = Dataset.from_tensor_slices(np.array([f.encode() for f in files], dtype=object))
        if shuffle is None or shuffle:
            ds = ds.shuffle(len(files), seed=seed)
        return ds

    # ---- transformations -----------------------------------------------------------------
    def concatenate(self, dataset, name=None):
        return Dataset(sources.Concatenate(self._node, dataset._node))

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        if num_parallel_calls is None or num_parallel_calls == 1:
            return Dataset(transforms.Map(self._node, map_func))
        return Dataset(_ParallelMap(self._node, map_func, num_parallel_calls, deterministic))

    def filter(self, predicate, name=None):
        return Dataset(transforms.Filter(self._node, predicate))

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        node = transforms.Batch(self._node, batch_size, bool(drop_remainder), num_parallel_calls, deterministic)
        node.plan = fast.plan(node, node.calls)
        return Dataset(node)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        return Dataset(transforms.PaddedBatch(self._node, batch_size, padded_shapes, padding_values,
                                              bool(drop_remainder)))

    def unbatch(self, name=None):
        return Dataset(transforms.Unbatch(self._node))

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        node = transforms.Batch(transforms.Unbatch(self._node), batch_size, bool(drop_remainder))
        return Dataset(node)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        return Dataset(Shuffle(self._node, buffer_size, seed, reshuffle_each_iteration))

    def repeat(self, count=None, name=None):
        return Dataset(transforms.Repeat(self._node, count))

    def take(self, count, name=None):
        return Dataset(transforms.Take(self._node, count))

    def skip(self, count, name=None):
        return Dataset(transforms.Skip(self._node, count))

    def shard(self, num_shards, index, name=None):
        return Dataset(transforms.Shard(self._node, num_shards, index))

    def prefetch(self, buffer_size, name=None):
        return Dataset(Prefetch(self._node, buffer_size))

    def cache(self, filename="", name=None):
        return Dataset(transforms.Cache(self._node, filename))

    def enumerate(self, start=0, name=None):
        counter = Dataset.range(start, np.iinfo(np.int64).max)
        return Dataset.zip((counter, self))

    def flat_map(self, map_func, name=None):
        return Dataset(transforms.Interleave(self._node, map_func, 1, 1, _node_of))

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        return Dataset(transforms.Interleave(self._node, map_func, cycle_length,
                                             1 if block_length is None else block_length, _node_of,
                                             num_parallel_calls, deterministic))

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        return Dataset(transforms.Window(self._node, size, shift, stride, bool(drop_remainder), _window_dataset))

    def scan(self, initial_state, scan_func, name=None):
        return Dataset(transforms.Scan(self._node, initial_state, scan_func))

    def take_while(self, predicate, name=None):
        return Dataset(transforms.TakeWhile(self._node, predicate))

    def unique(self, name=None):
        return Dataset(transforms.Unique(self._node))

    def get_single_element(self, name=None):
        """The dataset's one element (InvalidArgumentError for none or several, as TF)."""
        it = iter(self._node.iterate())
        try:
            first = next(it)
        except StopIteration:
            raise InvalidArgumentError("Dataset was empty.") from None
        for _ in it:
            raise InvalidArgumentError("Dataset had more than one element.")
        return self._node.tree.pack(first)

    def with_options(self, options, name=None):
        """This dataset with `options` for its pipeline (merged with those set upstream; what
        this call sets wins)."""
        if not isinstance(options, Options):
            raise TypeError(f"options must be a tf.data.Options, got {type(options).__name__}")
        return Dataset(_WithOptions(self._node, options))

    def options(self):
        """The Options of this pipeline: every with_options upstream, merged in order."""
        return _options_of(self._node, Options())

    def apply(self, transformation_func):
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError("`transformation_func` must return a `tf.data.Dataset` object.")
        return out

    def reduce(self, initial_state, reduce_func, name=None):
        """reduce_func(state, element) over every element, from initial_state: the final state."""
        tree = structure.Tree.of(initial_state)
        state = [structure.to_component(x) for x in tree.flatten(initial_state)]
        fn = ElementFunction(reduce_func, self._node.tree, self._node.specs, "reduce",
                             (tree, [structure.spec_of(c) for c in state]))
        if traced.is_tracing():
            return traced.reduce(self._node, initial_state, reduce_func, tree, state, fn)
        for comps in self._node.iterate():
            out = fn(comps, state)
            _check_state(tree, state, fn.out_tree, out)
            state = out
        return tree.pack(state)


def _check_state(tree, state, out_tree, out):
    if len(state) != len(out) or not tree.same(out_tree):
        raise InvalidArgumentError(
            "The number of components of the initial state and the reduce function output does "
            f"not match. (initial_state={len(state)}, output={len(out)}).")
    for a, b in zip(state, out):
        if a.dtype != b.dtype:
            raise TypeError(f"The element types for the new state must match the initial state. Expected "
                            f"{a.dtype.name}; got {b.dtype.name}.")


def _graft(tree, subtrees):
    """zip's element structure: the datasets' structure with each dataset replaced by its
    element's."""
    it = iter(subtrees)

    def walk(t):
        if t.kind == "leaf":
            return next(it)
        return structure.Tree(t.kind, [walk(c) for c in t.children], t.meta)
    return walk(tree)


def _node_of(value):
    return value._node if isinstance(value, Dataset) else None


def _window_dataset(components, spec):
    """One component of a window: a dataset of those values."""
    return Dataset(_ListNode(components, spec))


class _ListNode(transforms.Node):
    def __init__(self, components, spec):
        self.components, self.tree, self.specs = components, structure.Tree.of(None), [spec]

    def cardinality(self):
        return len(self.components)

    def iterate(self):
        for c in self.components:
            yield [c]


structure.Dataset_like = (Dataset,)


class OwnedIterator:
    """iter(dataset): yields the dataset's elements as tensors in its structure; get_next()
    raises OutOfRangeError at the end, as TF's; next() raises StopIteration."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._tree = dataset._node.tree
        self._it = dataset._node.iterate()

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def __iter__(self):
        return self

    def __next__(self):
        return self._tree.pack(next(self._it))

    def get_next(self):
        try:
            return self.__next__()
        except StopIteration:
            raise OutOfRangeError("End of sequence") from None

    def get_next_as_optional(self):
        raise NotImplementedError("jitflow does not implement tf.experimental.Optional yet")

    def __jf_spec_leaf__(self):
        """A jf.function keys an iterator argument by its element spec, as TF does, and passes
        an int64 handle in its place: one trace serves every iterator of that spec, and the
        elements are pulled from the caller's iterator when the function runs."""
        key = b"iterator:" + repr(self.element_spec).encode()
        return key, basic_ops.constant(traced.handle(self), dtype="int64")

    def __jf_spec_leaf_traced__(self, placeholder):
        return traced.ArgumentIterator(self._tree, self._dataset._node.specs, placeholder)


class NumpyIterator:
    """as_numpy_iterator(): the elements with numpy values (bytes for strings)."""

    def __init__(self, dataset):
        self._tree = dataset._node.tree
        self._it = dataset._node.iterate()

    def __iter__(self):
        return self

    def __next__(self):
        return self._tree.pack([_to_numpy(c) for c in next(self._it)])

    next = __next__


def _to_numpy(c):
    if isinstance(c, Dataset):
        return c.as_numpy_iterator()
    return c.numpy()
