"""Element structures of jf.data: tf.data's nesting rules (tuples, namedtuples and mappings are
structure, a list is one tensor), the conversion of a value into components (jf.Tensor, or a
StringTensor for strings), and the TensorSpecs that describe them.

Datasets pass elements between each other as flat lists of components; the structure (a Tree)
packs them into the user's tuples and dicts only at the edges (iteration, user functions)."""
import collections.abc

import numpy as np

from .. import _C
from ..core import dtypes
from ..core.errors import InvalidArgumentError
from ..core.shapes import TensorShape
from ..core.strings import StringTensor, is_string_dtype, is_string_value, string
from ..core.strings import constant as string_constant
from ..core.tensor_spec import TensorSpec
from ..ops import basic_ops


def is_structure(x):
    """A container tf.data descends into: tuples (namedtuples too) and mappings; a list is a
    value (TF converts it to one tensor)."""
    return isinstance(x, (tuple, collections.abc.Mapping)) and not isinstance(x, TensorShape)


def _keys(m):
    return sorted(m)


class Tree:
    """The shape of a nested element: `flatten` gives its leaves in TF's order (mapping values
    by sorted key), `pack` rebuilds it from a flat list."""

    __slots__ = ("children", "kind", "meta")

    def __init__(self, kind, children=(), meta=None):
        self.kind, self.children, self.meta = kind, tuple(children), meta

    @classmethod
    def of(cls, value):
        if isinstance(value, tuple) and not isinstance(value, TensorShape):
            return cls("tuple", [cls.of(v) for v in value], type(value))
        if isinstance(value, collections.abc.Mapping):
            keys = _keys(value)
            return cls("dict", [cls.of(value[k]) for k in keys], (type(value), keys, list(value)))
        return _LEAF

    @property
    def num_leaves(self):
        return 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)

    def flatten(self, value, out=None):
        """The leaves of value, which must have this structure."""
        out = [] if out is None else out
        if self.kind == "leaf":
            out.append(value)
        elif self.kind == "tuple":
            for c, v in zip(self.children, value):
                c.flatten(v, out)
        else:
            for c, k in zip(self.children, self.meta[1]):
                c.flatten(value[k], out)
        return out

    def pack(self, flat):
        it = iter(flat)
        return self._pack(it)

    def _pack(self, it):
        if self.kind == "leaf":
            return next(it)
        if self.kind == "tuple":
            vals = [c._pack(it) for c in self.children]
            t = self.meta
            if t is tuple:
                return tuple(vals)
            if hasattr(t, "_fields"):
                return t(*vals)
            return t(vals)
        typ, keys, order = self.meta
        by_key = {k: c._pack(it) for c, k in zip(self.children, keys)}
        ordered = [(k, by_key[k]) for k in order]
        try:
            return typ(ordered)
        except TypeError:
            return dict(ordered)

    def same(self, other):
        if self.kind != other.kind or len(self.children) != len(other.children):
            return False
        if self.kind == "dict" and self.meta[1] != other.meta[1]:
            return False
        return all(a.same(b) for a, b in zip(self.children, other.children))

    def outline(self):
        """The structure with '.' leaves, for error messages."""
        return repr(self.pack(["."] * self.num_leaves)).replace("'.'", ".")


_LEAF = Tree("leaf")


def to_component(x, dtype=None):
    """One leaf of an element as a component: a jf.Tensor, or a StringTensor for strings."""
    if isinstance(x, StringTensor):
        return x
    if isinstance(x, _C.Tensor):
        return x if dtype is None or x.dtype == dtype else basic_ops.cast(x, dtype)
    if hasattr(x, "__jf_tensor__"):  # a variable: its value now
        return to_component(x.__jf_tensor__(), dtype)
    if is_string_dtype(dtype) or (dtype is None and is_string_value(x)):
        return string_constant(x)
    if isinstance(x, Dataset_like):  # a dataset-valued component (a window's, or a map's result)
        return x
    return basic_ops.convert_to_tensor(x, dtype=dtype)


Dataset_like = ()  # set by dataset.py: the Dataset class (a value of a window's element)


def spec_of(component):
    """The TensorSpec (or DatasetSpec) of one component."""
    if isinstance(component, Dataset_like):
        return component._spec()
    return TensorSpec(TensorShape(list(component.shape)), component.dtype)


def numpy_of(component):
    if isinstance(component, StringTensor):
        return component.numpy()
    return component.numpy()


def from_numpy(a, dtype):
    """A numpy value as a component of dtype: an eager tensor wherever it is called (also
    while a function is traced: pipelines produce values, never graph nodes)."""
    if dtype is string:  # specs hold jf.string itself (dtypes.as_dtype)
        a = np.asarray(a, dtype=object)
        t = object.__new__(StringTensor)
        a = a.view()
        a.flags.writeable = False
        t._value, t._c = a, None
        return t
    return _C.convert_to_tensor(a, dtype)


def dtype_name(dt):
    return getattr(dt, "name", str(dt))


def spec_text(spec):
    shape = "(" + ", ".join("None" if d is None else str(d) for d in spec.shape) + \
            ("," if len(spec.shape) == 1 else "") + ")"
    return f"TensorSpec(shape={shape}, dtype=tf.{dtype_name(spec.dtype)}, name=None)"


def most_specific_compatible(a, b):
    """The shape that describes both a and b (dims that differ become None)."""
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a, b)])


def shape_compatible(spec_shape, shape):
    if spec_shape.rank is None:
        return True
    return len(spec_shape) == len(shape) and all(d is None or d == s for d, s in zip(spec_shape, shape))


def batched_shape(shape, n):
    if shape.rank is None:
        return TensorShape(None)
    return TensorShape([n] + list(shape))


def check_same_length(components):
    """from_tensor_slices: every component's first dim is the same (TF's error otherwise)."""
    sizes = []
    for c in components:
        if len(c.shape) == 0:
            raise ValueError(f"Unbatching a tensor is only supported for rank >= 1, got {spec_text(spec_of(c))}")
        sizes.append(c.shape[0])
    for s in sizes[1:]:
        if s != sizes[0]:
            raise InvalidArgumentError(f"Dimensions {sizes[0]} and {s} are not compatible")
    return sizes[0] if sizes else 0


def as_dtype(d):
    return dtypes.as_dtype(d)


def flatten_up_to(tree, value):
    """value's parts at the leaves of tree, whatever lies below them (a leaf may be a shape,
    itself a list or tuple of dims)."""
    if tree.kind == "leaf":
        return [value]
    out = []
    if tree.kind == "tuple":
        if len(value) != len(tree.children):
            raise ValueError(f"The two structures don't have the same sequence length. Input structure has "
                             f"length {len(value)}, while shallow structure has length {len(tree.children)}.")
        for c, v in zip(tree.children, value):
            out.extend(flatten_up_to(c, v))
    else:
        for c, k in zip(tree.children, tree.meta[1]):
            out.extend(flatten_up_to(c, value[k]))
    return out
