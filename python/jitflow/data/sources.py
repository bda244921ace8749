"""Where elements come from: tensors and their slices, ranges, Python generators, and the
combinations of datasets (zip, concatenate). Components are kept as numpy arrays and each
element's are made tensors when it is produced."""
import numpy as np

from ..core import dtypes
from ..core.errors import InvalidArgumentError
from ..core.shapes import TensorShape
from ..core.strings import is_string_dtype
from ..core.tensor_spec import TensorSpec
from . import structure
from .base import Node, combine_cardinality


class Tensors(Node):
    """from_tensors: the value, once."""

    def __init__(self, value):
        self.tree = structure.Tree.of(value)
        self.components = [structure.to_component(x) for x in self.tree.flatten(value)]
        self.specs = [structure.spec_of(c) for c in self.components]

    def cardinality(self):
        return 1

    def iterate(self):
        yield list(self.components)


class TensorSlices(Node):
    """from_tensor_slices: the value's rows (along the first dim of every component)."""

    def __init__(self, value):
        self.tree = structure.Tree.of(value)
        comps = [structure.to_component(x) for x in self.tree.flatten(value)]
        self.n = structure.check_same_length(comps)
        self.dtypes = [c.dtype for c in comps]
        self.components = comps  # whole tensors: the C++ batch path (fast.py) gathers rows from them
        self.arrays = [np.asarray(structure.numpy_of(c)) for c in comps]
        self.specs = [TensorSpec(TensorShape(list(c.shape)[1:]), c.dtype) for c in comps]

    def cardinality(self):
        return self.n

    def iterate(self):
        arrays, dts = self.arrays, self.dtypes
        for i in range(self.n):
            yield [structure.from_numpy(a[i], d) for a, d in zip(arrays, dts)]


class Range(Node):
    """range(start, stop, step): int64 (or output_type) scalars."""

    def __init__(self, args, output_type):
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid arguments to RangeDataset: {args}")
        args = [_int64(a) for a in args]
        if len(args) == 1:
            args = [0, args[0], 1]
        elif len(args) == 2:
            args = args + [1]
        if args[2] == 0:
            raise InvalidArgumentError("step must be a non-zero integer.")
        self.range = range(*args)
        self.dtype = dtypes.as_dtype(output_type)
        self.tree = structure.Tree.of(None)
        self.specs = [TensorSpec([], self.dtype)]

    def cardinality(self):
        return len(self.range)

    def iterate(self):
        np_dtype = self.dtype.as_numpy_dtype
        for i in self.range:
            yield [structure.from_numpy(np_dtype(i), self.dtype)]


def _int64(a):
    v = a.numpy() if hasattr(a, "numpy") else a
    if not isinstance(v, (int, np.integer)) and not (isinstance(v, np.ndarray) and v.dtype.kind in "iu"):
        raise TypeError(f"Cannot convert {v!r} to EagerTensor of dtype int64")
    return int(v)


def _signature_of(output_signature, output_types, output_shapes):
    """from_generator's element structure and flat specs, from either spelling."""
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError("The `output_types` and `output_shapes` arguments cannot be used together "
                            "with the `output_signature` argument.")
        tree = structure.Tree.of(output_signature)
        specs = tree.flatten(output_signature)
        for s in specs:
            if not isinstance(s, TensorSpec):
                raise TypeError(f"`output_signature` must contain objects that are subclass of "
                                f"`tf.TypeSpec` but found {type(s)} which is not.")
        return tree, specs
    if output_types is None:
        raise TypeError("To specify the output signature you need to provide either the "
                        "`output_signature` argument or the `output_types` argument.")
    tree = structure.Tree.of(output_types)
    types = tree.flatten(output_types)
    if output_shapes is None:
        shapes = [TensorShape(None)] * len(types)
    else:
        shapes = [TensorShape(s) for s in structure.flatten_up_to(tree, output_shapes)]
    return tree, [TensorSpec(s, t) for s, t in zip(shapes, types)]


