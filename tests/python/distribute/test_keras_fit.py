"""Keras's model.fit and evaluate under a strategy's scope: two MPI workers
(MultiWorkerMirroredStrategy under mpirun -np 2) and two logical CPUs in one process
(MirroredStrategy) train on global batches split between their replicas and end with the same
weights, history and evaluation as full-batch training computed in float64 numpy; without a
global seed, two workers still shuffle alike and end equal."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

WORKER = os.path.join(os.path.dirname(__file__), "fit_worker.py")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
EPOCHS, BATCH, LR, MOMENTUM = 3, 16, 0.05, 0.5


def _run(cmd, timeout=120):
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _reference():
    """fit_worker.py's data and rank 0's initial weights, trained in float64: SGD with momentum
    (Keras's v = m v - lr g; w += v) on the mean squared error of each batch of 16, in order."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 5)).astype(np.float32).astype(np.float64)
    y = (x @ rng.normal(size=(5, 1)) + 0.1 * rng.normal(size=(96, 1))).astype(np.float32).astype(np.float64)
    init = np.random.default_rng(7)
    w1 = (init.normal(size=(5, 8)) * 0.5).astype(np.float32).astype(np.float64)
    w2 = (init.normal(size=(8, 1)) * 0.5).astype(np.float32).astype(np.float64)
    params = [w1, np.zeros(8), w2, np.zeros(1)]
    velocity = [np.zeros_like(p) for p in params]
    history = {"loss": [], "mae": []}

    def forward(p, xb):
        h = np.tanh(xb @ p[0] + p[1])
        return h, h @ p[2] + p[3]

    for _ in range(EPOCHS):
        sq, ab = [], []
        for i in range(0, len(x), BATCH):
            xb, yb = x[i:i + BATCH], y[i:i + BATCH]
            h, pred = forward(params, xb)
            err = pred - yb
            sq.append(err ** 2)
            ab.append(np.abs(err))
            d = 2 * err / len(xb)
            dh = (d @ params[2].T) * (1 - h ** 2)
            grads = [xb.T @ dh, dh.sum(0), h.T @ d, d.sum(0)]
            for k, g in enumerate(grads):
                velocity[k] = MOMENTUM * velocity[k] - LR * g
                params[k] = params[k] + velocity[k]
        history["loss"].append(np.concatenate(sq).mean())
        history["mae"].append(np.concatenate(ab).mean())
    err = forward(params, x)[1] - y
    return params, history, {"loss": np.mean(err ** 2), "mae": np.mean(np.abs(err))}


def _check(out_dir, tag, rank, replicas):
    want, want_history, want_eval = _reference()
    got = np.load(out_dir / f"{tag}_{rank}.npz")
    res = json.loads((out_dir / f"{tag}_{rank}.json").read_text())
    assert res["replicas"] == replicas
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[f"arr_{k}"], w, rtol=1e-4, atol=1e-5, err_msg=f"{tag} rank {rank} weight {k}")
    for name in ("loss", "mae"):  # logged over the global batch, not this worker's half
        np.testing.assert_allclose(res["history"][name], want_history[name], rtol=1e-4, err_msg=name)
        np.testing.assert_allclose(res["evaluate"][name], want_eval[name], rtol=1e-4, err_msg=name)
    return got, res


def test_fit_on_two_mpi_workers_matches_full_batch_training(tmp_path):
    _run(["mpirun", "-np", "2", "--oversubscribe", sys.executable, WORKER, str(tmp_path), "two"])
    got0, res0 = _check(tmp_path, "two", 0, 2)
    got1, _ = _check(tmp_path, "two", 1, 2)
    for name in got0.files:  # the mirrors are the same bits on both workers
        np.testing.assert_array_equal(got0[name], got1[name])
    # the all-reduce is not compiled, so jit_compile='auto' settled on a traced, uncompiled step
    assert res0["jit_compile"] is False


def test_fit_alone_is_the_same_training(tmp_path):
    # one process under MultiWorkerMirroredStrategy (one worker): the reference's own setting
    _run([sys.executable, WORKER, str(tmp_path), "one"])
    _check(tmp_path, "one", 0, 1)


def test_fit_on_two_logical_cpus_matches_full_batch_training(tmp_path):
    _run([sys.executable, WORKER, str(tmp_path), "mirrored", "mirrored2"])
    _, res = _check(tmp_path, "mirrored", 0, 2)
    # both replicas are traced into one step, whose all-reduce is arithmetic: it compiles whole
    assert res["jit_compile"] is True
    assert res["cluster_runs"] >= EPOCHS * 96 // BATCH, res


@pytest.mark.parametrize("workers", [2])
def test_unseeded_shuffling_agrees_across_workers(tmp_path, workers):
    _run(["mpirun", "-np", str(workers), "--oversubscribe", sys.executable, WORKER, str(tmp_path), "shuf", "shuffle"])
    got = [np.load(tmp_path / f"shuf_{r}.npz") for r in range(workers)]
    for name in got[0].files:
        np.testing.assert_array_equal(got[0][name], got[1][name])
    losses = json.loads((tmp_path / "shuf_0.json").read_text())["history"]["loss"]
    assert losses[-1] < losses[0] / 4
