"""Random programs of state and control flow, for the differential test
(autodiff/test_state_control_flow_random.py): `jf.cond`, `jf.while_loop` and AutoGraph `if`,
`for ... in tf.range` and `while` (nested, zero-trip and data-dependent loops included) over
1-3 carried tensors, variables read and assigned in branches, bodies and after them, and
TensorArrays written in loops then stacked.

A program is a small tree. `source(program)` writes it as the Python a TF 2 user would write
(against a module named `tf`, so the same text runs on jitflow or TensorFlow), and
`Reference(program)` interprets it in float64 numpy with TF 2's gradient semantics for state:
every read of a variable is a leaf of that variable (its gradient is the sum over the reads)
and an assignment is not differentiable. The reference's gradients are central differences:
each variable's perturbation is added to every one of its reads, and assignments store the
values the unperturbed run assigned, so nothing flows through them. A program whose
predicates, loop conditions, relu or maximum come within a margin of their switching point is
refused (`Reference.margin`), so float32 rounding and the differences never cross one.

Independent of jitflow and of TensorFlow: numpy only."""
import numpy as np

B, N = 2, 3  # carried tensors and inputs are [B, N]; V is [N], W is [N, N]
VAR_SHAPES = {"V": (N,), "W": (N, N)}  # float variables, differentiated
STEP = "S"  # an int32 scalar variable: a step counter read by predicates and expressions


