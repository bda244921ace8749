"""Element types with TF's names and DType properties: floats (float16, bfloat16, float32,
float64), signed and unsigned integers of 8 to 64 bits, complex64/128, bool and string."""
import numpy as _np

from .._C import DType
from .._C import as_dtype as _as_dtype
from .strings import is_string_dtype, string


def as_dtype(type_value):
    """TF's tf.as_dtype; "string", bytes, str and jf.string give jf.string (core/strings.py).
    Every op that takes a dtype reads it here, so `dtype=None` where a dtype is required is
    TF's TypeError, not numpy's reading of None as float64."""
    if type_value is None:
        raise TypeError("Cannot convert the argument `type_value`: None to a TensorFlow DType.")
    if is_string_dtype(type_value):
        return string
    if isinstance(type_value, str) and type_value == "bfloat16":  # numpy knows no such name
        return bfloat16
    return _as_dtype(type_value)


def _limit(self, which):
    # TF's DType.min/max: numpy scalars of the dtype for floats (ml_dtypes' finfo for
    # bfloat16), Python ints for integers, TypeError for bool, complex and string.
    if self.is_floating:
        if self == bfloat16:
            import ml_dtypes
            info = ml_dtypes.finfo(ml_dtypes.bfloat16)
        else:
            info = _np.finfo(self.as_numpy_dtype)
        return getattr(info, which)
    if self.is_integer:
        return int(getattr(_np.iinfo(self.as_numpy_dtype), which))
    word = "minimum" if which == "min" else "maximum"
    raise TypeError(f"Cannot find {word} value of {self} with type {self}.")


DType.min = property(lambda self: _limit(self, "min"))
DType.max = property(lambda self: _limit(self, "max"))
DType.base_dtype = property(lambda self: self)


# TF's spellings: repr(tf.float32) is "tf.float32", str(tf.float32) is "<dtype: 'float32'>".
DType.__repr__ = lambda self: f"jf.{self.name}"
DType.__str__ = lambda self: f"<dtype: '{self.name}'>"

float32 = DType.float32
float64 = DType.float64
int32 = DType.int32
int64 = DType.int64
bool = DType.bool
float16 = DType.float16
half = float16
bfloat16 = DType.bfloat16
int8 = DType.int8
uint8 = DType.uint8
int16 = DType.int16
uint16 = DType.uint16
uint32 = DType.uint32
uint64 = DType.uint64
complex64 = DType.complex64
complex128 = DType.complex128
double = float64

__all__ = ["DType", "as_dtype", "bfloat16", "bool", "complex64", "complex128", "double", "float16",
           "float32", "float64", "half", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64"]
