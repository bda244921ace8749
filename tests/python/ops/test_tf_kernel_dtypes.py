"""Registry conformance: every op takes at least the dtypes TF 2.21's CPU kernels are registered
for, except the gaps jitflow lists with a reason (jitflow/ops/_dtype_gaps.py), and every listed gap
is still one. TF's table is a data file made by tools/gen_tf_kernel_dtypes.py from TF's kernel
registry, so TF is not needed here."""

import json
import os

import pytest

import jitflow as jf
from jitflow import _C, _ops_doc
from jitflow.ops import _dtype_gaps

_DATA = os.path.join(os.path.dirname(__file__), "data", "tf221_cpu_kernel_dtypes.json")
with open(_DATA) as _f:
    TF = json.load(_f)
RECORDS = {r["name"]: r for r in _C.op_records()}
_SEED = [1, 2]

# Ops whose record's dtype column is not the dtype TF's kernels are registered by: the stateless
# samplers' records name the generator state they read (TF's kernels, the output dtype), and
# StringToNumber's its string input (TF's, out_type). Those are asked through the public function
# instead: a dtype is supported when the call returns a tensor of it.
PROBES = {
    "StatelessRandomUniformV2": lambda d: jf.random.stateless_uniform([3], seed=_SEED, dtype=d),
    "StatelessRandomUniformIntV2": lambda d: jf.random.stateless_uniform(
        [3], seed=_SEED, minval=0, maxval=7, dtype=d
    ),
    "StatelessRandomUniformFullIntV2": lambda d: jf.random.stateless_uniform(
        [3], seed=_SEED, minval=None, maxval=None, dtype=d
    ),
    "StatelessRandomNormalV2": lambda d: jf.random.stateless_normal([3], seed=_SEED, dtype=d),
    "StatelessTruncatedNormalV2": lambda d: jf.random.stateless_truncated_normal([3], seed=_SEED, dtype=d),
    "StatelessRandomGammaV3": lambda d: jf.random.stateless_gamma([3], seed=_SEED, alpha=1.0, dtype=d),
    "StatelessRandomPoisson": lambda d: jf.random.stateless_poisson([3], seed=_SEED, lam=2.0, dtype=d),
    "StatelessRandomBinomial": lambda d: jf.random.stateless_binomial(
        [3], seed=_SEED, counts=5.0, probs=0.5, output_dtype=d
    ),
    "StringToNumber": lambda d: jf.strings.to_number(["7"], out_type=d),
}


def _probe(name, dtype):
    try:
        out = PROBES[name](getattr(jf, dtype))
    except (TypeError, ValueError, jf.errors.InvalidArgumentError, jf.errors.UnimplementedError):
        return False
    return out.dtype.name == dtype


def ours(name, dtypes):
    """The dtypes among `dtypes` that jitflow's op `name` takes."""
    if name in PROBES:
        return {d for d in dtypes if _probe(name, d)}
    return set(RECORDS[name]["types"]) & set(dtypes)


def _gaps():
    out = {}
    for op, dtypes, why in _dtype_gaps.KNOWN_GAPS:
        assert why.strip(), f"{op}: a known gap needs its reason"
        for d in dtypes.split():
            assert (op, d) not in out, f"{op} {d} is listed twice"
            out[(op, d)] = why
    return out


def test_the_table_covers_every_record():
    # a new op needs the table regenerated (tools/gen_tf_kernel_dtypes.py)
    listed = set(TF["ops"]) | set(TF["not_compared"])
    assert sorted(set(RECORDS) - listed) == [], (
        "regenerate tests/python/ops/data/tf221_cpu_kernel_dtypes.json"
    )
    assert sorted(listed - set(RECORDS)) == []


@pytest.mark.parametrize("name", sorted(TF["ops"]))
def test_op_takes_tfs_cpu_dtypes(name):
    want = TF["ops"][name]["dtypes"]
    gaps = _gaps()
    missing = sorted(d for d in set(want) - ours(name, want) if (name, d) not in gaps)
    assert not missing, (
        f"{name}: TF's CPU kernels take {' '.join(missing)} (attr {TF['ops'][name]['attr']}), jitflow does not; "
        "support them or list them in python/jitflow/ops/_dtype_gaps.py with the reason"
    )


def test_every_known_gap_is_still_a_gap():
    stale = []
    for (op, d), _ in sorted(_gaps().items()):
        if op not in TF["ops"]:
            stale.append(f"{op}: not an op compared with TF")
        elif d not in TF["ops"][op]["dtypes"]:
            stale.append(f"{op} {d}: TF's CPU kernels do not take it")
        elif d in ours(op, [d]):
            stale.append(f"{op} {d}: jitflow takes it now")
    assert not stale, (
        "delete these from python/jitflow/ops/_dtype_gaps.py, then regenerate docs/ops.md: " + "; ".join(stale)
    )


def test_probes_see_the_dtypes_jitflow_takes():
    # a probe that always failed would list every dtype as a gap
    assert _probe("StatelessRandomNormalV2", "float32") and _probe("StringToNumber", "int64")
    assert not _probe("StatelessRandomNormalV2", "int32")


def test_docs_ops_md_shows_the_current_gaps():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "ops.md")
    with open(path) as f:
        text = f.read()
    assert text == _ops_doc.markdown(), "docs/ops.md is stale: python -m jitflow._ops_doc > docs/ops.md"
    for op, dtypes, why in _dtype_gaps.KNOWN_GAPS:
        assert f"| {op} | {_ops_doc._types(dtypes.split())} | {why} |" in text
