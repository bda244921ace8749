"""jitflow against its peers in one run: jitflow eager / jf.function / jit_compile=True against
jax.jit and TF's tf.function(jit_compile=True), each workload written once per API, with the
ratios of the peers' times to jitflow's compiled time (> 1: jitflow is faster).

Workloads: the recurrence x = tanh(x*1.01+0.1)*0.9 for 1,000 steps of a loop at 256 and 16K
float32; softmax, log-softmax, layer norm, RMS norm and softmax cross-entropy over the rows of
a 4096x1024 float32 matrix; a GELU feed-forward block; the fused elementwise chain
tanh(x*1.5+0.5)*2 over 16M floats; the seed's LSTM cell (10x10): its cached call, and its first
call in a fresh process (jitflow with the disk cache off and with a warm one); and the time
`import` takes.

The peers run in whatever interpreter has them: this one when it imports jax / tensorflow,
else the ones --jax-python / --tf-python name (child processes given the same inputs; their
results are checked against jitflow's before any time is printed). Times are the best of
several repeats; the machines are noisy and loaded, so compare ratios, not absolute times.

    python benchmarks/peers.py [--quick] [--jax-python PY] [--tf-python PY] [--only a,b]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import timeit

import numpy as np

A, B, C = 1.01, 0.1, 0.9
STEPS = 1000
EPS = 1e-5


def sizes(quick):
    return {"rows": 1024 if quick else 4096, "width": 1024, "chain": (1 << 22) if quick else (1 << 24),
            "ffn": (256, 512, 2048)}


def inputs(name, quick):
    """The workload's inputs (float32 numpy arrays), the same in every process."""
    rng = np.random.default_rng(0)
    s = sizes(quick)
    if name.startswith("recurrence"):
        n = 256 if name.endswith("256") else 16384
        return [np.linspace(-1, 1, n).astype(np.float32)]
    if name in ("softmax", "log_softmax", "layer_norm", "rms_norm", "softmax_xent"):
        x = rng.standard_normal((s["rows"], s["width"])).astype(np.float32)
        if name == "softmax_xent":
            labels = rng.uniform(0, 1, x.shape).astype(np.float32)
            return [labels / labels.sum(-1, keepdims=True), x]
        if name in ("layer_norm", "rms_norm"):
            return [x, rng.uniform(0.5, 1.5, s["width"]).astype(np.float32),
                    rng.standard_normal(s["width"]).astype(np.float32)]
        return [x]
    if name == "gelu_ffn":
        b, d, h = s["ffn"]
        return [rng.standard_normal((b, d)).astype(np.float32),
                (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32), np.zeros(h, np.float32),
                (rng.standard_normal((h, d)) / np.sqrt(h)).astype(np.float32), np.zeros(d, np.float32)]
    if name == "chain":
        return [rng.uniform(-1, 1, s["chain"]).astype(np.float32)]
    if name == "lstm_cell":
        return [np.zeros((10, 10), np.float32)] * 3
    raise ValueError(name)


WORKLOADS = ["recurrence_256", "recurrence_16k", "softmax", "log_softmax", "layer_norm", "rms_norm",
             "softmax_xent", "gelu_ffn", "chain", "lstm_cell"]


class TfLike:
    """jitflow or tensorflow: the same spelling."""

    def __init__(self, tf):
        self.tf = tf

    def mean(self, x):
        return self.tf.reduce_mean(x, axis=-1, keepdims=True)

    def rsqrt(self, x):
        return self.tf.math.rsqrt(x)

    def softmax(self, x):
        return self.tf.nn.softmax(x, axis=-1)

    def log_softmax(self, x):
        return self.tf.nn.log_softmax(x, axis=-1)

    def xent(self, labels, x):
        return self.tf.nn.softmax_cross_entropy_with_logits(labels, x)

    def gelu(self, x):
        return self.tf.nn.gelu(x, approximate=False)

    def matmul(self, a, b):
        return self.tf.matmul(a, b)

    def tanh(self, x):
        return self.tf.tanh(x)

    def recurrence(self):
        tf = self.tf

        def rec(x):
            for _ in tf.range(STEPS):
                x = tf.tanh(x * A + B) * C
            return x
        return rec


