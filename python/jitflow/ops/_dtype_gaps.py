"""Dtypes TF 2.21's CPU kernels are registered for that a jitflow op does not take yet, each with
the reason: docs/ops.md lists them, and tests/python/ops/test_tf_kernel_dtypes.py fails for a
dtype TF takes that is neither supported nor listed here, and for an entry here that is no
longer a gap. Supporting a dtype means deleting it here (and regenerating docs/ops.md).

Entries: (op, space-separated dtypes, one-line reason)."""

# the reasons most entries share
NARROW_INT = "not yet: no kernel for these integer widths"
COMPLEX = "not yet: no complex kernel"
OTHER = "not yet: no kernel for these dtypes"
OP_DEF_REFUSES = (
    "TF 2.21 registers a kernel, but its op definition refuses these dtypes, so no TF program reaches it"
)
FUSED = "jitflow-internal: the fuse_conv pass forms it only for the dtypes it claims, other dtypes keep the unfused ops"

KNOWN_GAPS = [
    ("Acos", "int16 int32 int64 int8", OP_DEF_REFUSES),
    ("FusedConv2D", "bfloat16 float16 float64 int8", FUSED),
    ("FusedConv3D", "bfloat16 float16", FUSED),
    ("FusedDepthwiseConv2dNative", "bfloat16 float16", FUSED),
    ("LeakyRelu", "int16 int32 int64 int8 uint16 uint32 uint64 uint8", OP_DEF_REFUSES),
    ("StatelessRandomGammaV3", "bfloat16", OP_DEF_REFUSES),
    ("MatMul", "int16", OP_DEF_REFUSES),
]
