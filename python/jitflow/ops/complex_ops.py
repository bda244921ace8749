"""Complex numbers: tf.complex, tf.math.real/imag/conj/angle, and tf.abs, which takes a
complex value's modulus. As in TF, the part functions pass real inputs through (real, conj),
or answer for them (imag: zeros, angle: pi where negative)."""
from .. import _C
from .._C import Tensor
from ..core import dtypes as _dt
from ..core.export import export
from .dispatch import OP, run, to_tensor


def _tensor(x):
    return x if isinstance(x, Tensor) else to_tensor(x)


@export("complex", "dtypes.complex")
def complex(real, imag, name=None):
    """real + imag * 1j: two float32 tensors give complex64, two float64 complex128 (TF's
    TypeError for any other pair), broadcast against each other."""
    re, im = _tensor(real), _tensor(imag)
    if re.dtype != im.dtype or re.dtype not in (_dt.float32, _dt.float64):
        raise TypeError(f"The `real` and `imag` components have incorrect types: {re.dtype.name} "
                        f"{im.dtype.name}. They must be consistent, and one of [tf.float32, tf.float64]")
    return run(OP["Complex"], (re, im), None, name)


@export("math.real")
def real(input, name=None):
    """The real part of a complex tensor; any other tensor as it is."""
    x = _tensor(input)
    return run(OP["Real"], (x,), None, name) if x.dtype.is_complex else x


@export("math.imag")
def imag(input, name=None):
    """The imaginary part of a complex tensor; zeros of a real tensor's dtype and shape."""
    x = _tensor(input)
    if x.dtype.is_complex:
        return run(OP["Imag"], (x,), None, name)
    return run(OP["ZerosLike"], (x,), None, name)


@export("math.conj")
def conj(x, name=None):
    """The complex conjugate; a real or integer tensor as it is (TF's TypeError for others)."""
    t = _tensor(x)
    if t.dtype.is_complex:
        return run(OP["Conj"], (t,), None, name)
    if t.dtype.is_floating or t.dtype.is_integer:
        return t
    raise TypeError(f"Expected numeric or variant tensor, got dtype {t.dtype!r}.")


@export("math.angle")
def angle(input, name=None):
    """The argument atan2(imag, real) of a complex tensor; of a real one pi where it is
    negative and 0 elsewhere (NaN and -0 included), as TF."""
    x = _tensor(input)
    if x.dtype.is_complex:
        return run(OP["Angle"], (x,), None, name)
    negative = run(OP["Less"], (x, _C.convert_to_tensor(0, x.dtype)), None, None)
    pi = run(OP["Fill"], (run(OP["Shape"], (x,), None, None), _C.convert_to_tensor(3.141592653589793, x.dtype)),
             None, None)
    return run(OP["SelectV2"], (negative, pi, run(OP["ZerosLike"], (x,), None, None)), None, name)


@export("abs", "math.abs")
def abs(x, name=None):
    """|x|: a complex value's modulus (float32 for complex64, float64 for complex128); a ragged
    or sparse tensor's values' (TF's dispatch)."""
    handler = getattr(type(x), "__jf_elementwise__", None)
    if handler is not None:
        return handler(x, abs, "Abs", None, False)
    t = _tensor(x)
    if t.dtype.is_complex:
        return run(OP["ComplexAbs"], (t,), None, name)
    return run(OP["Abs"], (t,), None, name)