class Generator(Node):
    """from_generator: calls generator(*args) at each iteration and checks every value it
    yields against the declared signature (TF's errors, raised when the element is pulled)."""

    def __init__(self, generator, tree, specs, args):
        self.generator, self.tree, self.specs, self.args = generator, tree, specs, args

    def iterate(self):
        args = [a.numpy() if hasattr(a, "numpy") else a for a in self.args]
        for value in self.generator(*args):
            yield self._convert(value)

    def _convert(self, value):
        tree = self.tree
        if tree.kind != "leaf" and not (isinstance(value, (tuple, list, dict)) or structure.is_structure(value)):
            raise InvalidArgumentError(f"TypeError: `generator` yielded an element that did not match the expected structure. "
                            f"The expected structure was {tree.outline()}, but the yielded element was {value!r}.")
        try:
            if tree.kind == "tuple" and isinstance(value, list):
                value = tuple(value)
            leaves = tree.flatten(value)
        except (TypeError, KeyError, IndexError, ValueError):
            raise InvalidArgumentError(f"TypeError: `generator` yielded an element that did not match the expected structure. "
                            f"The expected structure was {tree.outline()}, but the yielded element was "
                            f"{value!r}.") from None
        if tree.kind == "tuple" and len(structure.Tree.of(tuple(value)).children) != len(tree.children):
            raise InvalidArgumentError(f"TypeError: `generator` yielded an element that did not match the expected structure. "
                            f"The expected structure was {tree.outline()}, but the yielded element was {value!r}.")
        out = []
        for leaf, spec in zip(leaves, self.specs):
            try:
                if is_string_dtype(spec.dtype):
                    c = structure.to_component(leaf, spec.dtype)
                else:
                    a = np.asarray(leaf.numpy() if hasattr(leaf, "numpy") else leaf)
                    want = spec.dtype.as_numpy_dtype
                    if a.dtype != want and not np.can_cast(a, want, "same_kind") and a.size:
                        raise TypeError
                    c = structure.from_numpy(a.astype(want, copy=False), spec.dtype)
            except (TypeError, ValueError):
                raise InvalidArgumentError(f"TypeError: `generator` yielded an element that could not be converted to the expected "
                                f"type. The expected type was {spec.dtype.name}, but the yielded element was "
                                f"{leaf!r}.") from None
            if not structure.shape_compatible(spec.shape, c.shape):
                raise InvalidArgumentError(
                    f"TypeError: `generator` yielded an element of shape {tuple(c.shape)} where an element of shape "
                    f"{_shape_text(spec.shape)} was expected.")
            out.append(c)
        return out


def _shape_text(shape):
    if shape.rank is None:
        return "<unknown>"
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class Zip(Node):
    def __init__(self, tree, nodes):
        self.tree, self.nodes = tree, nodes
        self.specs = [s for n in nodes for s in n.specs]

    def cardinality(self):
        return combine_cardinality([n.cardinality() for n in self.nodes], "min")

    def iterate(self):
        its = [n.iterate() for n in self.nodes]
        while True:
            out = []
            for it in its:
                try:
                    out.extend(next(it))
                except StopIteration:
                    return
            yield out


class Concatenate(Node):
    def __init__(self, a, b):
        if not a.tree.same(b.tree):
            raise TypeError(f"Incompatible dataset elements:\n  {a.tree.outline()} vs. \n  {b.tree.outline()}")
        for sa, sb in zip(a.specs, b.specs):
            if sa.dtype != sb.dtype:
                raise TypeError(f"Incompatible dataset elements:\n  {sa} vs. \n  {sb}")
        self.a, self.b, self.tree = a, b, a.tree
        self.specs = [TensorSpec(structure.most_specific_compatible(sa.shape, sb.shape), sa.dtype)
                      for sa, sb in zip(a.specs, b.specs)]

    def cardinality(self):
        return combine_cardinality([self.a.cardinality(), self.b.cardinality()], "sum")

    def iterate(self):
        yield from self.a.iterate()
        yield from self.b.iterate()


