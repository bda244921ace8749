"""jf.Module: names, name scopes in op names, discovery of variables and submodules
through attributes, lists, tuples and dicts, jf.function methods, and the layers and
optimizers as modules. Expected orders and names are what TF 2.21's tf.Module printed for the
same programs."""
import numpy as np
import pytest

import jitflow as jf


class MyMLPModule(jf.Module):
    pass


class _Leaf(jf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.w = jf.Variable(1.0, name="w")
        self.nt = jf.Variable(2.0, trainable=False, name="nt")


class _Tree(jf.Module):
    def __init__(self):
        super().__init__()
        self.z_a = _Leaf("za")
        self.layers = [_Leaf("l0"), _Leaf("l1")]
        self.d = {"b": _Leaf("db"), "a": _Leaf("da")}
        self.t = (jf.Variable(3.0, name="t0"),)
        self.shared = self.z_a.w
        self.b_var = jf.Variable(4.0, name="bv")
        self.none, self.num, self.text = None, 3, "not state"


def test_default_name_is_snake_case_and_scope_is_absolute():
    m = MyMLPModule()
    assert m.name == "my_mlp_module"
    assert m.name_scope.name == "my_mlp_module/"
    assert MyMLPModule().name == "my_mlp_module"  # tf.Module does not make names unique
    assert jf.Module(name="x_1").name == "x_1"
    with m.name_scope as scope:
        assert scope == "my_mlp_module/"


@pytest.mark.parametrize("bad", ["a b", "1x", "", "a/b", 3])
def test_invalid_names_raise_tfs_valueerror(bad):
    with pytest.raises(ValueError, match="is not a valid module name. Module names must be valid Python"):
        jf.Module(name=bad)


def test_discovery_order_matches_tf():
    t = _Tree()
    # TF 2.21: own attributes sorted by name first (b_var, shared, t), then submodules in the
    # order found (d by sorted key, layers, z_a), each object once (z_a.w is `shared`).
    assert [v.name for v in t.variables] == ["bv:0", "w:0", "t0:0", "nt:0", "w:0", "nt:0", "w:0",
                                             "nt:0", "w:0", "nt:0", "w:0", "nt:0"]
    assert t.variables[1] is t.z_a.w and t.variables[2] is t.t[0]
    assert [v.name for v in t.trainable_variables] == ["bv:0", "w:0", "t0:0", "w:0", "w:0", "w:0", "w:0"]
    assert [v.name for v in t.non_trainable_variables] == ["nt:0"] * 5
    assert [s.name for s in t.submodules] == ["da", "db", "l0", "l1", "za"]
    assert isinstance(t.variables, tuple) and isinstance(t.submodules, tuple)
    paths = [p for p, _ in t._flatten(with_path=True, predicate=lambda x: isinstance(x, jf.Variable))]
    assert paths == [("b_var",), ("shared",), ("t", 0), ("d", "a", "nt"), ("d", "a", "w"), ("d", "b", "nt"),
                     ("d", "b", "w"), ("layers", 0, "nt"), ("layers", 0, "w"), ("layers", 1, "nt"),
                     ("layers", 1, "w"), ("z_a", "nt"), ("z_a", "w")]


def test_shared_variables_and_modules_counted_once_and_cycles_end():
    leaf = _Leaf("leaf")
    m = jf.Module(name="m")
    m.a, m.b, m.c = leaf, [leaf, leaf], {"k": leaf.w}
    m.self_ref = m
    leaf.parent = m  # a cycle back to the root
    assert len(m.variables) == 2 and {id(v) for v in m.variables} == {id(leaf.w), id(leaf.nt)}
    assert m.submodules == (leaf,)


def test_nested_tuples_dicts_lists_and_namedtuples():
    import collections
    Pair = collections.namedtuple("Pair", "x y")
    m = jf.Module(name="m")
    v1, v2, v3 = jf.Variable(1.0), jf.Variable(2.0), jf.Variable(3.0)
    m.deep = {"z": [v3], "a": (Pair(v1, {"q": v2}),)}
    assert m.variables == (v1, v2, v3)


def test_unsortable_dict_keys_raise_valueerror_naming_the_attribute():
    m = jf.Module(name="m")
    m.bad = {1: jf.Variable(1.0), "a": jf.Variable(2.0)}
    with pytest.raises(ValueError, match="Error processing property 'bad'"):
        m.variables  # noqa: B018


def test_module_scope_nests_submodules_and_variable_names():
    class Net(jf.Module):
        def __init__(self):
            super().__init__()
            with self.name_scope:
                self.sub = jf.Module(name="sub")
                self.w = jf.Variable(1.0, name="w")
            self.outside = jf.Variable(1.0, name="o")

    n = Net()
    assert n.sub.name_scope.name == "net/sub/"  # TF 2.21 prints net/sub/
    assert n.w.name == "net/w:0" and n.outside.name == "o:0"


class _Scoped(jf.Module):
    @jf.Module.with_name_scope
    def __call__(self, x):
        """Docstring kept."""
        return jf.identity(x)

    @jf.function
    def f(self, x):
        with self.name_scope:
            y = x * 2.0
        return y + 1.0


def test_name_scopes_in_traced_op_names():
    c = _Scoped(name="c")

    @jf.function
    def g(x):
        return c(x) + c(x)

    names = [op.name for op in g.get_concrete_function(jf.TensorSpec([2])).graph.get_operations()]
    # TF 2.21: ['x', 'c/Identity', 'c/Identity_1', 'add', 'Identity'] -- the module's scope is
    # absolute, so the second call reuses it and only the op name is made unique.
    assert names[:3] == ["x", "c/Identity", "c/Identity_1"]
    assert not any(n.startswith("c_1/") for n in names) and not names[3].startswith("c/")
    names = [op.name for op in c.f.get_concrete_function(jf.TensorSpec([2])).graph.get_operations()]
    assert "c/Mul" in names and "AddV2" in names  # only the ops built under the scope carry it
    np.testing.assert_allclose(g(jf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])


def test_with_name_scope_keeps_the_method_and_runs_eagerly():
    c = _Scoped(name="c")
    assert _Scoped.__call__.__name__ == "__call__" and _Scoped.__call__.__doc__ == "Docstring kept."
    np.testing.assert_allclose(c(jf.constant([3.0])).numpy(), [3.0])


class _Lazy(jf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.w = None
        self.calls = 0

    @jf.function
    def __call__(self, x):
        self.calls += 1  # counts traces: Python runs only while tracing
        if self.w is None:
            self.w = jf.Variable(jf.ones([x.shape[-1]]) * 2.0, name="w")
        return x * self.w


def test_function_method_traces_once_per_instance_and_captures_variables():
    a, b = _Lazy("a"), _Lazy("b")
    x = jf.constant([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_allclose(a(x).numpy(), [2.0, 4.0])
    b.__call__  # noqa: B018  (b's own function: a's trace is not reused)
    np.testing.assert_allclose(b(x).numpy(), [2.0, 4.0])
    # Two traces each, on the first call, as TF: the first created w, so it is traced again
    # (where a variable created on every call would be refused).
    assert a.calls == 2 and b.calls == 2
    assert a.w is not b.w and a.variables == (a.w,)
    a.w.assign([5.0, 5.0])  # the trace captured the variable, not its value
    np.testing.assert_allclose(a(x).numpy(), [5.0, 10.0])
    np.testing.assert_allclose(b(x).numpy(), [2.0, 4.0])
    assert a.calls == 2 and a.__call__.experimental_get_tracing_count() == 2


def test_layers_are_modules_with_kerass_names_and_weight_order(rng):
    d1, d2 = jf.nn.Dense(3, name="first"), jf.nn.Dense(3)
    assert isinstance(d1, jf.Module) and d1.name == "first"
    assert d2.name.startswith("dense")
    d3 = jf.nn.Dense(3)
    assert d3.name != d2.name  # Keras makes layer names unique: dense, dense_1, ...
    assert d2.variables == [] and d2.trainable_variables == []
    d2(rng.normal(size=(2, 4)).astype(np.float32))
    # Keras's creation order; TF names a Keras layer's variables by the layer's scope
    assert [v.name for v in d2.variables] == [f"{d2.name}/kernel:0", f"{d2.name}/bias:0"]
    assert d2.weights == d2.trainable_variables == [d2.kernel, d2.bias]
    cell = jf.nn.LSTMCell(2)
    assert isinstance(cell, jf.Module)
    cell(jf.ones([1, 3]), cell.get_initial_state(1))
    assert [v.name for v in cell.trainable_variables] == [
        f"{cell.name}/kernel:0", f"{cell.name}/recurrent_kernel:0", f"{cell.name}/bias:0"]


def test_optimizers_are_modules_whose_variables_include_slots():
    v = jf.Variable([1.0, 2.0], name="v")
    opt = jf.optimizers.Adam(0.1)
    assert isinstance(opt, jf.Module) and opt.name == "Adam"
    opt.apply_gradients([(jf.constant([1.0, 1.0]), v)])
    m, s = opt.get_slot(v, "m"), opt.get_slot(v, "v")
    assert isinstance(m, jf.Variable) and m.name == "Adam/v/m:0" and s.name == "Adam/v/v:0"
    assert opt.variables == [opt.iterations, m, s]
    assert opt._slot_variables() == [(v, "m", m), (v, "v", s)]
    assert jf.optimizers.SGD(0.1, name="my-sgd").name == "my-sgd"  # Keras accepts any name


class _MLP(jf.Module):
    def __init__(self):
        super().__init__()
        self.layers = [jf.nn.Dense(8, activation="tanh", seed=3), jf.nn.Dense(1, seed=4)]

    @jf.Module.with_name_scope
    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _train(step_fn, model, opt, x, y, n):
    losses = []
    for _ in range(n):
        losses.append(float(step_fn(model, opt, x, y)))
    return losses


def _step(model, opt, x, y):
    with jf.GradientTape() as tape:
        loss = jf.reduce_mean(jf.square(model(x) - y))
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


def test_module_mlp_trains_in_a_function_step_like_eager(rng):
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
    eager_model, eager_opt = _MLP(), jf.optimizers.Adam(0.05)
    fn_model, fn_opt = _MLP(), jf.optimizers.Adam(0.05)
    step = jf.function(_step)
    eager = _train(_step, eager_model, eager_opt, x, y, 12)
    traced = _train(step, fn_model, fn_opt, x, y, 12)
    np.testing.assert_allclose(traced, eager, rtol=2e-5)
    assert traced[-1] < 0.5 * traced[0]
    assert step.experimental_get_tracing_count() == 2  # TF's: the first call created the weights
    assert len(fn_model.trainable_variables) == 4 and len(fn_model.submodules) == 2
    assert int(fn_opt.iterations.numpy()) == 12


def test_module_scope_entered_by_concurrent_traces():
    import threading
    m = _Scoped(name="c")
    barrier = threading.Barrier(4)
    names, errors = [], []

    def work(i):
        try:
            barrier.wait()
            f = jf.function(lambda x: m(x) * 2.0)
            names.append([op.name for op in f.get_concrete_function(jf.TensorSpec([i + 1])).graph.get_operations()])
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # Each trace has its own scope stack: the op after the module call is outside it.
    assert all(n[1] == "c/Identity" and not n[-1].startswith("c/") for n in names) and len(names) == 4


def test_eager_name_scopes_nest_and_name_variables_and_modules():
    # TF 2.21 printed each of these values for the same program.
    with jf.name_scope("a") as s1:
        with jf.name_scope("b") as s2:
            assert (s1, s2, jf.get_current_name_scope()) == ("a/", "a/b/", "a/b")
            assert jf.Variable(1.0, name="w").name == "a/b/w:0"
            m = jf.Module(name="m")
            assert m.name_scope.name == "a/b/m/"
            with m.name_scope as s3:
                assert (s3, jf.get_current_name_scope()) == ("a/b/m/", "a/b/m")
        with jf.name_scope("b") as s4:
            assert s4 == "a/b/"  # eager scopes are not made unique
        with jf.name_scope("abs/") as s5:
            assert (s5, jf.get_current_name_scope()) == ("abs/", "abs")
        with jf.name_scope("") as s6:
            assert (s6, jf.get_current_name_scope()) == ("", "")
    assert jf.get_current_name_scope() == ""
    for bad in (None, 3):
        with pytest.raises(ValueError, match="name for name_scope must be a string"):
            jf.name_scope(bad)


def test_a_trace_starts_at_the_root_scope():
    seen = []

    def f(x):
        seen.append(jf.get_current_name_scope())
        with jf.name_scope("t") as s:
            seen.append(s)
            y = x + 1.0
        return y

    with jf.name_scope("outer"):
        cf = jf.function(f, autograph=False).get_concrete_function(jf.TensorSpec([]))
    assert seen == ["", "t/"]  # TF 2.21: the function graph does not inherit the eager scope
    assert [op.name for op in cf.graph.get_operations()][-1] == "t/AddV2"


def test_variables_in_any_container_tf_nest_walks_are_found():
    # Module walks its attributes with jf.nest's one traversal (TF's flatten_with_tuple_paths),
    # so a Mapping that is not a dict and a non-list Sequence hold variables too.
    import collections
    import types

    class Holder(jf.Module):
        def __init__(self):
            super().__init__()
            self.table = types.MappingProxyType({"w": jf.Variable(1.0, name="w")})
            self.queue = collections.deque([jf.Variable(2.0, name="q")])

    h = Holder()
    assert sorted(v.name for v in h.variables) == ["q:0", "w:0"]
    assert sorted(v.name for v in h.trainable_variables) == ["q:0", "w:0"]
