"""Imports TensorFlow, JAX and PyTorch (whichever are installed) before and after jitflow, each
order in a fresh process, runs a compiled jitflow function and checks the process exits
cleanly. Run with an interpreter that has them, jitflow on its path:

    PYTHONPATH=python /path/to/venv/bin/python tools/coexistence.py
"""
import importlib.util
import itertools
import subprocess
import sys

BODY = """
import jitflow as jf
f = jf.function(lambda x: jf.nn.relu(x) * 2.0 + jf.exp(x), jit_compile=True)
out = f(jf.constant([0.0, -1.0])).numpy().tolist()
assert abs(out[0] - 1.0) < 1e-6 and abs(out[1] - 0.36787944) < 1e-6, out
assert jf.debugging.stats()["cluster_runs"] >= 1
"""


def main():
    others = [m for m in ("tensorflow", "jax", "torch") if importlib.util.find_spec(m)]
    print("installed alongside jitflow:", ", ".join(others) or "none")
    failed = 0
    for k in range(1, len(others) + 1):
        for group in itertools.permutations(others, k):
            for jf_first in (True, False):
                order = (["jitflow"] + list(group)) if jf_first else (list(group) + ["jitflow"])
                src = "".join(f"import {m}\n" for m in order) + BODY
                r = subprocess.run([sys.executable, "-c", src], check=False, capture_output=True, text=True)
                ok = r.returncode == 0
                failed += not ok
                tail = "" if ok else " " + (r.stderr.strip().splitlines() or ["?"])[-1]
                print(f"  {' -> '.join(order):<40} exit {r.returncode}{tail}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