# ---- generation -------------------------------------------------------------------------------
class _Gen:
    def __init__(self, rng):
        self.rng = rng
        self.count = 0

    def fresh(self):
        self.count += 1
        return self.count

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def const(self, lo=-0.8, hi=0.8):
        return float(np.float32(round(float(self.rng.uniform(lo, hi)), 3)))

    def chance(self, p):
        return self.rng.random() < p

    # expressions: ("t", k) | ("x", k) | ("read", v) | ("c", c) | ("i", name) | (op, ...)
    def bn(self, ctx, depth):
        """An expression of shape [B, N]."""
        if depth <= 0 or self.chance(0.25):
            return ("t", int(self.rng.integers(ctx.m))) if self.chance(0.85) else ("x", int(self.rng.integers(2)))
        kind = self.pick(["unary", "unary", "binary", "binary", "matmul", "var", "center", "counter",
                          "max", "scale_by_sum", "step"])
        sub = self.bn(ctx, depth - 1)
        if kind == "unary":
            return (self.pick(["tanh", "sin", "relu"]), sub)
        if kind == "max":
            return ("maximum", sub, self.const(-0.5, 0.5))
        if kind == "binary":
            return (self.pick(["add", "sub", "mul"]), sub, self.bn(ctx, depth - 1))
        if kind == "matmul":
            return ("matmul", sub)
        if kind == "var":
            return (self.pick(["add", "mul"]), sub, ("read", "V"))
        if kind == "center":
            return ("center", sub)
        if kind == "counter" and ctx.counters:
            return ("mul", sub, ("i", self.pick(ctx.counters)))
        if kind == "scale_by_sum":
            return ("mul", sub, ("tanh", ("sum", self.bn(ctx, depth - 1))))
        if kind == "step":
            return ("mul", sub, ("step",))
        return ("scale", sub, self.const(0.3, 1.2))

    def vexpr(self, ctx):
        """An expression of shape [N] (a value for V)."""
        kind = self.pick(["mean", "mean", "var", "mix"])
        if kind == "mean":
            return ("tanh", ("mean0", self.bn(ctx, 2)))
        if kind == "var":
            return ("tanh", ("scale", ("read", "V"), self.const(0.5, 1.5)))
        return ("tanh", ("add", ("read", "V"), ("mean0", self.bn(ctx, 1))))

    def wexpr(self, ctx):
        """An expression of shape [N, N] (a value for W)."""
        if self.chance(0.5):
            return ("tanh", ("gram", self.bn(ctx, 1)))
        return ("tanh", ("scale", ("read", "W"), self.const(0.5, 1.5)))

    def pred(self, ctx):
        if ctx.counters and self.chance(0.3):
            return ("even", self.pick(ctx.counters))
        if self.chance(0.15):
            return ("even", STEP)
        if self.chance(0.2):
            return ("gt", ("sum", ("read", "V")), self.const(-0.5, 0.5))
        return ("gt", ("sum", self.bn(ctx, 2)), self.const(-0.5, 0.5))

    def stmt(self, ctx, depth):
        kinds = ["set", "set", "set", "assign", "count"]
        if depth < 2:
            kinds += ["if", "loop", "loop", "array"]
        kind = self.pick(kinds)
        if kind == "set":
            k = int(self.rng.integers(ctx.m))
            e = self.bn(ctx, int(self.rng.integers(1, 4)))
            if self.chance(0.5):
                e = ("tanh", e)
            return ("set", k, e)
        if kind == "count":
            return ("count", int(self.rng.integers(1, 3)))
        if kind == "assign":
            var = self.pick(["V", "V", "W"])
            how = self.pick(["assign", "assign_add", "assign_sub"])
            value = self.vexpr(ctx) if var == "V" else self.wexpr(ctx)
            if how != "assign":
                value = ("scale", value, self.const(0.1, 0.4))
            return ("assign", var, how, value)
        style = "autograph" if self.chance(0.6) else "explicit"
        if kind == "if":
            return ("if", style, self.pred(ctx), self.block(ctx, depth + 1), self.block(ctx, depth + 1))
        name = f"i{self.fresh()}"
        inner = ctx.with_counter(name)
        if kind == "array":
            body = self.block(inner, depth + 1, 0, 1)
            return ("array", style, name, int(self.rng.integers(1, 4)), body,
                    self.bn(inner, 2), int(self.rng.integers(ctx.m)))
        trips = int(self.pick([0, 1, 2, 3, 3]))
        until = None
        if self.chance(0.3):  # data-dependent: also stops once sum(t_k) exceeds a bound
            until = (("sum", ("t", int(self.rng.integers(ctx.m)))), self.const(-1.0, 1.0))
            trips += 1
        loop_style = style if style == "explicit" else self.pick(["for", "for", "while"])
        if until is not None and loop_style == "for":
            loop_style = "while"
        return ("loop", loop_style, name, trips, until, self.block(inner, depth + 1))

    def block(self, ctx, depth, lo=1, hi=3):
        return [self.stmt(ctx, depth) for _ in range(int(self.rng.integers(lo, hi + 1)))]


class _Ctx:
    def __init__(self, m, counters=()):
        self.m = m
        self.counters = list(counters)

    def with_counter(self, name):
        return _Ctx(self.m, self.counters + [name])


def generate(seed):
    """A program: a dict with its carried count m, statements, loss terms, gradient sources
    and initial values (float32-representable, as float64)."""
    rng = np.random.default_rng(seed)
    g = _Gen(rng)
    m = int(rng.integers(1, 4))
    ctx = _Ctx(m)
    body = g.block(ctx, 0, 2, 4)
    loss = [(k, g.const(0.3, 1.0)) for k in range(m)]
    # x1 is a row in some programs: broadcast against [B, N], its dim 1 unknown when traced
    # with an all-None input_signature.
    values = {
        "x0": rng.uniform(-1, 1, (B, N)), "x1": rng.uniform(-1, 1, (1 if rng.random() < 0.3 else B, N)),
        "V": rng.uniform(-0.8, 0.8, (N,)), "W": rng.uniform(-0.6, 0.6, (N, N))}
    values = {k: v.astype(np.float32).astype(np.float64) for k, v in values.items()}
    values[STEP] = np.int32(rng.integers(0, 3))
    return {"seed": seed, "m": m, "body": body, "loss": loss, "read_after": g.chance(0.5),
            "sources": g.pick(["all", "all", "inputs", "variables"]), "values": values}


