"""keras.constraints: each projection against numpy, and the optimizer applying a weight's
constraint after every update (eagerly, in a traced step and in fit), for the layers that take
constraints; configs carry them."""
import numpy as np
import pytest

import jitflow as jf

constraints = jf.keras.constraints
layers = jf.keras.layers


def test_projections_match_numpy(rng):
    w = rng.normal(size=(4, 3)) * 3
    norms = np.sqrt((w ** 2).sum(0, keepdims=True))
    np.testing.assert_allclose(constraints.MaxNorm(2.0)(w).numpy(), w * np.minimum(norms, 2) / (1e-7 + norms),
                               rtol=1e-12)
    np.testing.assert_allclose(constraints.UnitNorm(axis=1)(w).numpy(),
                               w / (1e-7 + np.sqrt((w ** 2).sum(1, keepdims=True))), rtol=1e-12)
    np.testing.assert_array_equal(constraints.NonNeg()(w).numpy(), np.maximum(w, 0))
    mm = constraints.MinMaxNorm(1.0, 2.0, rate=0.5)(w).numpy()
    desired = 0.5 * np.clip(norms, 1, 2) + 0.5 * norms
    np.testing.assert_allclose(mm, w * desired / (1e-7 + norms), rtol=1e-12)
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm) and constraints.get(None) is None
    again = constraints.get(constraints.serialize(constraints.MaxNorm(3, axis=1)))
    assert again.get_config() == {"max_value": 3, "axis": 1}


@pytest.mark.parametrize("traced", [False, True])
def test_optimizer_projects_after_each_update(traced, rng):
    dense = layers.Dense(3, kernel_constraint=constraints.MaxNorm(0.5), bias_constraint="non_neg")
    x = rng.normal(size=(8, 4)).astype(np.float32)
    dense(x)
    opt = jf.keras.optimizers.SGD(learning_rate=1.0)

    def step(x):
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(jf.square(dense(x) - 10.0))
        opt.apply_gradients(zip(tape.gradient(loss, dense.trainable_weights), dense.trainable_weights))

    run = jf.function(step) if traced else step
    for _ in range(3):
        run(jf.constant(x))
    norms = np.linalg.norm(dense.kernel.numpy(), axis=0)
    assert np.all(norms <= 0.5 + 1e-5) and np.any(norms > 0.4)
    assert np.all(dense.bias.numpy() >= 0)


def test_constraints_in_layers_fit_and_configs(rng):
    model = jf.keras.Sequential([layers.Input((5, 3)),
                                 layers.LSTM(4, kernel_constraint=constraints.UnitNorm(axis=0)),
                                 layers.Dense(1, kernel_constraint=constraints.NonNeg())])
    model.compile(optimizer=jf.keras.optimizers.Adam(0.1), loss="mse")
    model.fit(rng.normal(size=(16, 5, 3)).astype(np.float32), rng.normal(size=(16, 1)).astype(np.float32),
              epochs=2, verbose=0)
    np.testing.assert_allclose(np.linalg.norm(model.layers[0].cell.kernel.numpy(), axis=0), 1.0, rtol=1e-4)
    assert np.all(model.layers[1].kernel.numpy() >= 0)
    config = model.layers[0].get_config()
    assert config["kernel_constraint"]["class_name"] == "UnitNorm"
    clone = layers.LSTM.from_config(config)
    assert isinstance(clone.cell.kernel_constraint, constraints.UnitNorm)
    conv = layers.Conv2D(2, 3, kernel_constraint=constraints.MaxNorm(1.0, axis=[0, 1, 2]))
    conv(rng.normal(size=(1, 5, 5, 2)).astype(np.float32))
    assert conv.kernel.constraint is conv.kernel_constraint
    bn = layers.BatchNormalization(gamma_constraint="non_neg")
    bn(rng.normal(size=(2, 3)).astype(np.float32))
    assert isinstance(bn.gamma.constraint, constraints.NonNeg)
