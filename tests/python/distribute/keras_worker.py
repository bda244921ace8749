"""A worker of the distributed tests: TF's custom-training-loop guide with jf.keras pieces (a
Sequential model built lazily on the first traced step, a loss with reduction='none', Adam) under
MultiWorkerMirroredStrategy. Each rank seeds its own initial weights differently: the mirrors
must take rank 0's. Writes the final weights and the reduced losses.

usage: keras_worker.py OUT_DIR"""
import json
import os
import sys

import numpy as np

import jitflow as jf

out_dir = sys.argv[1]
strategy = jf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
jf.random.set_seed(1234 + rank)
GLOBAL_BATCH_SIZE = 16
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 10)).astype(np.float32)
y = rng.integers(0, 3, 64).astype(np.int32)
train_dist_dataset = strategy.experimental_distribute_dataset(
    jf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH_SIZE))

with strategy.scope():
    model = jf.keras.Sequential([jf.keras.layers.Dense(16, activation="relu"), jf.keras.layers.Dense(3)])
    loss_object = jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    optimizer = jf.keras.optimizers.Adam(learning_rate=0.01)


def train_step(inputs):
    features, labels = inputs
    with jf.GradientTape() as tape:
        predictions = model(features, training=True)
        loss = jf.nn.compute_average_loss(loss_object(labels, predictions), global_batch_size=GLOBAL_BATCH_SIZE)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@jf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(jf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


losses = []
for epoch in range(2):
    for batch in train_dist_dataset:
        losses.append(float(distributed_train_step(batch)))
np.savez(os.path.join(out_dir, f"keras_{strategy.num_replicas_in_sync}_{rank}.npz"),
         *[v.numpy() for v in model.trainable_variables])
with open(os.path.join(out_dir, f"keras_{strategy.num_replicas_in_sync}_{rank}.json"), "w") as f:
    json.dump(losses, f)
