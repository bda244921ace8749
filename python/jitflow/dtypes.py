"""Element types: jf.float32, float64, int32, int64, bool (TF's names)."""
from ._C import DType, as_dtype

float32 = DType.float32
float64 = DType.float64
int32 = DType.int32
int64 = DType.int64
bool = DType.bool

__all__ = ["DType", "as_dtype", "bool", "float32", "float64", "int32", "int64"]