class JaxLike:
    def __init__(self):
        import jax
        import jax.numpy as jnp
        self.jax, self.jnp = jax, jnp

    def mean(self, x):
        return self.jnp.mean(x, axis=-1, keepdims=True)

    def rsqrt(self, x):
        return self.jax.lax.rsqrt(x)

    def softmax(self, x):
        return self.jax.nn.softmax(x, axis=-1)

    def log_softmax(self, x):
        return self.jax.nn.log_softmax(x, axis=-1)

    def xent(self, labels, x):
        return -self.jnp.sum(labels * self.jax.nn.log_softmax(x, axis=-1), axis=-1)

    def gelu(self, x):
        return self.jax.nn.gelu(x, approximate=False)

    def matmul(self, a, b):
        return a @ b

    def tanh(self, x):
        return self.jnp.tanh(x)

    def recurrence(self):
        jax, jnp = self.jax, self.jnp
        return lambda x: jax.lax.fori_loop(0, STEPS, lambda i, v: jnp.tanh(v * A + B) * C, x)


def body(api, name):
    """The workload as a function of its inputs, written against `api`."""
    if name.startswith("recurrence"):
        return api.recurrence()
    if name == "softmax":
        return api.softmax
    if name == "log_softmax":
        return api.log_softmax
    if name == "layer_norm":
        def layer_norm(x, g, b):
            d = x - api.mean(x)
            return d * api.rsqrt(api.mean(d * d) + EPS) * g + b
        return layer_norm
    if name == "rms_norm":
        return lambda x, g, b: x * api.rsqrt(api.mean(x * x) + EPS) * g
    if name == "softmax_xent":
        return api.xent
    if name == "gelu_ffn":
        return lambda x, w1, b1, w2, b2: api.matmul(api.gelu(api.matmul(x, w1) + b1), w2) + b2
    if name == "chain":
        return lambda x: api.tanh(x * 1.5 + 0.5) * 2.0
    raise ValueError(name)


def lstm_math(api, sigmoid, split):
    """The LSTM cell's math for the peers without a jitflow-style Keras cell to hand (JAX):
    one fused gate matmul, Keras's gate order (i, f, c, o)."""
    def cell(x, h, c, w, u, b):
        z = api.matmul(x, w) + api.matmul(h, u) + b
        i, f, g, o = split(z)
        c2 = sigmoid(f) * c + sigmoid(i) * api.tanh(g)
        return sigmoid(o) * api.tanh(c2), c2
    return cell


def best(fn, repeat, target):
    """Best seconds per call over `repeat` timings of about `target` seconds each."""
    fn()
    n = max(1, int(target / max(timeit.timeit(fn, number=1), 1e-7)))
    return min(timeit.repeat(fn, number=n, repeat=repeat)) / n


def checksum(out):
    out = out[0] if isinstance(out, (tuple, list)) else out
    return float(np.asarray(out.numpy() if hasattr(out, "numpy") else out, np.float64).sum())


def lstm_weights():
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((10, 40)) * 0.3).astype(np.float32),
            (rng.standard_normal((10, 40)) * 0.3).astype(np.float32), np.zeros(40, np.float32)]


# ---- peers (run here or in a child interpreter) ---------------------------------------------------
def run_peer(peer, names, quick, repeat, target):
    """{workload: seconds per call, workload + ':check': checksum} for jax.jit or TF XLA."""
    out = {}
    if peer == "jax":
        api = JaxLike()
        jax, jnp = api.jax, api.jnp

        def compiled(name):
            if name == "lstm_cell":
                cell = jax.jit(lstm_math(api, jax.nn.sigmoid, lambda z: jnp.split(z, 4, axis=-1)))
                args = [jnp.asarray(a) for a in inputs(name, quick) + lstm_weights()]
                return lambda: jax.block_until_ready(cell(*args))
            f = jax.jit(body(api, name))
            args = [jnp.asarray(a) for a in inputs(name, quick)]
            return lambda: jax.block_until_ready(f(*args))
    else:
        import tensorflow as tf
        api = TfLike(tf)

        def compiled(name):
            if name == "lstm_cell":
                cell = tf.keras.layers.LSTMCell(10)
                x, h, c = (tf.constant(a) for a in inputs(name, quick))
                cell(x, [h, c])
                cell.set_weights(lstm_weights())
                f = tf.function(lambda x, h, c: cell(x, [h, c])[0], jit_compile=True)
                return lambda: f(x, h, c).numpy()
            f = tf.function(body(api, name), jit_compile=True)
            args = [tf.constant(a) for a in inputs(name, quick)]
            return lambda: f(*args).numpy()
    for name in names:
        fn = compiled(name)
        out[name + ":check"] = checksum(fn())
        out[name] = best(fn, repeat, target)
    return out


def child_main(args):
    names = [n for n in args.only.split(",") if n]
    print(json.dumps(run_peer(args.child, names, args.quick, args.repeat, args.target)))


def importable(python, module):
    r = subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=600, check=False)
    return r.returncode == 0


