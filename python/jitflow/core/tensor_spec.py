"""jf.TensorSpec: a tensor argument's shape (None for unknown dims) and dtype, as
input_signature entries, get_concrete_function arguments and py_function outputs take them."""
from . import dtypes
from .shapes import TensorShape, dim


class TensorSpec:
    """Describes a tensor argument: shape (None for unknown dims) and dtype."""

    def __init__(self, shape, dtype=None, name=None):
        if shape is not None and not (isinstance(shape, TensorShape) and shape.rank is None):
            shape = [dim(d) for d in ([shape] if isinstance(shape, int) else shape)]
        self.shape = TensorShape(shape)  # TensorShape(None): any rank
        self.dtype = dtypes.as_dtype(dtype if dtype is not None else dtypes.float32)
        self.name = name

    @classmethod
    def from_tensor(cls, t, name=None):
        return cls(t.shape, t.dtype, name)

    def is_compatible_with(self, t):
        if t.dtype != self.dtype:
            return False
        return self.shape.is_compatible_with(t.shape)

    def _for_rank(self, rank):
        """This spec with a known rank (an unknown-rank spec traces once per rank)."""
        return self if self.shape.rank is not None else TensorSpec([None] * rank, self.dtype, self.name)

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape.rank is None, self.shape, self.dtype))

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype=jf.{self.dtype.name}, name={self.name!r})"
