"""docs/ops.md from the op records: every op, its public names, dtypes, whether and how it
compiles (the same emitter serves the CPU and NVPTX backends), and its gradient.
`python -m jitflow._ops_doc > docs/ops.md` rewrites the page; a test checks it is current."""
from . import _C
from .ops import _dtype_gaps

_HEADER = """# Ops

Every op jitflow has, generated from its record in `cpp/ir/ops.def` (see
`docs/adding_an_op.md`). *Compiles* names how a compiled cluster computes the op; one
elemental emitter serves the CPU (LLVM) and GPU (NVPTX) backends, so an op that compiles has
a GPU kernel too, except library steps (matmul on cuBLAS, softmax on the CPU). An op that
does not compile runs on its eager kernel, inside functions too, and `jit_compile=True`
names it in its error. Dtypes: f32 f64 i32 i64 bool str (strings: graph values that never
compile, docs/py_function_nest_strings.md), and f16 bf16 i8 i16 u8 u16 u32 u64 c64 c128
(float16, bfloat16, the small and unsigned integers and complex: eager kernels only so far,
docs/dtypes.md).

"""

_SHORT = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "bool": "bool", "string": "str",
          "float16": "f16", "bfloat16": "bf16", "int8": "i8", "int16": "i16", "uint8": "u8", "uint16": "u16",
          "uint32": "u32", "uint64": "u64", "complex64": "c64", "complex128": "c128"}


def _types(names):
    return " ".join(_SHORT[n] for n in names) or "-"


def markdown():
    rows = ["| op | jitflow names | dtypes | compiles | gradient |", "|---|---|---|---|---|"]
    for r in sorted(_C.op_records(), key=lambda r: r["name"]):
        names = ", ".join(f"`{n}`" for n in r["py_names"]) or f"({r['py_reason']})"
        if r["jit_types"]:
            comp = f"{r['lower']}"
            if r["jit_types"] != r["types"]:
                comp += f" ({_types(r['jit_types'])}; {r['jit_reason']})"
        else:
            comp = f"no: {r['jit_reason']}"
        grad = "yes" if r["differentiable"] else f"no: {r['grad_reason']}"
        rows.append(f"| {r['name']} | {names} | {_types(r['types'])} | {comp} | {grad} |")
    return _HEADER + "\n".join(rows) + "\n" + _gaps() + _COMPOSITIONS


_GAPS_HEADER = """
## Dtypes TF takes that jitflow does not yet

For each op above, TF 2.21's CPU kernels are registered for at least the dtypes of its dtypes
column, except those below (the comparison covers the op's main operand, the one its dtype
column names, and the dtypes jitflow has). TF's table is
`tests/python/ops/data/tf221_cpu_kernel_dtypes.json`, read from TF's kernel registry by
`tools/gen_tf_kernel_dtypes.py`; the gaps are listed in `python/jitflow/ops/_dtype_gaps.py`, and
`tests/python/ops/test_tf_kernel_dtypes.py` fails for an unlisted gap and for a listed one that
is closed. A dtype an op refuses raises TF's TypeError naming the op and the dtype.

| op | dtypes | why |
|---|---|---|
"""


def _gaps():
    rows = [f"| {op} | {_types(dtypes.split())} | {why} |" for op, dtypes, why in _dtype_gaps.KNOWN_GAPS]
    return _GAPS_HEADER + "\n".join(rows) + "\n"


# Public functions that are compositions of the ops above (as TF builds them): they compile
# where their parts do and differentiate through them.
_COMPOSITIONS = """
## Compositions

Built from the ops above as TF builds them: each compiles where its parts do and
differentiates through them.

| function | built from |
|---|---|
| `boolean_mask` | Reshape, Where, Squeeze, GatherV2 (eager: Where's output shape depends on values) |
| `nn.embedding_lookup` | GatherV2 |
| `eye` | Range, Equal, Cast, BroadcastTo |
| `sequence_mask` | Range, Less, Cast |
| `size`, `shape_n` | Shape, Prod |
| `unstack` | Split, Squeeze |
| `meshgrid` | Reshape, BroadcastTo (AddV2 with unknown sizes) |
| `linspace` | Range, arithmetic, ConcatV2 |
| `repeat` | ExpandDims, Tile, Reshape, or GatherV2 of computed positions |
| `gather_nd(batch_dims>0)` | GatherNd with batch coordinates |
| `math.polyval` | Mul, AddV2 (Horner's rule) |
| `math.reduce_variance`, `math.reduce_std` | Mean, Sub, Square, Mean (TF's mean of squared deviations), Sqrt |
| `reduce_logsumexp` | Max, IsFinite, SelectV2, StopGradient, Sub, Exp, Sum, Log, AddV2 (TF's stable form) |
| `math.count_nonzero` | NotEqual, Cast, Sum, Cast |
| `nn.moments` | Mean, StopGradient, SquaredDifference, Mean, Squeeze |
| `nn.batch_normalization` | Rsqrt, Mul, Sub, AddV2 (x * inv + (offset - mean * inv)) |
| `math.unsorted_segment_mean`, `math.unsorted_segment_sqrt_n` | UnsortedSegmentSum of the data and of ones, Maximum, RealDiv (Sqrt) |
| `einsum`, `linalg.einsum` | per operand: Transpose, SelectV2 with an index mask and Sum (a repeated label's diagonal), Sum (labels used nowhere else); per pair from the left: Transpose, Reshape, MatMul / BatchMatMulV2, Reshape (TF's Einsum kernel's plan) |
| `tensordot`, `linalg.tensordot` | einsum of the axes' labels |
| `linalg.matvec` | ExpandDims, MatMul / BatchMatMulV2, Squeeze |
| `linalg.matrix_transpose`, `linalg.transpose`, `linalg.adjoint` | Transpose of the last two dims |
| `linalg.band_part` | SelectV2 with a mask of row/column compares (a constant when the dims are known) |
| `linalg.diag_part`, `linalg.trace` | SelectV2 with a diagonal mask, Sum along the rows, StridedSlice (Pack and PadV2 for a range of k) |
| `linalg.diag`, `linalg.set_diag` | PadV2, ExpandDims, SelectV2 with a diagonal mask (one per diagonal for a range of k, each row unaligned by a StridedSlice) |
| `norm`, `linalg.norm` | Abs, Mul, Sum, Max, Pow, Sqrt as TF; the matrix 2-norm Transpose, Svd, Max |
| `sort`, `argsort` | Neg (or -x - 1 for integers), Transpose, TopKV2 (TF's construction: ties keep their order) |
| `math.in_top_k`, `nn.in_top_k` | Equal, SelectV2, Sum, Greater, Cast, Sum, Less, IsFinite, LogicalAnd (no sort) |
| `searchsorted` | Less / LessEqual of a broadcast [..., M, N] comparison, Cast, Sum: O(M N) per row (TF: a binary search) |
| `math.bincount` | Max, SelectV2, UnsortedSegmentSum (eager: the bin count depends on values) |
| `linalg.cholesky_solve` | two MatrixTriangularSolve |
| `linalg.lstsq` | fast: MatMul, Cholesky, two MatrixTriangularSolve (TF's normal equations); else Svd and MatMul |
"""


if __name__ == "__main__":
    print(markdown(), end="")
