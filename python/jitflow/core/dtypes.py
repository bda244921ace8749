"""Element types: jf.float32, float64, int32, int64, bool (TF's names)."""
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
    return _as_dtype(type_value)


# TF's spellings: repr(tf.float32) is "tf.float32", str(tf.float32) is "<dtype: 'float32'>".
DType.__repr__ = lambda self: f"jf.{self.name}"
DType.__str__ = lambda self: f"<dtype: '{self.name}'>"

float32 = DType.float32
float64 = DType.float64
int32 = DType.int32
int64 = DType.int64
bool = DType.bool

__all__ = ["DType", "as_dtype", "bool", "float32", "float64", "int32", "int64"]
