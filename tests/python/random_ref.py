"""A numpy reference of Philox 4x32-10 and of TF's conversions of its words into samples, for
the random tests (ops/test_random_philox.py, state/test_random_generator.py, op_rows.py):
written from the Random123 paper and TF's kernels' documented layout, independent of
jitflow's C++."""
import numpy as np

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
SEED_KEY = (0x3EC8F720, 0x02461E29)
_U32 = np.uint64(0xFFFFFFFF)


def philox(counters, key, rounds=10):
    """Blocks for an array [n, 4] of 32-bit counter words under a (k0, k1) key: [n, 4] uint32."""
    c = [np.asarray(counters, np.uint64)[:, j] for j in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(rounds):
        p0 = c[0] * np.uint64(M0)
        p1 = c[2] * np.uint64(M1)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _U32, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _U32]
        k0 = (k0 + np.uint64(W0)) & _U32
        k1 = (k1 + np.uint64(W1)) & _U32
    return np.stack(c, 1).astype(np.uint32)


def from_seed(s0, s1):
    """TF's StatelessRandomGetKeyCounter as jitflow's int64[3] state (ctr_lo, ctr_hi, key)."""
    s0, s1 = int(s0) & (2**64 - 1), int(s1) & (2**64 - 1)
    m = [int(w) for w in philox([[s0 & 0xFFFFFFFF, s0 >> 32, s1 & 0xFFFFFFFF, s1 >> 32]], SEED_KEY)[0]]
    return np.array([0, m[2] | m[3] << 32, m[0] | m[1] << 32], np.uint64).view(np.int64)


def blocks(state, first, n):
    """n blocks of the stream of an int64[3] state, starting at block `first`: [n, 4] uint32."""
    lo, hi, key = (int(v) & (2**64 - 1) for v in state)
    rows = []
    for b in range(first, first + n):
        c_lo = (lo + b) & (2**64 - 1)
        c_hi = (hi + (c_lo < lo)) & (2**64 - 1)
        rows.append([c_lo & 0xFFFFFFFF, c_lo >> 32, c_hi & 0xFFFFFFFF, c_hi >> 32])
    if not rows:
        return np.zeros((0, 4), np.uint32)
    return philox(rows, (key & 0xFFFFFFFF, key >> 32))


