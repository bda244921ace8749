"""Export benchmark: an MLP (two hidden ReLU layers and a softmax) run by jitflow as a compiled
function (jit_compile=True) and, exported with jf.experimental.export_onnx, by onnxruntime,
at a few batch sizes, with the time ratio, all in one run. The two results are checked
against each other first. Without onnx/onnxruntime installed, jitflow's times alone."""
import argparse
import os
import tempfile
import timeit

import numpy as np

import jitflow as jf

try:
    import onnxruntime as ort
except ImportError:
    ort = None


def best(fn, number=20, repeat=7):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batches", default="1,64,1024")
    p.add_argument("--width", type=int, default=512)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    model = jf.keras.Sequential([jf.keras.layers.Dense(args.width, activation="relu"),
                                 jf.keras.layers.Dense(args.width, activation="relu"),
                                 jf.keras.layers.Dense(10, activation="softmax")])
    model(np.zeros((1, 256), np.float32))
    fn = jf.function(lambda x: model(x), input_signature=[jf.TensorSpec([None, 256], jf.float32)],
                     jit_compile=True)
    session = None
    if ort is not None:
        try:
            path = os.path.join(tempfile.mkdtemp(), "mlp.onnx")
            jf.experimental.export_onnx(fn.get_concrete_function(), path)
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        except ImportError as e:  # onnx (the writer) missing
            print(f"onnx export unavailable: {e}")
    else:
        print("onnxruntime is not installed: jitflow alone")
    print(f"MLP 256 -> {args.width} -> {args.width} -> 10 (float32, CPU)")
    print(f"{'batch':>6}  {'jitflow compiled':>17}  {'onnxruntime':>12}  {'ratio ort/jf':>12}")
    for batch in (int(b) for b in args.batches.split(",")):
        x = rng.standard_normal((batch, 256)).astype(np.float32)
        before = jf.debugging.stats()["cluster_runs"]
        got = fn(x).numpy()
        assert jf.debugging.stats()["cluster_runs"] > before, "the compiled function did not run compiled code"
        t_jf = best(lambda x=x: fn(x).numpy())
        if session is None:
            print(f"{batch:>6}  {t_jf * 1e6:>14.1f} us  {'-':>12}  {'-':>12}")
            continue
        ref = session.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
        t_ort = best(lambda x=x: session.run(None, {"x": x}))
        print(f"{batch:>6}  {t_jf * 1e6:>14.1f} us  {t_ort * 1e6:>9.1f} us  {t_ort / t_jf:>12.2f}")


if __name__ == "__main__":
    main()
