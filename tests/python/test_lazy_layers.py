"""What `import jitflow` leaves for first use (jf.keras, jf.data, jf.distribute, jf.optimizers,
which is jf.keras.optimizers, and the checkpoint and SavedModel modules behind jf.train and
jf.saved_model): not imported by `import jitflow`, yet every name resolves as if it had been,
by whichever route a program reaches it first. Each case runs in
a fresh interpreter, since this one has imported them long ago."""
from conftest import run_in_child


def test_import_leaves_the_lazy_layers_and_graphviz_unloaded():
    out = run_in_child('''
        lazy = ("jitflow.keras", "jitflow.data", "jitflow.distribute", "jitflow.state.checkpoint",
                "jitflow.state.saved_model", "graphviz")
        report(lambda: {"loaded": sorted(m for m in sys.modules if m.startswith(lazy)),
                        "dir": [n for n in ("data", "distribute", "keras", "optimizers", "saved_model", "train")
                                if n in dir(jf)]})
    ''')
    assert out["value"] == {"loaded": [], "dir": ["data", "distribute", "keras", "optimizers", "saved_model", "train"]}


def test_lazy_names_resolve_and_work():
    out = run_in_child('''
        def run():
            layer = jf.keras.layers.Dense(2, kernel_initializer="ones")
            y = layer(jf.ones([1, 3])).numpy().tolist()
            ds = [int(x) for x in jf.data.Dataset.range(4).map(lambda x: x * 2)]
            return {"dense": y, "data": ds,
                    "optimizers": jf.optimizers is jf.keras.optimizers,
                    "adam": jf.optimizers.Adam is jf.keras.optimizers.Adam,
                    "replicas": jf.distribute.get_strategy().num_replicas_in_sync,
                    "card": int(jf.data.experimental.cardinality(jf.data.Dataset.range(5))),
                    "nn_dense": jf.nn.Dense is jf.keras.layers.Dense,
                    "train": jf.train.Checkpoint.__module__, "saved_model": jf.saved_model.save.__module__}
        report(run)
    ''')
    assert out["value"] == {"dense": [[3.0, 3.0]], "data": [0, 2, 4, 6], "optimizers": True, "adam": True,
                            "replicas": 1, "card": 5, "nn_dense": True,
                            "train": "jitflow.state.checkpoint", "saved_model": "jitflow.state.saved_model"}


def test_a_name_the_lazy_layers_export_elsewhere_resolves_first():
    # jf.nn.Dense comes from Keras and jf.nn.compute_average_loss from jf.distribute: asked for
    # before either layer was touched, the miss loads them.
    out = run_in_child('''
        report(lambda: [jf.nn.Dense.__module__, jf.nn.compute_average_loss.__module__,
                        "jitflow.keras" in sys.modules])
    ''')
    assert out["value"] == ["jitflow.keras.layers.core", "jitflow.distribute", True]


def test_importing_a_lazy_layer_directly_still_installs_its_namespaces():
    out = run_in_child('''
        import jitflow.data
        from jitflow.distribute import MirroredStrategy
        report(lambda: [int(jitflow.data.experimental.cardinality(jitflow.data.Dataset.range(3))),
                        jitflow.distribute.experimental.CommunicationOptions.__name__,
                        MirroredStrategy is jf.distribute.MirroredStrategy,
                        jf.optimizers.SGD.__name__])
    ''')
    assert out["value"] == [3, "CommunicationOptions", True, "SGD"]


def test_missing_names_keep_their_errors():
    out = run_in_child('report(lambda: jf.distribute.TPUStrategy)')
    assert out["raised"] == "AttributeError"
    assert "jitflow does not implement tf.distribute.TPUStrategy yet" in out["message"]
    out = run_in_child('report(lambda: jf.no_such_name)')
    assert out["raised"] == "AttributeError" and "has no attribute 'no_such_name'" in out["message"]
    # Private names (probes such as copy's or IPython's) do not load the lazy layers.
    out = run_in_child('''
        report(lambda: [hasattr(jf, "_repr_html_"), hasattr(jf.nn, "_probe"),
                        any(m in sys.modules for m in ("jitflow.keras", "jitflow.data"))])
    ''')
    assert out["value"] == [False, False, False]


def test_the_exported_names_are_the_same_whichever_way_the_layers_load():
    body = '''
        {touch}
        from jitflow.core import export
        ns = {{}}
        for name in list(export._EXPORTS):
            *path, leaf = name.split(".")
            mod = jf
            for p in path:
                mod = getattr(mod, p)
            ns[name] = getattr(mod, leaf) is export._EXPORTS[name]
        report(lambda: [len(ns), sorted(n for n, ok in ns.items() if not ok)])
    '''
    eager = run_in_child(body.format(touch="jf.keras, jf.data, jf.distribute, jf.train, jf.saved_model"))
    by_miss = run_in_child(body.format(touch="hasattr(jf.nn, 'not_a_name')"))
    assert eager["value"][1] == [] and by_miss["value"][1] == []
    assert eager["value"][0] == by_miss["value"][0] > 400