# ---- source --------------------------------------------------------------------------------------
_UNARY = {"tanh": "tf.tanh", "sin": "tf.sin", "relu": "tf.nn.relu"}
_BINARY = {"add": "+", "sub": "-", "mul": "*"}


def _expr(e):
    op = e[0]
    if op == "t":
        return f"t{e[1]}"
    if op == "x":
        return f"x{e[1]}"
    if op == "read":
        return e[1]
    if op == "c":
        return repr(e[1])
    if op == "i":
        return f"(tf.cast({e[1]}, tf.float32) * 0.25)"
    if op == "step":
        return f"(tf.cast({STEP}, tf.float32) * 0.1)"
    if op in _UNARY:
        return f"{_UNARY[op]}({_expr(e[1])})"
    if op in _BINARY:
        return f"({_expr(e[1])} {_BINARY[op]} {_expr(e[2])})"
    if op == "maximum":
        return f"tf.maximum({_expr(e[1])}, {e[2]!r})"
    if op == "scale":
        return f"({_expr(e[1])} * {e[2]!r})"
    if op == "matmul":
        return f"(tf.matmul({_expr(e[1])}, W) * 0.5)"
    if op == "center":
        a = _expr(e[1])
        return f"({a} - tf.reduce_mean({a}, axis=0))"
    if op == "mean0":
        return f"tf.reduce_mean({_expr(e[1])}, axis=0)"
    if op == "sum":
        return f"tf.reduce_sum({_expr(e[1])})"
    if op == "gram":
        a = _expr(e[1])
        return f"(tf.matmul({a}, {a}, transpose_a=True) * 0.2)"
    raise ValueError(op)


def _pred(p):
    if p[0] == "even":
        return f"({p[1]} % 2 == 0)"
    return f"({_expr(p[1])} > {p[2]!r})"


class _Writer:
    def __init__(self, m):
        self.lines = []
        self.m = m
        self.ts = ", ".join(f"t{k}" for k in range(m))

    def emit(self, ind, text):
        self.lines.append("    " * ind + text)

    def block(self, stmts, ind):
        for s in stmts:
            self.stmt(s, ind)

    def stmt(self, s, ind):
        kind = s[0]
        if kind == "set":
            self.emit(ind, f"t{s[1]} = {_expr(s[2])}")
        elif kind == "count":
            self.emit(ind, f"{STEP}.assign_add({s[1]})")
        elif kind == "assign":
            self.emit(ind, f"{s[1]}.{s[2]}({_expr(s[3])})")
        elif kind == "if":
            self._if(s, ind)
        elif kind == "loop":
            self._loop(s, ind)
        elif kind == "array":
            self._array(s, ind)

    def _if(self, s, ind):
        _, style, pred, then, other = s
        if style == "autograph":
            self.emit(ind, f"if {_pred(pred)}:")
            self.block(then, ind + 1)
            self.emit(ind + 1, "pass")
            self.emit(ind, "else:")
            self.block(other, ind + 1)
            self.emit(ind + 1, "pass")
            return
        n = len(self.lines)
        for name, stmts in (("then", then), ("else", other)):
            self.emit(ind, f"def {name}_{n}({self.ts}):")
            self.block(stmts, ind + 1)
            self.emit(ind + 1, f"return [{self.ts}]")
        self.emit(ind, f"[{self.ts}] = tf.cond({_pred(pred)}, lambda: then_{n}({self.ts}), "
                       f"lambda: else_{n}({self.ts}))")

    def _loop(self, s, ind):
        _, style, i, trips, until, body = s
        test = f"{i} < {trips}"
        if until is not None:
            test = f"{test} and {_expr(until[0])} < {until[1]!r}"
        if style == "for":
            self.emit(ind, f"for {i} in tf.range({trips}):")
            self.block(body, ind + 1)
            self.emit(ind + 1, "pass")
        elif style == "while":
            self.emit(ind, f"{i} = tf.constant(0)")
            self.emit(ind, f"while {test}:")
            self.block(body, ind + 1)
            self.emit(ind + 1, f"{i} += 1")
        else:
            if until is not None:
                test = f"tf.logical_and({i} < {trips}, {_expr(until[0])} < {until[1]!r})"
            self.emit(ind, f"def cond_{i}({i}, {self.ts}):")
            self.emit(ind + 1, f"return {test}")
            self.emit(ind, f"def body_{i}({i}, {self.ts}):")
            self.block(body, ind + 1)
            self.emit(ind + 1, f"return [{i} + 1, {self.ts}]")
            self.emit(ind, f"[_, {self.ts}] = tf.while_loop(cond_{i}, body_{i}, [tf.constant(0), {self.ts}])")

    def _array(self, s, ind):
        _, style, i, size, body, value, k = s
        ta = f"ta_{i}"
        self.emit(ind, f"{ta} = tf.TensorArray(tf.float32, size={size})")
        if style == "autograph":
            self.emit(ind, f"for {i} in tf.range({size}):")
            self.block(body, ind + 1)
            self.emit(ind + 1, f"{ta} = {ta}.write({i}, {_expr(value)})")
        else:
            self.emit(ind, f"def body_{i}({i}, {ta}, {self.ts}):")
            self.block(body, ind + 1)
            self.emit(ind + 1, f"return [{i} + 1, {ta}.write({i}, {_expr(value)}), {self.ts}]")
            self.emit(ind, f"[_, {ta}, {self.ts}] = tf.while_loop(lambda {i}, *_: {i} < {size}, body_{i}, "
                           f"[tf.constant(0), {ta}, {self.ts}])")
        self.emit(ind, f"t{k} = t{k} + tf.reduce_mean({ta}.stack(), axis=0) * 0.5")


