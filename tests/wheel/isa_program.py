"""Run inside a wheel's virtualenv by test_wheel.py: the eager ops with instruction-set variants
(kernels/simd/table.h) on fixed float32 and float64 inputs, special values and short tails
included; writes every result and the ISA that ran them to the .npz named by argv[1]."""
import sys

import numpy as np

import jitflow as jf

UNARY = {
    "negative": jf.math.negative, "abs": jf.math.abs, "square": jf.math.square, "relu": jf.nn.relu,
    "exp": jf.math.exp, "log": jf.math.log, "log1p": jf.math.log1p, "tanh": jf.math.tanh,
    "sigmoid": jf.math.sigmoid, "sqrt": jf.math.sqrt, "rsqrt": jf.math.rsqrt, "sin": jf.math.sin,
    "cos": jf.math.cos, "erf": jf.math.erf, "expm1": jf.math.expm1, "reciprocal": jf.math.reciprocal,
}
BINARY = {
    "add": jf.math.add, "subtract": jf.math.subtract, "multiply": jf.math.multiply,
    "divide": jf.math.divide, "maximum": jf.math.maximum, "minimum": jf.math.minimum,
    "squared_difference": jf.math.squared_difference,
}


def inputs(dtype, rng):
    """The same values on every host: drawn with exact arithmetic only (numpy's own exp or
    normal() may round differently per CPU), across the range by exact powers of two."""
    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, info.tiny, -info.tiny,
                        info.tiny / 8, -info.tiny / 8, info.max, -info.max, info.eps, 88.7, -88.7,
                        709.7, -745.0, 1e-30, -1e-30, 20.0, -20.0], np.float64).astype(dtype)
    sign = rng.integers(0, 2, 2000) * 2 - 1
    wide = np.ldexp(rng.uniform(0.5, 1, 2000), rng.integers(-150, 150, 2000)) * sign
    parts = [special, rng.uniform(-1, 1, 4000), rng.uniform(-30, 30, 4000), rng.uniform(-1e4, 1e4, 2000), wide]
    # 12,023 values: not a multiple of any vector width, so every kernel runs a tail.
    with np.errstate(over="ignore"):  # float32 takes the widest as infinities
        return np.concatenate([p.astype(dtype) for p in parts])


def main(out):
    rng = np.random.default_rng(20261126)
    results = {"isa": np.array(jf.config.info()["eager_isa"])}
    for dtype in (np.float32, np.float64):
        x = inputs(dtype, rng)
        y = rng.permutation(x)
        name = np.dtype(dtype).name
        for op, fn in UNARY.items():
            results[f"{op}/{name}"] = fn(jf.constant(x)).numpy()
            results[f"{op}/{name}/short"] = fn(jf.constant(x[:5])).numpy()
        for op, fn in BINARY.items():
            a, b = jf.constant(x), jf.constant(y)
            results[f"{op}/{name}/runs"] = fn(a, b).numpy()
            results[f"{op}/{name}/scalar_right"] = fn(a, jf.constant(y[7])).numpy()
            results[f"{op}/{name}/scalar_left"] = fn(jf.constant(x[3]), b).numpy()
            # A broadcast row: segments where one operand is a run and the other repeats.
            m = x[: 40 * 300].reshape(40, 300)
            results[f"{op}/{name}/rows"] = fn(jf.constant(m), jf.constant(y[:300])).numpy()
    np.savez(out, **results)


if __name__ == "__main__":
    main(sys.argv[1])
