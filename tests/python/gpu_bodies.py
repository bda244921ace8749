"""The op families and fused clusters the GPU tests compile, each a body of two float32
tensors: gpu/test_gpu_codegen.py checks their PTX, gpu/test_gpu_execution.py runs them on a
GPU against float64 references."""

import jitflow as jf

BODIES = {
    "elementwise": lambda x, y: [
        x + y,
        x - y,
        x * y,
        x / (jf.abs(y) + 1.0),
        jf.maximum(x, y),
        jf.minimum(x, y),
        -x,
        jf.abs(x),
        jf.square(x),
        jf.nn.relu(x),
    ],
    "transcendental": lambda x, y: [
        jf.exp(x),
        jf.log(jf.abs(x) + 1.0),
        jf.tanh(x),
        jf.sigmoid(x),
        jf.sqrt(jf.abs(x)),
        jf.rsqrt(jf.abs(x) + 1.0),
        jf.sin(x),
        jf.cos(x),
        jf.erf(x),
        jf.pow(jf.abs(x) + 1.0, y),
    ],
    "compare_select": lambda x, y: [
        jf.where(x > y, x, y),
        jf.cast(jf.logical_and(x < y, jf.not_equal(x, y)), jf.float32),
        x // (jf.abs(y) + 1.0),
        x % (jf.abs(y) + 1.0),
    ],
    "reductions": lambda x, y: [
        jf.reduce_sum(x, 1),
        jf.reduce_mean(x),
        jf.reduce_max(x, 0, keepdims=True),
        jf.reduce_min(y, [0, 1]),
        jf.reduce_prod(x * 0.1 + 1.0, 1),
    ],
    "movement": lambda x, y: [
        jf.transpose(x)[1:, ::2] * 2.0,
        jf.concat([x, y], 0) + 1.0,
        jf.reshape(x, [-1]) * 3.0,
        jf.split(x, 2, axis=1)[1] - 1.0,
        jf.stack([x, y], 1) * 1.0,
        jf.broadcast_to(x[:1], [4, 8]) + 0.5,
    ],
    "fused_chain": lambda x, y: jf.tanh(x * 1.5 + y) * 2.0,
    # Row reductions with the elementwise work around them: one row-group kernel each.
    "softmax_rows": lambda x, y: [jf.nn.softmax(x), jf.nn.log_softmax(y)],
    "cross_entropy": lambda x, y: jf.nn.softmax_cross_entropy_with_logits(labels=jf.nn.softmax(y), logits=x),
    "layer_norm": lambda x, y: (
        (x - jf.reduce_mean(x, 1, True))
        * jf.rsqrt(jf.reduce_mean(jf.square(x - jf.reduce_mean(x, 1, True)), 1, True) + 1e-5)
    ),
}
