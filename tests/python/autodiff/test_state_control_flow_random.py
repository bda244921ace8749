"""Random programs mixing jf.cond, jf.while_loop and AutoGraph control flow with variables read
and assigned in branches and bodies, TensorArrays, and gradients from tapes inside and outside
the function (control_programs.py generates them and interprets them in float64 numpy), run in
five modes: eagerly, as a jf.function, inside a jit_scope, under jit_compile=True, and with an
input_signature of unknown dims. Each run is compared with the reference: the loss, the carried
tensors, the variables' final values, and the gradients with respect to the inputs and the
variables (TF 2's semantics: every read of a variable is one of its leaves, assignments are not
differentiable).

CI runs a fixed set of seeds; JITFLOW_RANDOM_PROGRAMS=<n> runs n (from
JITFLOW_RANDOM_PROGRAMS_START, default 0), with every mode and both tape placements for each."""
import importlib.util
import os
import sys

import numpy as np
import pytest
from control_programs import STEP, VAR_SHAPES, Reference, generate, shapes_stable, source

import jitflow as jf

_COUNT = int(os.environ.get("JITFLOW_RANDOM_PROGRAMS", "0"))
_START = int(os.environ.get("JITFLOW_RANDOM_PROGRAMS_START", "0"))
SEEDS = list(range(_START, _START + _COUNT)) if _COUNT else list(range(40))
MODES = ("eager", "function", "jit_scope", "jit_compile", "unknown_dims")
MARGIN = 2e-3


def program(seed, tmp_dir):
    """The first acceptable program from `seed` (far enough from every switching point, and
    one TF traces with inputs of unknown dims: no loop changes a static shape), its reference
    and the module its source was written to (AutoGraph reads the file)."""
    for attempt in range(50):
        p = generate(seed * 1000 + attempt)
        ref = Reference(p)
        ref.run(p["values"])
        if ref.margin > MARGIN and shapes_stable(p):
            break
    else:  # 50 tries always find one: none means the generator or the margin broke
        raise AssertionError(f"seed {seed}: no program far enough from its switching points")
    path = os.path.join(tmp_dir, f"program_{seed}.py")
    with open(path, "w") as f:
        f.write(source(p))
    spec = importlib.util.spec_from_file_location(f"control_program_{seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return p, ref, module


def sources_of(p, x0, x1, variables):
    return {"all": [x0, x1, variables["V"], variables["W"]], "inputs": [x0, x1],
            "variables": [variables["V"], variables["W"]]}[p["sources"]]


def source_names(p):
    return {"all": ["x0", "x1", "V", "W"], "inputs": ["x0", "x1"], "variables": ["V", "W"]}[p["sources"]]


def make_function(fn, mode):
    if mode == "jit_scope":
        def scoped(x0, x1):
            with jf.jit_scope():
                return fn(x0, x1)
        return jf.function(scoped)
    if mode == "unknown_dims":
        spec = jf.TensorSpec([None, None], jf.float32)
        return jf.function(fn, input_signature=[spec, spec])
    return jf.function(fn, jit_compile=mode == "jit_compile")


def run(module, p, mode, tape_inside):
    """(loss, carried tensors, gradients, final variable values) of one run, as numpy."""
    variables = {k: jf.Variable(p["values"][k].astype(np.float32), name=k) for k in VAR_SHAPES}
    variables[STEP] = jf.Variable(p["values"][STEP], name=STEP)
    prog = module.build(jf, variables["V"], variables["W"], variables[STEP])
    x0, x1 = (jf.constant(p["values"][k].astype(np.float32)) for k in ("x0", "x1"))

    def step(x0, x1):
        with jf.GradientTape() as tape:
            tape.watch([x0, x1])
            loss, ts = prog(x0, x1)
        return loss, ts, tape.gradient(loss, sources_of(p, x0, x1, variables))

    before = jf.debugging.stats()["cluster_runs"]
    if mode == "eager":
        loss, ts, grads = step(x0, x1)
    elif tape_inside:
        loss, ts, grads = make_function(step, mode)(x0, x1)
    else:
        f = make_function(prog, mode)
        with jf.GradientTape() as tape:
            tape.watch([x0, x1])
            loss, ts = f(x0, x1)
        grads = tape.gradient(loss, sources_of(p, x0, x1, variables))
    if mode in ("jit_scope", "jit_compile"):
        assert jf.debugging.stats()["cluster_runs"] > before, f"{mode}: no compiled code ran"
    grads = [None if g is None else g.numpy() for g in grads]
    return loss.numpy(), [t.numpy() for t in ts], grads, {k: v.numpy() for k, v in variables.items()}


def close(got, want, what):
    want = np.asarray(want, np.float64)
    tol = 2e-3 * max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-3, atol=tol, err_msg=what)


def check(module, p, ref, grads_ref, mode, tape_inside):
    loss_ref, ts_ref, vars_ref = ref.run(p["values"])
    loss, ts, grads, final = run(module, p, mode, tape_inside)
    where = f"seed {p['seed']}, {mode}, tape {'inside' if tape_inside else 'outside'}"
    close(loss, loss_ref, f"loss ({where})")
    for k, (t, r) in enumerate(zip(ts, ts_ref)):
        close(t, r, f"t{k} ({where})")
    for k in VAR_SHAPES:
        close(final[k], vars_ref[k], f"variable {k} after the run ({where})")
    assert int(final[STEP]) == vars_ref[STEP], f"variable {STEP} after the run ({where})"
    for name, g in zip(source_names(p), grads):
        want = grads_ref[name]
        close(np.zeros_like(want) if g is None else g, want, f"d loss / d {name} ({where})")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program(seed, tmp_path):
    p, ref, module = program(seed, str(tmp_path))
    grads_ref = ref.gradients()
    if _COUNT:
        runs = [(m, inside) for m in MODES for inside in ((True,) if m == "eager" else (True, False))]
    else:  # CI: every mode, one tape placement per program (alternating by seed)
        runs = [(m, m == "eager" or (seed + i) % 2 == 0) for i, m in enumerate(MODES)]
    for mode, inside in runs:
        try:
            check(module, p, ref, grads_ref, mode, inside)
        except Exception as e:
            src = source(p)
            raise AssertionError(f"seed {seed}, {mode}, tape {'inside' if inside else 'outside'}: "
                                 f"{type(e).__name__}: {e}\nprogram:\n{src}") from e


if __name__ == "__main__":  # python test_state_control_flow_random.py SEED [MODE] [inside|outside]
    import tempfile
    seed = int(sys.argv[1])
    p, ref, module = program(seed, tempfile.mkdtemp())
    print(source(p))
    modes = sys.argv[2:3] or MODES
    places = {"inside": [True], "outside": [False]}.get(sys.argv[3] if len(sys.argv) > 3 else "", [True, False])
    for m in modes:
        for inside in places:
            check(module, p, ref, ref.gradients(), m, inside)
            print("ok", m, inside)