def words(state, n_words, first_block=0):
    return blocks(state, first_block, -(-n_words // 4)).reshape(-1)[:n_words]


def to_float(x):
    return ((np.asarray(x, np.uint32) & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)


def to_double(x0, x1):
    x0, x1 = np.asarray(x0, np.uint64), np.asarray(x1, np.uint64)
    return ((np.uint64(1023) << np.uint64(52)) | ((x0 & np.uint64(0xFFFFF)) << np.uint64(32)) | x1).view(np.float64) - 1.0


def uniform(state, n, dtype):
    if dtype == np.float32:
        return to_float(words(state, n))
    w = words(state, 2 * n)
    return to_double(w[0::2], w[1::2])


def bits(state, n, dtype):
    if np.dtype(dtype).itemsize == 4:
        return words(state, n).view(np.int32).astype(dtype)
    w = words(state, 2 * n).astype(np.uint64)
    return (w[0::2] | (w[1::2] << np.uint64(32))).view(np.int64)


def uniform_int(state, n, lo, hi, dtype):
    """lo + bits mod (hi - lo), in the unsigned type of dtype's width."""
    width = 8 * np.dtype(dtype).itemsize
    mask = 2**width - 1
    b = bits(state, n, dtype).astype(np.int64 if width == 64 else np.int32)
    rng = (int(hi) - int(lo)) & mask
    out = [((int(x) & mask) % rng + int(lo)) & mask for x in b]
    return np.array(out, np.uint64 if width == 64 else np.uint32).view(dtype)


def _box_muller32(x0, x1):
    u1 = np.maximum(to_float(x0), np.float32(1e-7))
    v1 = (2 * np.pi * to_float(x1).astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2) * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


def _box_muller64(x0, x1, x2, x3):
    u1 = np.maximum(to_double(x0, x1), 1e-7)
    v1 = 2 * np.pi * to_double(x2, x3)
    u2 = np.sqrt(-2 * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


def normal(state, n, dtype):
    if dtype == np.float32:
        w = words(state, 2 * (-(-n // 2)))
        a, b = _box_muller32(w[0::2], w[1::2])
    else:
        w = words(state, 4 * (-(-n // 2)))
        a, b = _box_muller64(w[0::4], w[1::4], w[2::4], w[3::4])
    return np.stack([a, b], 1).reshape(-1)[:n]


def truncated_normal(state, n, dtype):
    """Group g of outputs (4 floats / 2 doubles) takes the first |z| < 2 normals of its own
    stretch of 256 words per output (TF's reservation)."""
    g = 4 if dtype == np.float32 else 2
    out = []
    for start in range(0, n, g):
        first = (start // g) * g * 64
        acc, j = [], 0
        while len(acc) < g:
            bl = blocks(state, first + j, 1)[0]
            pairs = [_box_muller32(bl[0:1], bl[1:2]), _box_muller32(bl[2:3], bl[3:4])] if g == 4 else \
                [_box_muller64(*[bl[k:k + 1] for k in range(4)])]
            for a, b in pairs:
                acc += [v for v in (a[0], b[0]) if abs(v) < 2]
            j += 1
        out += acc[:g]
    return np.array(out[:n], dtype)


def shuffle(state, x):
    """Fisher-Yates over the first dim, j from 64 bits of output i of the stream."""
    x = np.array(x, copy=True)
    n = x.shape[0] if x.ndim else 0
    b = bits(state, max(n, 1), np.int64).view(np.uint64)
    for i in range(n - 1, 0, -1):
        j = int(b[i] % np.uint64(i + 1))
        x[[i, j]] = x[[j, i]]
    return x


# TF's RandomIndexShuffle (kernels/random_index_shuffle.cc): a 4-round Simon cipher on blocks
# of 2W bits, keyed by the low W bits of the three seed words, walked until it lands in
# [0, max_index]. jitflow folds in the seed bits TF drops, so this matches it only when TF's
# key sees every bit (index_shuffle_tf_exact).
INDEX_SHUFFLE_PAD = 498247692  # the word TF's python wrapper puts before a [2] seed


def _simon_width(max_index):
    """Half of TF's block size: ceil(log2(max_index)) rounded up to even, at least 16 bits.
    jitflow widens it when max_index is a power of two the block cannot hold (TF's block then
    drops max_index's top bit and is no bijection)."""
    b = 0 if max_index <= 1 else int(np.ceil(np.log2(float(max_index))))
    b = max(b + b % 2, 16)
    while b < 64 and max_index >= 1 << b:
        b += 2
    return b // 2


def index_shuffle_tf_exact(seed3, max_index):
    """Whether TF's key sees every bit of the seed (then jitflow's permutation is TF's)."""
    lim = 1 << min(_simon_width(max_index), 32)
    s = [int(v) & (2**64 - 1) for v in seed3]
    return s[0] < 2**32 and s[1] < lim and s[2] < lim


def index_shuffle(index, seed3, max_index):
    """TF's permutation of [0, max_index] at `index` for an [3] seed (TF's, bit for bit)."""
    if max_index == 0:
        return 0
    w = _simon_width(max_index)
    mask = (1 << w) - 1

    def rotl(x, r):
        return ((x << r) | (x >> (w - r))) & mask

    def f(x):
        return (rotl(x, 1) & rotl(x, 8)) ^ rotl(x, 2)

    rk = [(int(v) & 0xFFFFFFFF) & mask for v in seed3]
    c, z = 0xFFFFFFFC & mask, 0x7369F885192C0EF5 & mask
    rk.append(c ^ (z & 1) ^ rk[0] ^ (((rk[2] >> 3) | (rk[2] << (w - 3))) & mask)
              ^ (((rk[2] >> 4) | (rk[2] << (w - 4))) & mask))
    x = int(index)
    while True:
        left, right = (x >> w) & mask, x & mask
        for i in (0, 2):
            left ^= f(right)
            left ^= rk[i]
            right ^= f(left)
            right ^= rk[i + 1]
        x = left << w | right
        if x <= max_index:
            return x
