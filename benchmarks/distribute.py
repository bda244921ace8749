"""Data-parallel training with jf.distribute.MultiWorkerMirroredStrategy: training steps per
second of a 784-256-256-10 MLP (~270k float32 parameters) on a global batch of 128, with 1 worker
and with 2 workers (mpirun -np 2), and the time per step spent in the gradient all-reduce
against mpi4py's own Allreduce of the same bytes, blocking and as Iallreduce + Wait (the floor:
what MPI costs without jitflow around it), all in one run. jitflow's figure includes copying the
gradients into the bucket and out, and polling the request (so a failed peer is noticed).

    python benchmarks/distribute.py [--steps N]

On a machine with fewer cores than workers x threads the 2-worker figures measure contention
as much as communication: read them next to the core count printed."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SIZES, GLOBAL_BATCH = (784, 256, 256, 10), 128


def _worker(steps, out):
    from mpi4py import MPI

    import jitflow as jf

    strategy = jf.distribute.MultiWorkerMirroredStrategy()
    comm = jf.distribute.collective.world()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(GLOBAL_BATCH * 4, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], size=GLOBAL_BATCH * 4).astype(np.int32)
    data = strategy.experimental_distribute_dataset(jf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH).repeat())
    with strategy.scope():
        params = []
        for a, b in zip(SIZES[:-1], SIZES[1:]):
            params += [jf.Variable(rng.normal(size=(a, b)).astype(np.float32) * 0.05), jf.Variable(np.zeros(b, np.float32))]
        opt = jf.optimizers.SGD(0.01)

    def replica_step(xb, yb):
        with jf.GradientTape() as tape:
            h = xb
            for i in range(0, len(params), 2):
                h = jf.matmul(h, params[i]) + params[i + 1]
                if i + 2 < len(params):
                    h = jf.nn.relu(h)
            per_example = jf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=h)
            loss = jf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    @jf.function
    def step(xb, yb):
        return strategy.run(replica_step, args=(xb, yb))

    it = iter(data)
    for _ in range(3):  # trace and warm up
        step(*next(it))
    comm.barrier()
    comm.allreduce_seconds, comm.allreduce_calls = 0.0, 0
    t0 = time.perf_counter()
    for _ in range(steps):
        step(*next(it))
    comm.barrier()
    elapsed = time.perf_counter() - t0
    jf_ar = comm.allreduce_seconds / steps
    # the floor: the same bytes (one float32 bucket of every gradient) through blocking Allreduce
    buf = np.ones(sum(int(np.prod(p.shape)) for p in params), np.float32)
    world = MPI.COMM_WORLD
    world.Barrier()
    t1 = time.perf_counter()
    for _ in range(steps):
        world.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    floor = (time.perf_counter() - t1) / steps
    world.Barrier()
    t2 = time.perf_counter()
    for _ in range(steps):
        world.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM).Wait()
    floor_nb = (time.perf_counter() - t2) / steps
    if strategy.cluster_resolver.task_id == 0:
        with open(out, "w") as f:
            json.dump({"workers": strategy.num_replicas_in_sync, "steps_per_s": steps / elapsed,
                       "allreduce_ms": jf_ar * 1e3, "calls_per_step": comm.allreduce_calls / steps,
                       "mpi4py_ms": floor * 1e3, "mpi4py_nb_ms": floor_nb * 1e3, "bytes": buf.nbytes}, f)


def _launch(workers, steps):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "result.json")
        cmd = [sys.executable, __file__, "--worker", "--steps", str(steps), "--out", out]
        if workers > 1:
            cmd = ["mpirun", "-np", str(workers), "--oversubscribe"] + cmd
        subprocess.run(cmd, check=True, env=env, timeout=600)
        with open(out) as f:
            return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.worker:
        return _worker(args.steps, args.out)
    print(f"{os.cpu_count()} cores; MLP {'-'.join(map(str, SIZES))}, global batch {GLOBAL_BATCH}, {args.steps} steps")
    print(f"{'workers':>8} {'steps/s':>9} {'all-reduce ms/step':>19} {'collectives/step':>17} "
          f"{'mpi4py Allreduce ms':>20} {'Iallreduce+Wait ms':>19} {'MB':>6}")
    for workers in (1, 2):
        r = _launch(workers, args.steps)
        print(f"{r['workers']:>8} {r['steps_per_s']:>9.1f} {r['allreduce_ms']:>19.3f} {r['calls_per_step']:>17.1f} "
              f"{r['mpi4py_ms']:>20.3f} {r['mpi4py_nb_ms']:>19.3f} {r['bytes'] / 1e6:>6.2f}")


if __name__ == "__main__":
    main()
