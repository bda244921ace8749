"""jitflow: TensorFlow-style eager tensors on Eigen, traced functions and LLVM-compiled
jit_scope clusters. `import jitflow as jf`, then use it like `tf`."""
from . import (
    _C,
    autodiff,
    config,
    debugging,
    errors,
    experimental,
    nn,
    optimizers,
    random,
    xla,
)
from . import ops as math
from . import tensor as _tensor
from ._C import Tensor, from_dlpack, init_scope, jit_scope, name_scope
from .autodiff import GradientTape, gradients
from .autodiff import register_gradient as RegisterGradient
from .control_flow import cond, control_dependencies, while_loop
from .device import device
from .dtypes import DType, as_dtype, bool, float32, float64, int32, int64
from .explain import explain
from .function import TensorSpec, function
from .ops import (
    abs,
    add,
    add_n,
    argmax,
    argmin,
    broadcast_to,
    cast,
    concat,
    constant,
    convert_to_tensor,
    cos,
    divide,
    equal,
    erf,
    exp,
    expand_dims,
    fill,
    floordiv,
    floormod,
    greater,
    greater_equal,
    identity,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    maximum,
    minimum,
    multiply,
    negative,
    newaxis,
    not_equal,
    ones,
    ones_like,
    pow,
    range,
    rank,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    reshape,
    rsqrt,
    shape,
    sigmoid,
    sin,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    strided_slice,
    subtract,
    tanh,
    transpose,
    truediv,
    where,
    zeros,
    zeros_like,
)
from .printing import print
from .variables import Variable

__version__ = "0.1.0"
