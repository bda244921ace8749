"""The pieces every dataset is made of: a Node is one step of an input pipeline (a source or a
transformation of its inputs), which knows its element structure (a Tree and the specs of its
flat components), its cardinality and how to start an iteration (a Python iterator of flat
component lists). jf.data.Dataset (dataset.py) wraps a Node and builds new ones.

Iteration is pull-based and eager, as TF's: each `iter()` starts every node of the pipeline
afresh, so a dataset can be iterated many times (shuffle reshuffles, cache replays)."""
from ..core.shapes import TensorShape
from ..core.tensor_spec import TensorSpec

INFINITE = -1  # TF's tf.data.INFINITE_CARDINALITY
UNKNOWN = -2  # TF's tf.data.UNKNOWN_CARDINALITY
AUTOTUNE = -1  # TF's tf.data.AUTOTUNE


class Node:
    """One step of a pipeline. Subclasses set `tree` and `specs` and implement iterate()."""

    tree = None
    specs = ()

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        """A fresh iterator of elements, each a list of components (flat, in specs order)."""
        raise NotImplementedError


class DatasetSpec:
    """The spec of a dataset-valued component (a window's element): TF's tf.data.DatasetSpec."""

    def __init__(self, element_spec, dataset_shape=()):
        self.element_spec = element_spec
        self.shape = TensorShape(dataset_shape)
        self.dtype = None

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and self.element_spec == other.element_spec

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return f"DatasetSpec({self.element_spec!r}, TensorShape({list(self.shape)}))"


def is_tensor_spec(s):
    return isinstance(s, TensorSpec)


def combine_cardinality(values, op):
    """The cardinality of zip (op=min) or concatenate (op=sum) from their inputs'."""
    if op == "min":
        finite = [v for v in values if v >= 0]
        if finite:
            m = min(finite)
            if UNKNOWN in values and m > 0:
                return UNKNOWN
            return m
        return UNKNOWN if UNKNOWN in values else INFINITE
    if INFINITE in values:
        return INFINITE
    if UNKNOWN in values:
        return UNKNOWN
    return sum(values)
