"""Writes tests/python/ops/data/tf221_cpu_kernel_dtypes.json: for every op jitflow has a record
for, the dtypes TF's CPU kernels are registered for, read from TF's kernel registry. Run it
with a Python that has TensorFlow (TF itself is never imported by the tests):

    /tmp/tfvenv/bin/python tools/gen_tf_kernel_dtypes.py [--jitflow-python .venv/bin/python]

The op names come from jitflow's records (a child process of the jitflow Python). Per op the
value type is the type attr of TF's first input that is not one of the record's shape inputs
(resource handles skipped), else of its first output, as the record's dtype column names the
op's main operand; OVERRIDES names it where that rule picks the wrong attr. Only the dtypes
jitflow has are kept (no qint*, resource, variant, float8, int4)."""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "python", "ops", "data", "tf221_cpu_kernel_dtypes.json")
JITFLOW_DTYPES = {
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
    "string",
}

# jitflow names whose TF op has another name
TF_NAME = {
    "TensorArrayRead": "TensorArrayReadV3",
    "TensorArrayWrite": "TensorArrayWriteV3",
    "TensorArrayStack": "TensorArrayGatherV3",
    "FusedConv2D": "_FusedConv2D",
    "FusedDepthwiseConv2dNative": "_FusedDepthwiseConv2dNative",
    "FusedConv3D": "_FusedConv3D",
}
# ops whose record's dtype column is not what the rule picks: the values of SelectV2 (not its
# bool condition); the output dtype of the stateless samplers, whose jitflow records name the
# generator state they read (the test asks those through their public functions instead)
OVERRIDES = {
    "Assert": "input:condition",  # the record names the condition; the data it prints takes any type
    "SelectV2": "T",
    "StatelessRandomBinomial": "dtype",
    "StatelessRandomGammaV3": "dtype",
    "StatelessRandomPoisson": "dtype",
    "StatelessRandomUniformV2": "dtype",
    "StatelessRandomNormalV2": "dtype",
    "StatelessTruncatedNormalV2": "dtype",
    "StatelessRandomUniformFullIntV2": "dtype",
    "StatelessRandomUniformIntV2": "dtype",
}
# ops not compared, and why
NOT_COMPARED = {
    "If": "control flow: its branches take any types",
    "While": "control flow: its body takes any types",
    "XlaLaunch": "a compiled cluster: takes whatever its graph does",
    "CollectiveAllReduce": "TF's collectives (CollectiveReduceV2) are a different op family",
    "RandomPhiloxState": "jitflow-internal (a Generator's state), no TF op",
    "FusedConv2DBackpropInput": "no TF CPU kernel (_FusedConv2DBackpropInput is GPU only)",
    "RngReadAndSkip": "its record's column is the Generator state's int64, TF's input is a resource",
}


def _records(py):
    code = "import json; from jitflow import _C; print(json.dumps(_C.op_records()))"
    return json.loads(subprocess.run([py, "-c", code], check=True, capture_output=True, text=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jitflow-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    args = ap.parse_args()
    import tensorflow as tf
    from tensorflow.python.framework import dtypes, kernels, op_def_registry

    def name(t):
        return dtypes.as_dtype(t).name

    ops, skipped = {}, {}
    for r in sorted(_records(args.jitflow_python), key=lambda r: r["name"]):
        n = r["name"]
        if n in NOT_COMPARED:
            skipped[n] = NOT_COMPARED[n]
            continue
        tf_name = TF_NAME.get(n, n)
        od = op_def_registry.get(tf_name)
        if od is None:
            sys.exit(f"{n}: no TF op {tf_name}; add it to TF_NAME or NOT_COMPARED")
        nin = len(od.input_arg)
        shape_in = {i if i >= 0 else nin - 1 for i in r["shape_inputs"]}
        attr = OVERRIDES.get(n)
        fixed = None
        if attr and attr.startswith("input:"):
            fixed = name(next(a for a in od.input_arg if a.name == attr[6:]).type)
            attr = None
        elif attr is None:
            data_in = [
                a for i, a in enumerate(od.input_arg) if i not in shape_in and a.type != dtypes.resource
            ]
            typed = [a for a in data_in if a.type_attr or a.type_list_attr]
            outs = [a for a in od.output_arg if a.type_attr or a.type_list_attr]
            if typed:
                attr = typed[0].type_attr or typed[0].type_list_attr
            elif outs:
                attr = outs[0].type_attr or outs[0].type_list_attr
            elif data_in:
                fixed = name(data_in[0].type)
        if attr is None:
            ops[n] = {"tf_op": tf_name, "attr": None, "dtypes": sorted({fixed} & JITFLOW_DTYPES)}
            continue
        spec = next(a for a in od.attr if a.name == attr)
        allowed = (
            {name(t) for t in spec.allowed_values.list.type} if spec.HasField("allowed_values") else None
        )
        found = set()
        cpu = [
            k
            for k in kernels.get_registered_kernels_for_op(tf_name).kernel
            if k.device_type in ("CPU", "DEFAULT")
        ]
        if not cpu:
            skipped[n] = "TF registers no CPU kernel for it"
            continue
        for k in cpu:
            cs = [c for c in k.constraint if c.name == attr]
            if not cs:  # a kernel for every type the op def allows
                found |= allowed if allowed is not None else JITFLOW_DTYPES
            for c in cs:
                found |= {name(t) for t in c.allowed_values.list.type}
        ops[n] = {"tf_op": tf_name, "attr": attr, "dtypes": sorted(found & JITFLOW_DTYPES)}

    doc = {
        "_generated": "by tools/gen_tf_kernel_dtypes.py from TensorFlow "
        + tf.__version__
        + "'s kernel registry "
        "(kernels.get_registered_kernels_for_op, CPU (and device-independent DEFAULT) kernels, the attr naming the op's value type); "
        "only dtypes jitflow has. Regenerate after adding an op.",
        "tf_version": tf.__version__,
        "ops": ops,
        "not_compared": skipped,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {OUT}: {len(ops)} ops, {len(skipped)} not compared")


if __name__ == "__main__":
    main()