def in_child(python, peer, names, args):
    cmd = [python, os.path.abspath(__file__), "--child", peer, "--only", ",".join(names), "--repeat",
           str(args.repeat), "--target", str(args.target)] + (["--quick"] if args.quick else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False,
                       env=dict(os.environ, KERAS_BACKEND="jax" if peer == "jax" else "tensorflow"))
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(r.stdout.strip().splitlines()[-1]), None


# ---- first calls and import times (fresh processes) -----------------------------------------------
_FIRST = {
    "jitflow": '''
        import jitflow as jf
        cell = jf.keras.layers.LSTMCell(10)
        @jf.function(jit_compile=True)
        def step(x, h, c):
            return cell(x, [h, c])[0]
        x = h = c = jf.zeros([10, 10])
    ''',
    "jax": '''
        import jax, jax.numpy as jnp
        def step(x, h, c):
            z = x @ w + h @ u + b
            i, f, g, o = jnp.split(z, 4, axis=-1)
            c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            return jax.nn.sigmoid(o) * jnp.tanh(c2)
        step = jax.jit(step)
        w = u = jnp.zeros((10, 40)); b = jnp.zeros(40)
        x = h = c = jnp.zeros((10, 10))
    ''',
    "tf": '''
        import tensorflow as tf
        cell = tf.keras.layers.LSTMCell(10)
        @tf.function(jit_compile=True)
        def step(x, h, c):
            return cell(x, [h, c])[0]
        x = h = c = tf.zeros([10, 10])
    ''',
}
_IMPORT = {"jitflow": "jitflow", "jax": "jax", "tf": "tensorflow"}