def source(p):
    """Python source defining build(tf, V, W, S) -> prog(x0, x1) -> (loss, [t0, ...])."""
    w = _Writer(p["m"])
    w.emit(0, f"def build(tf, V, W, {STEP}):")
    w.emit(1, "def prog(x0, x1):")
    inits = ["x0", "x1", "x0 * x1"]
    for k in range(p["m"]):
        w.emit(2, f"t{k} = {inits[k]}")
    w.block(p["body"], 2)
    terms = [f"tf.reduce_sum(t{k} * {c!r})" for k, c in p["loss"]] + ["tf.reduce_sum(tf.square(t0)) * 0.1"]
    if p["read_after"]:
        terms.append("tf.reduce_sum(V * t0) * 0.5")
    w.emit(2, f"loss = {' + '.join(terms)}")
    w.emit(2, f"return loss, [{w.ts}]")
    w.emit(1, "return prog")
    return "\n".join(w.lines) + "\n"


# ---- reference -----------------------------------------------------------------------------------
class Reference:
    """The program in float64 numpy. run(values, deltas, frozen) -> (loss, ts, variables):
    deltas are added to every read of each variable; with `frozen` (the assignments of an
    unperturbed run, in order) assignments store those values instead of computing them."""

    def __init__(self, p):
        self.p = p
        self.margin = np.inf  # smallest distance of a predicate, relu or maximum to its switch

    def _note(self, distance):
        self.margin = min(self.margin, float(np.min(np.abs(distance))))

    def run(self, values, deltas=None, frozen=None):
        self.vars = {k: np.array(values[k], np.float64) for k in VAR_SHAPES}
        self.vars[STEP] = int(values[STEP])
        self.deltas = deltas or {}
        self.frozen = frozen
        self.assigned = []
        env = {"x0": np.array(values["x0"]), "x1": np.array(values["x1"])}
        inits = [env["x0"], env["x1"], env["x0"] * env["x1"]]
        for k in range(self.p["m"]):
            env[f"t{k}"] = inits[k]
        self.block(self.p["body"], env)
        loss = sum(np.sum(env[f"t{k}"] * c) for k, c in self.p["loss"]) + np.sum(env["t0"] ** 2) * 0.1
        if self.p["read_after"]:
            loss = loss + np.sum(self.read("V") * env["t0"]) * 0.5
        return loss, [env[f"t{k}"] for k in range(self.p["m"])], dict(self.vars)

    def read(self, v):
        d = self.deltas.get(v)
        return self.vars[v] if d is None else self.vars[v] + d

    def expr(self, e, env):
        op = e[0]
        if op == "t":
            return env[f"t{e[1]}"]
        if op == "x":
            return env[f"x{e[1]}"]
        if op == "read":
            return self.read(e[1])
        if op == "i":
            return float(env[e[1]]) * 0.25
        if op == "step":
            return float(self.vars[STEP]) * 0.1
        if op == "tanh":
            return np.tanh(self.expr(e[1], env))
        if op == "sin":
            return np.sin(self.expr(e[1], env))
        if op == "relu":
            a = self.expr(e[1], env)
            self._note(a)
            return np.maximum(a, 0)
        if op in _BINARY:
            a, b = self.expr(e[1], env), self.expr(e[2], env)
            return a + b if op == "add" else a - b if op == "sub" else a * b
        if op == "maximum":
            a = self.expr(e[1], env)
            self._note(a - e[2])
            return np.maximum(a, e[2])
        if op == "scale":
            return self.expr(e[1], env) * e[2]
        if op == "matmul":
            return self.expr(e[1], env) @ self.read("W") * 0.5
        if op == "center":
            a = self.expr(e[1], env)
            return a - a.mean(axis=0)
        if op == "mean0":
            return self.expr(e[1], env).mean(axis=0)
        if op == "sum":
            return np.sum(self.expr(e[1], env))
        if op == "gram":
            a = self.expr(e[1], env)
            return a.T @ a * 0.2
        raise ValueError(op)

    def pred(self, p, env):
        if p[0] == "even":
            return int(self.vars[STEP] if p[1] == STEP else env[p[1]]) % 2 == 0
        a = self.expr(p[1], env)
        self._note(a - p[2])
        return bool(a > p[2])

    def block(self, stmts, env):
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s, env):
        kind = s[0]
        if kind == "set":
            env[f"t{s[1]}"] = self.expr(s[2], env)
        elif kind == "count":
            self.vars[STEP] += s[1]
        elif kind == "assign":
            _, v, how, value = s
            new = self.expr(value, env)
            new = new if how == "assign" else self.vars[v] + new if how == "assign_add" else self.vars[v] - new
            if self.frozen is not None:
                new = self.frozen[len(self.assigned)]
            self.assigned.append(new)
            self.vars[v] = new
        elif kind == "if":
            _, _, pred, then, other = s
            self.block(then if self.pred(pred, env) else other, env)
        elif kind == "loop":
            _, _, i, trips, until, body = s
            env[i] = 0
            while env[i] < trips:
                if until is not None:
                    a = self.expr(until[0], env)
                    self._note(a - until[1])
                    if not a < until[1]:
                        break
                self.block(body, env)
                env[i] += 1
        elif kind == "array":
            _, _, i, size, body, value, k = s
            rows = []
            for step in range(size):
                env[i] = step
                self.block(body, env)
                rows.append(self.expr(value, env))
            env[f"t{k}"] = env[f"t{k}"] + np.mean(rows, axis=0) * 0.5

    def gradients(self, eps=1e-6):
        """Central differences of the loss w.r.t. x0, x1 and each variable's reads."""
        values = self.p["values"]
        self.run(values)
        frozen = list(self.assigned)
        out = {}
        for name in ("x0", "x1", "V", "W"):
            base = values[name]
            g = np.zeros_like(base)
            for idx in np.ndindex(base.shape):
                g[idx] = (self._loss_at(name, idx, eps, frozen) - self._loss_at(name, idx, -eps, frozen)) / (2 * eps)
            out[name] = g
        return out

    def _loss_at(self, name, idx, step, frozen):
        """The loss with element idx of input `name` moved by step (of every read, for a variable)."""
        values = self.p["values"]
        d = np.zeros_like(values[name])
        d[idx] = step
        if name in VAR_SHAPES:
            return self.run(values, {name: d}, frozen)[0]
        return self.run({**values, name: values[name] + d}, None, frozen)[0]


