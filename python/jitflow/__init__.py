"""jitflow: TensorFlow-style eager tensors on Eigen, traced functions and LLVM-compiled
jit_scope clusters. `import jitflow as jf`, then use it like `tf`."""
from . import _C
from ._C import Tensor, from_dlpack
from .dtypes import DType, as_dtype, float32, float64, int32, int64, bool  # noqa: A004
from . import errors, tensor as _tensor  # noqa: F401  (attaches Tensor methods)
from .ops import (  # noqa: F401
    constant, convert_to_tensor, identity, fill, zeros, ones, zeros_like, ones_like, range,
    negative, abs, square, exp, log, tanh, sigmoid, sqrt, rsqrt, sin, cos, erf, logical_not,
    add, subtract, multiply, divide, truediv, maximum, minimum, pow, floordiv, floormod,
    equal, not_equal, less, less_equal, greater, greater_equal, logical_and, logical_or,
    add_n, cast, where, matmul, reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod,
    argmax, argmin, reshape, transpose, concat, stack, split, squeeze, expand_dims,
    broadcast_to, shape, rank, strided_slice, newaxis,
)
from . import ops as math  # noqa: F401  (tf.math.* names)
from . import nn, random, debugging, config  # noqa: F401
from .variables import Variable  # noqa: F401
from .function import function, TensorSpec  # noqa: F401
from .control_flow import cond, while_loop, control_dependencies  # noqa: F401
from .printing import print  # noqa: F401,A004
from ._C import jit_scope, name_scope, init_scope  # noqa: F401
from . import xla  # noqa: F401
from .explain import explain  # noqa: F401
from .device import device  # noqa: F401
from . import experimental  # noqa: F401

__version__ = "0.1.0"
