"""Transposes whose output's last dim strides through the input run as tiled matrix
transposes (kernels/shape_ops.cc): checked against numpy for every element size, sizes that
are not multiples of the tile, batch dims, and a reversed axis on top of the transpose."""
import ml_dtypes  # noqa: F401 (numpy's "bfloat16")
import numpy as np
import pytest

import jitflow as jf


@pytest.mark.parametrize("dtype", ["uint8", "float16", "bfloat16", "float32", "int64", "complex128"])
@pytest.mark.parametrize("shape,perm", [((33, 65), (1, 0)), ((1, 70), (1, 0)), ((70, 1), (1, 0)),
                                        ((3, 40, 31), (0, 2, 1)), ((2, 3, 35, 33), (1, 0, 3, 2)),
                                        ((4, 33, 5), (2, 1, 0)), ((0, 40), (1, 0))])
def test_tiled_transposes_match_numpy(dtype, shape, perm, rng):
    a = (rng.standard_normal(shape) * 50).astype(dtype)
    if dtype == "complex128":
        a = a + 1j * a[..., ::-1]
    got = jf.transpose(jf.constant(a), perm)
    np.testing.assert_array_equal(got.numpy(), a.transpose(perm))
    flipped = jf.reverse(got, [-1])  # a reversed axis on the transposed value
    np.testing.assert_array_equal(flipped.numpy(), a.transpose(perm)[..., ::-1])


def test_tiled_transpose_of_a_slice(rng):
    a = rng.standard_normal((50, 70)).astype(np.float32)
    v = jf.constant(a)[3:47, ::3]
    np.testing.assert_array_equal(jf.transpose(v).numpy(), a[3:47, ::3].T)