# ---- static shapes -------------------------------------------------------------------------------
def _broadcast_dim(a, b):
    """TF's shape inference of one broadcast dim (None: unknown)."""
    if a is None and b is None:
        return None
    if a is None:
        return None if b == 1 else b
    if b is None:
        return None if a == 1 else a
    return b if a == 1 else a


def _broadcast(a, b):
    a, b = list(a), list(b)
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    return tuple(_broadcast_dim(x, y) for x, y in zip(a, b))


class _Shapes:
    """The static shapes TF infers for a program traced with inputs of the given shapes, and
    whether each loop keeps its carried tensors' shapes (TF 2, AutoGraph's and tf.while_loop's
    rule: the shape after one iteration must be at least as specific as the shape before the
    loop)."""

    def __init__(self, p, inputs):
        self.p = p
        self.inputs = inputs
        self.stable = True

    def expr(self, e, env):
        op = e[0]
        if op == "t":
            return env[f"t{e[1]}"]
        if op == "x":
            return self.inputs[e[1]]
        if op == "read":
            return VAR_SHAPES[e[1]]
        if op in ("c", "i", "sum", "step"):
            return ()
        if op in ("tanh", "sin", "relu", "scale", "maximum", "center"):
            return self.expr(e[1], env)
        if op in _BINARY:
            return _broadcast(self.expr(e[1], env), self.expr(e[2], env))
        if op == "matmul":
            return (self.expr(e[1], env)[0], N)
        if op == "mean0":
            return self.expr(e[1], env)[1:]
        if op == "gram":
            a = self.expr(e[1], env)
            return (a[1], a[1])
        raise ValueError(op)

    def block(self, stmts, env):
        for s in stmts:
            self.stmt(s, env)

    def loop(self, body, env):
        entry = dict(env)
        self.block(body, env)
        for k, before in entry.items():
            after = env[k]
            if any(b is not None and a != b for a, b in zip(after, before)):
                self.stable = False
        env.update(entry)

    def stmt(self, s, env):
        kind = s[0]
        if kind == "set":
            env[f"t{s[1]}"] = self.expr(s[2], env)
        elif kind == "if":
            then, other = dict(env), dict(env)
            self.block(s[3], then)
            self.block(s[4], other)
            for k in env:
                env[k] = tuple(a if a == b else None for a, b in zip(then[k], other[k]))
        elif kind == "loop":
            self.loop(s[5], env)
        elif kind == "array":
            _, _, _, _, body, value, k = s
            inner = dict(env)
            self.block(body, inner)
            element = self.expr(value, inner)
            self.loop(body, env)
            key = f"t{k}"
            env[key] = _broadcast(env[key], element)


def shapes_stable(p):
    """Whether TF traces p, with its inputs' shapes and with unknown dims, without a loop
    changing a shape."""
    for inputs in ([p["values"]["x0"].shape, p["values"]["x1"].shape], [(None, None)] * 2):
        inputs = [tuple(i) for i in inputs]
        s = _Shapes(p, inputs)
        env = {"t0": inputs[0], "t1": inputs[1], "t2": _broadcast(*inputs)}
        env = {k: v for k, v in env.items() if int(k[1]) < p["m"]}
        s.block(p["body"], env)
        if not s.stable:
            return False
    return True
