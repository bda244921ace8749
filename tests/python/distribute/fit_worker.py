"""A worker of the distributed Keras tests: model.fit under a strategy's scope, as TF's
distributed-training guide writes it, on numpy arrays cut into global batches of 16. Each rank
starts from different initial weights (rank r adds r to them: the mirrors must take rank 0's);
with no global seed the shuffling must still agree across ranks. Writes the final weights, the
logged history and evaluate's results.

usage: fit_worker.py OUT_DIR TAG [mirrored2] [shuffle]
  run under mpirun: MultiWorkerMirroredStrategy, one replica per process (run alone: one worker);
  mirrored2: MirroredStrategy over two logical CPUs in this one process."""
import json
import os
import sys

import numpy as np

import jitflow as jf

out_dir, tag = sys.argv[1], sys.argv[2]
flags = set(sys.argv[3:])
if "mirrored2" in flags:
    cpu = jf.config.list_physical_devices("CPU")[0]
    jf.config.set_logical_device_configuration(cpu, [jf.config.LogicalDeviceConfiguration()] * 2)
    strategy = jf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rank = 0
else:
    strategy = jf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id

rng = np.random.default_rng(0)
x = rng.normal(size=(96, 5)).astype(np.float32)
y = (x @ rng.normal(size=(5, 1)) + 0.1 * rng.normal(size=(96, 1))).astype(np.float32)
init = np.random.default_rng(7)
w1, w2 = (init.normal(size=(5, 8)) * 0.5).astype(np.float32), (init.normal(size=(8, 1)) * 0.5).astype(np.float32)
const = jf.keras.initializers.Constant

with strategy.scope():  # the model is built lazily, inside fit
    model = jf.keras.Sequential([
        jf.keras.layers.Dense(8, activation="tanh", kernel_initializer=const(w1 + rank), bias_initializer=const(rank)),
        jf.keras.layers.Dense(1, kernel_initializer=const(w2 + rank), bias_initializer=const(rank))])
    model.compile(optimizer=jf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.5), loss="mse",
                  metrics=["mae"])
runs_before = jf.debugging.stats()["cluster_runs"]
history = model.fit(x, y, batch_size=16, epochs=3, shuffle="shuffle" in flags, verbose=0)
evaluated = model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)

np.savez(os.path.join(out_dir, f"{tag}_{rank}.npz"), *[v.numpy() for v in model.trainable_variables])
with open(os.path.join(out_dir, f"{tag}_{rank}.json"), "w") as f:
    json.dump({"history": history.history, "evaluate": evaluated, "replicas": strategy.num_replicas_in_sync,
               "jit_compile": model.jit_compile, "cluster_runs": jf.debugging.stats()["cluster_runs"] - runs_before}, f)