def first_call(python, peer, env=None):
    """Seconds of the LSTM cell's first call (trace + compile + run) in a fresh process, the
    framework imported and the cell built beforehand."""
    src = textwrap.dedent(_FIRST[peer]) + textwrap.dedent('''
        import time
        t = time.perf_counter()
        r = step(x, h, c)
        getattr(r, "block_until_ready", lambda: None)()
        print(time.perf_counter() - t)
    ''')
    r = subprocess.run([python, "-c", src], capture_output=True, text=True, timeout=600, check=False,
                       env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        raise RuntimeError(f"{peer}'s first call failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return float(r.stdout.strip().splitlines()[-1])


def import_time(python, peer, pycache=None):
    """Seconds of the import in a fresh process. With `pycache` (a folder), bytecode is read from
    and written there, as an installed package's is; without it, the environment decides (with
    PYTHONDONTWRITEBYTECODE set and no __pycache__ in the tree, every module is compiled from source
    on every import, about twice the time of a cached import)."""
    src = f"import time; t = time.perf_counter(); import {_IMPORT[peer]}; print(time.perf_counter() - t)"
    env = dict(os.environ)
    if pycache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    r = subprocess.run([python, "-c", src], capture_output=True, text=True, timeout=600, check=False, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"import {_IMPORT[peer]} failed")
    return float(r.stdout.strip().splitlines()[-1])


# ---- jitflow --------------------------------------------------------------------------------------
def jitflow_impls(jf, name, quick):
    """{eager, function, compiled: a call of the workload with its inputs bound}."""
    args = [jf.constant(a) for a in inputs(name, quick)]
    if name == "lstm_cell":  # the seed's Keras cell, with the weights the peers get
        cell = jf.keras.layers.LSTMCell(10)
        cell(args[0], args[1:])
        cell.set_weights(lstm_weights())

        def eager(x, h, c):
            return cell(x, [h, c])[0]
    else:
        eager = body(TfLike(jf), name)
    function, compiled = jf.function(eager), jf.function(eager, jit_compile=True)
    if name.startswith("recurrence"):  # eagerly, a Python loop of eager ops
        first = lambda: _eager_recurrence(jf, args[0]).numpy()
    else:
        first = lambda: eager(*args).numpy()
    return {"eager": first, "function": lambda: function(*args).numpy(),
            "compiled": lambda: compiled(*args).numpy()}


def jitflow_times(names, quick, repeat, target):
    import jitflow as jf
    out = {}
    for name in names:
        times = {}
        for kind, fn in jitflow_impls(jf, name, quick).items():
            if kind == "compiled":
                out[name + ":check"] = checksum(fn())
                before = jf.debugging.stats()["cluster_runs"]
                fn()
                assert jf.debugging.stats()["cluster_runs"] > before, f"{name}: no compiled code ran"
            times[kind] = best(fn, repeat if kind != "eager" else max(2, repeat // 3), target)
        out[name] = times
    return out


def _eager_recurrence(jf, x):
    for _ in range(STEPS):
        x = jf.tanh(x * A + B) * C
    return x


def fmt(t):
    if t is None:
        return f"{'-':>10}"
    return f"{t * 1e6:>8.1f}us" if t < 1e-3 else f"{t * 1e3:>8.2f}ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats (a smoke run)")
    ap.add_argument("--jax-python", default=os.environ.get("JITFLOW_BENCH_JAX_PYTHON"))
    ap.add_argument("--tf-python", default=os.environ.get("JITFLOW_BENCH_TF_PYTHON"))
    ap.add_argument("--only", default=",".join(WORKLOADS + ["first_call", "import"]))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--target", type=float, default=0.1, help="seconds per timing")
    ap.add_argument("--child", choices=["jax", "tf"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.target = min(args.repeat, 3), min(args.target, 0.03)
    if args.child:
        return child_main(args)
    wanted = [n for n in args.only.split(",") if n]
    names = [n for n in WORKLOADS if n in wanted]
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf-bench-cache-"))

    pythons, notes = {}, []
    for peer, given in (("jax", args.jax_python), ("tf", args.tf_python)):
        for python in (sys.executable, given):
            if python and importable(python, _IMPORT[peer]):
                pythons[peer] = python
                break
        else:
            notes.append(f"{peer}: not run ({_IMPORT[peer]} is not importable here"
                         f"{' nor by ' + given if given else ''}; see --{peer}-python)")
    peers = {}
    for peer, python in pythons.items():
        if python == sys.executable:
            peers[peer] = run_peer(peer, names, args.quick, args.repeat, args.target)
        else:
            got, err = in_child(python, peer, names, args)
            if got is None:
                notes.append(f"{peer}: failed ({err})")
            else:
                peers[peer] = got
    jf_times = jitflow_times(names, args.quick, args.repeat, args.target)
    import jitflow as jf
    label = {"jax": "jax.jit", "tf": "TF XLA"}
    for peer, got in peers.items():  # same inputs, same math: the sums agree
        for name in names:
            a, b = jf_times[name + ":check"], got[name + ":check"]
            if abs(a - b) > 1e-3 * max(1.0, abs(a)):
                notes.append(f"{label[peer]} {name}: result sum {b:.6g} vs jitflow's {a:.6g} (not the same math?)")

    print(f"jitflow {jf.__version__}, {jf._C.num_threads()} threads; load average "
          f"{os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {'quick' if args.quick else 'full'} sizes "
          f"{sizes(args.quick)}")
    cols = ["eager", "function", "compiled"] + [label[p] for p in peers]
    if names:
        print(f"\n{'workload':<16}" + "".join(f"{c:>10}" for c in cols) +
              "".join(f"{label[p] + '/jf':>13}" for p in peers))
    for name in names:
        t = jf_times[name]
        row = [t["eager"], t["function"], t["compiled"]] + [peers[p][name] for p in peers]
        print(f"{name:<16}" + "".join(fmt(v) for v in row) +
              "".join(f"{peers[p][name] / t['compiled']:>12.2f}x" for p in peers))
    if names:
        print("(ratios: the peer's time over jitflow jit_compile=True's; > 1 means jitflow is faster)")

    if "first_call" in wanted:
        print("\nthe seed's LSTM cell, first call in a fresh process (trace + compile + run), best of 3")
        rows = {}
        cold = [first_call(sys.executable, "jitflow", {"JITFLOW_CACHE_DIR": "off"}) for _ in range(3)]
        rows["jitflow, no disk cache"] = min(cold)
        with tempfile.TemporaryDirectory() as d:
            first_call(sys.executable, "jitflow", {"JITFLOW_CACHE_DIR": d})
            rows["jitflow, warm disk cache"] = min(first_call(sys.executable, "jitflow", {"JITFLOW_CACHE_DIR": d})
                                                   for _ in range(3))
        for peer, python in pythons.items():
            try:
                rows[label[peer]] = min(first_call(python, peer) for _ in range(3))
            except RuntimeError as e:
                notes.append(str(e))
        for k, v in rows.items():
            print(f"  {k:<28}{v * 1e3:>9.2f} ms")
    if "import" in wanted:
        print("\nimport time in a fresh process, best of 5: bytecode cached (as installed) / as this "
              f"environment runs it (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})")
        for peer, python in [("jitflow", sys.executable)] + list(pythons.items()):
            try:
                with tempfile.TemporaryDirectory() as d:
                    import_time(python, peer, d)  # fills the bytecode cache
                    cached = min(import_time(python, peer, d) for _ in range(5))
                plain = min(import_time(python, peer) for _ in range(5))
                print(f"  import {_IMPORT[peer]:<21}{cached * 1e3:>9.1f} ms {plain * 1e3:>9.1f} ms")
            except RuntimeError as e:
                notes.append(str(e))
    for n in notes:
        print("note:", n)


if __name__ == "__main__":
    main()
