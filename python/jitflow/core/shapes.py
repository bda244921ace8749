"""jf.TensorShape (TF's tf.TensorShape), the type of Tensor.shape: a tuple of ints and None
(unknown) dims, so it still compares equal to tuples and lists, indexes and unpacks."""
import operator

from .export import export


@export("TensorShape")
class TensorShape(tuple):
    """A (possibly partially known) shape. As TF's, `bool(shape)` says whether the rank is
    known (True for a scalar's shape too), not whether there are dims."""

    _known = True  # the rank is known (an instance attribute only for TensorShape(None))
    __jf_nest_atom__ = True  # one value to jf.nest and jf.function, as TF's TensorShape

    def __new__(cls, dims=None):
        if dims is None:
            s = super().__new__(cls, ())
            s._known = False
            return s
        if isinstance(dims, TensorShape) and not dims._known:
            return cls(None)
        if isinstance(dims, int) or hasattr(dims, "__index__"):
            dims = [dims]
        return super().__new__(cls, (None if d is None else operator.index(getattr(d, "value", d))
                                     for d in dims))

    @property
    def rank(self):
        return len(self) if self._known else None

    ndims = rank

    def __bool__(self):
        return self._known

    @property
    def dims(self):
        return list(self) if self._known else None

    def as_list(self):
        if not self._known:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self)

    def is_fully_defined(self):
        return self._known and None not in self

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if not self._known or not other._known:
            return True
        return len(self) == len(other) and all(a is None or b is None or a == b
                                               for a, b in zip(self, other))

    def merge_with(self, other):
        other = as_shape(other)
        if not self._known:
            return other
        if not other._known:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self, other)])

    def with_rank(self, rank):
        """This shape with its rank known to be `rank`; TF's ValueError if it is another."""
        try:
            return self.merge_with(TensorShape([None] * rank))
        except ValueError:
            raise ValueError(f"Shape {self} must have rank {rank}") from None

    def with_rank_at_least(self, rank):
        if self._known and len(self) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank):
        if self._known and len(self) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def assert_has_rank(self, rank):
        if self._known and len(self) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other):
        other = as_shape(other)
        if self._known and other._known and len(self) != len(other):
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_is_fully_defined(self):
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def most_specific_compatible_shape(self, other):
        """The most specific shape compatible with both: dims they agree on, None elsewhere."""
        other = as_shape(other)
        if not self._known or not other._known or len(self) != len(other):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self, other)])

    def concatenate(self, other):
        other = as_shape(other)
        if not self._known or not other._known:
            return TensorShape(None)
        return TensorShape(tuple(self) + tuple(other))

    __add__ = concatenate

    def __radd__(self, other):
        return as_shape(other).concatenate(self)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(None) if not self._known else TensorShape(tuple.__getitem__(self, key))
        if not self._known:
            return None
        return tuple.__getitem__(self, key)

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        if not self._known or not other._known:
            return self._known == other._known
        return tuple(self) == tuple(other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def __repr__(self):
        return f"TensorShape({list(self)})" if self._known else "TensorShape(None)"

    def __str__(self):
        if not self._known:
            return "<unknown>"
        return tuple.__repr__(tuple(self))

    def __reduce__(self):
        return TensorShape, (list(self) if self._known else None,)


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def dim(d):
    """One dim of a TensorSpec or shape invariant, TF's TensorShape rules: None, or an integer
    >= 0 (int(2.5) was 2, -5 was taken as an unknown dim)."""
    if d is None:
        return None
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"Dimension value must be integer or None or have an __index__ method, got value "
                        f"{d!r} with type {type(d)!r}") from None
    if d < 0:
        raise ValueError(f"Dimension {d} must be >= 0")
    if d >= 2**63:
        raise ValueError(f"Dimension {d} does not fit in int64")
    return d
