"""A worker of the distributed tests, started by mpirun (or alone): trains a small MLP with
MultiWorkerMirroredStrategy on a global batch split across the workers and writes the weights.

usage: mlp_worker.py MODE STEPS OUT_DIR
MODE: eager; function (the step traced); jit (the gradients in a jit_compile=True function, the
all-reduce between its runs); jit_scope (the step traced, the gradients in a jit_scope: compiled
clusters around the all-reduce node); raise (rank 1 raises at step 2), raise_traced (the same,
the peer waiting inside a traced step); stall (rank 1 hangs at step 2); mismatch (rank 1 builds
a wider layer)."""
import json
import os
import sys
import time
import warnings

import numpy as np

import jitflow as jf

mode, steps, out_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
GLOBAL_BATCH, IN, HIDDEN = 8, 3, 4

# jit_scope mode packs at most 40 bytes per all-reduce: w1's gradient (48 bytes) goes alone,
# b1's and w2's (16 bytes each) share one bucket; otherwise all three share one.
strategy = jf.distribute.MultiWorkerMirroredStrategy(
    communication_options=jf.distribute.experimental.CommunicationOptions(
        timeout_seconds=2 if mode == "stall" else 20, bytes_per_pack=40 if mode == "jit_scope" else 0))
rank = strategy.cluster_resolver.task_id

data = np.random.default_rng(0)
x_all = data.normal(size=(GLOBAL_BATCH * steps, IN)).astype(np.float32)
y_all = data.normal(size=(GLOBAL_BATCH * steps, 1)).astype(np.float32)
dataset = jf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(GLOBAL_BATCH)
dist_dataset = strategy.experimental_distribute_dataset(dataset)

with strategy.scope():
    # Each rank draws different initial values: the mirror must take rank 0's.
    init = np.random.default_rng(100 + rank)
    hidden = HIDDEN + 1 if mode == "mismatch" and rank == 1 else HIDDEN
    w1 = jf.Variable(init.normal(size=(IN, hidden)).astype(np.float32) * 0.5, name="w1")
    b1 = jf.Variable(np.zeros(hidden, np.float32), name="b1")
    w2 = jf.Variable(init.normal(size=(hidden, 1)).astype(np.float32) * 0.5, name="w2")
    optimizer = jf.optimizers.SGD(learning_rate=0.1)
variables = [w1, b1, w2]


def loss_and_grads(x, y):
    with jf.GradientTape() as tape:
        pred = jf.matmul(jf.tanh(jf.matmul(x, w1) + b1), w2)
        per_example = jf.reduce_sum(jf.square(pred - y), axis=1)
        loss = jf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
    return loss, tape.gradient(loss, variables)


if mode == "jit_scope":
    plain_loss_and_grads = loss_and_grads

    def loss_and_grads(x, y):
        with jf.jit_scope():
            return plain_loss_and_grads(x, y)


compiled_grads = jf.function(loss_and_grads, jit_compile=True)


def replica_step(x, y):
    loss, grads = (compiled_grads if mode == "jit" else loss_and_grads)(x, y)
    optimizer.apply_gradients(zip(grads, variables))
    return loss


def step(x, y):
    per_replica = strategy.run(replica_step, args=(x, y))
    return strategy.reduce(jf.distribute.ReduceOp.SUM, per_replica, axis=None)


if mode in ("function", "jit_scope", "raise_traced"):
    step = jf.function(step)

before = jf.debugging.stats()["cluster_runs"]
calls_before = jf.distribute.collective.world().allreduce_calls
losses = []
for i, (x, y) in enumerate(dist_dataset):
    if mode in ("raise", "raise_traced") and rank == 1 and i == 2:
        raise RuntimeError("worker 1 breaks on purpose")
    if mode == "stall" and rank == 1 and i == 2:
        time.sleep(30)  # hangs without a word: its peer's deadline (2 s) must end the wait
    losses.append(float(step(x, y)))
    assert x.shape[0] == GLOBAL_BATCH // strategy.num_replicas_in_sync, x.shape

ckpt = jf.train.Checkpoint(w1=w1, b1=b1, w2=w2)
path = ckpt.save(os.path.join(out_dir, "ckpt"))
result = {"rank": rank, "replicas": strategy.num_replicas_in_sync, "losses": losses, "ckpt": path,
          "cluster_runs": jf.debugging.stats()["cluster_runs"] - before,
          "allreduce_calls": jf.distribute.collective.world().allreduce_calls - calls_before,
          "files": sorted(os.listdir(out_dir))}
if mode == "function":  # a graph holding the all-reduce names this process's communicator: not saveable
    module = jf.Module()
    module.step, module.variables_used = step, [w1, b1, w2]
    try:
        jf.saved_model.save(module, os.path.join(out_dir, f"saved_{rank}"))
        result["save_error"] = None
    except ValueError as e:
        result["save_error"] = str(e)
if mode in ("function", "jit_scope"):  # the all-reduce is an op of the graph, run eagerly between clusters
    result["explain"] = [[r.op, r.type, r.status, r.reason] for r in jf.explain(step, x, y)
                         if r.type == "CollectiveAllReduce"]
if mode == "eager":  # every worker's rows, in rank order (rank 1 gives two)
    result["gathered"] = strategy.gather(jf.fill([1 + rank, 2], float(rank)), axis=0).numpy().tolist()
if mode == "eager":  # an update outside run() is not summed across workers: warned about
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jf.optimizers.SGD(0.1).apply_gradients([(jf.constant(1.0), jf.Variable(0.0))])
    result["outside_run_warnings"] = [str(w.message) for w in caught]
if mode == "jit":
    # An all-reduce inside a jit_compile=True function cannot be compiled with it; TF 2.21 also
    # refuses one (InvalidArgumentError when its XLA cluster runs), here at trace time.
    @jf.function(jit_compile=True)
    def reduce_inside(x):
        return strategy.run(lambda x: jf.distribute.get_replica_context().all_reduce("SUM", x), args=(x,))

    try:
        reduce_inside(jf.constant([1.0]))
        result["jit_error"] = None
    except jf.errors.InvalidArgumentError as e:
        result["jit_error"] = str(e)
np.savez(os.path.join(out_dir, f"weights_{rank}.npz"), w1=w1.numpy(), b1=b1.numpy(), w2=w2.numpy())
with open(os.path.join(out_dir, f"result_{rank}.json"), "w") as f:
    json.dump(result, f)
