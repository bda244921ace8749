"""tf.nn and tf.linalg composites against float64 numpy (scipy for expm): crelu, local response
normalization, weighted moments, log_poisson_loss, space_to_batch / batch_to_space,
max_pool_with_argmax, atrous convolution, pinv, matrix_rank, cross, logdet, tensor_diag and expm."""
import numpy as np
import scipy.linalg

import jitflow as jf


def test_nn_composites(rng):
    x = rng.normal(size=(2, 4, 4, 5))
    np.testing.assert_array_equal(jf.nn.crelu(x).numpy(), np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], -1))
    sq = np.pad(x ** 2, [(0, 0)] * 3 + [(2, 2)])
    window = sum(sq[..., k:k + 5] for k in range(5))
    np.testing.assert_allclose(jf.nn.local_response_normalization(x, 2, 1.5, 0.3, 0.7).numpy(),
                               x / (1.5 + 0.3 * window) ** 0.7, rtol=1e-10)
    w = rng.uniform(size=x.shape)
    mean, var = jf.nn.weighted_moments(x, [1, 2], w)
    want_mean = (w * x).sum((1, 2)) / w.sum((1, 2))
    np.testing.assert_allclose(mean.numpy(), want_mean, rtol=1e-10)
    np.testing.assert_allclose(var.numpy(), (w * (x - want_mean[:, None, None]) ** 2).sum((1, 2)) / w.sum((1, 2)),
                               rtol=1e-10)
    z, c = np.array([0.0, 1.0, 3.0]), np.array([0.1, -0.2, 0.5])
    np.testing.assert_allclose(jf.nn.log_poisson_loss(z, c, compute_full_loss=True).numpy(),
                               np.exp(c) - z * c + np.where(z > 1, z * np.log(np.maximum(z, 1)) - z
                                                            + 0.5 * np.log(2 * np.pi * np.maximum(z, 1)), 0),
                               rtol=1e-10)


def test_space_to_batch_round_trip(rng):
    x = rng.normal(size=(2, 4, 6, 3))
    s2b = jf.space_to_batch_nd(x, [2, 3], [[0, 0], [0, 0]]).numpy()
    assert s2b.shape == (12, 2, 2, 3)
    # block offset (i, j) of image b lands at batch (i * 3 + j) * 2 + b
    np.testing.assert_array_equal(s2b[(1 * 3 + 2) * 2 + 1], x[1, 1::2, 2::3])
    np.testing.assert_array_equal(jf.batch_to_space(s2b, [2, 3], [[0, 0], [0, 0]]).numpy(), x)
    padded = jf.space_to_batch(x[:, :3], [2, 2], [[1, 0], [0, 0]]).numpy()
    assert padded.shape == (8, 2, 3, 3)
    np.testing.assert_array_equal(jf.batch_to_space(padded, [2, 2], [[1, 0], [0, 0]]).numpy(), x[:, :3])


def test_max_pool_with_argmax_and_atrous(rng):
    x = rng.normal(size=(2, 4, 6, 3)).astype(np.float32)
    pooled, arg = jf.nn.max_pool_with_argmax(x, 2, 2, "VALID", include_batch_in_index=True)
    flat = x.reshape(-1)
    np.testing.assert_array_equal(flat[arg.numpy()], pooled.numpy())
    np.testing.assert_array_equal(pooled.numpy(), x.reshape(2, 2, 2, 3, 2, 3).max((2, 4)))
    x2 = rng.normal(size=(1, 7, 8, 3))
    f = rng.normal(size=(3, 3, 3, 2))
    got = jf.nn.atrous_conv2d(x2, f, 2, "VALID").numpy()
    want = sum(np.einsum("nhwc,co->nhwo", x2[:, 2 * i:2 * i + 3, 2 * j:2 * j + 4], f[i, j])
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_linalg_composites(rng):
    m = rng.normal(size=(3, 4, 2))
    np.testing.assert_allclose(jf.linalg.pinv(m).numpy(), np.linalg.pinv(m), rtol=1e-8, atol=1e-10)
    assert int(jf.linalg.matrix_rank(np.array([[1.0, 2.0], [2.0, 4.0]])).numpy()) == 1
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    np.testing.assert_allclose(jf.linalg.cross(a, b).numpy(), np.cross(a, b), rtol=1e-12)
    spd = m @ np.swapaxes(m, -1, -2) + 3 * np.eye(4)
    np.testing.assert_allclose(jf.linalg.logdet(spd).numpy(), np.linalg.slogdet(spd)[1], rtol=1e-10)
    d = np.arange(6.0).reshape(2, 3)
    full = jf.linalg.tensor_diag(d).numpy()
    assert full.shape == (2, 3, 2, 3) and full[1, 2, 1, 2] == 5.0 and full[0, 1, 1, 2] == 0.0
    np.testing.assert_array_equal(jf.linalg.tensor_diag_part(full).numpy(), d)
    for scale in (0.5, 8.0):
        sq = rng.normal(size=(2, 4, 4)) * scale
        np.testing.assert_allclose(jf.linalg.expm(sq).numpy(), np.stack([scipy.linalg.expm(s) for s in sq]),
                                   rtol=1e-9, atol=1e-9)
