"""jitflow's public names. Each public function or class says where it appears
(`@export("exp", "math.exp")`, as TF's tf_export), elementwise op wrappers are made from the op
records (cpp/ir/ops.def), and `install` builds the package's namespaces from that one table.
A TensorFlow name that jitflow lacks raises an AttributeError saying so."""
import sys
import types

from .tf_names import TF_NAMES

_EXPORTS = {}  # "math.exp" -> the object
_TF = {ns: frozenset(names.split()) for ns, names in TF_NAMES.items()}


def export(*names):
    """Decorator: publishes the object as `jitflow.<name>` for each name ("exp", "math.exp")."""
    def wrap(obj):
        for n in names:
            if _EXPORTS.get(n, obj) is not obj:
                raise KeyError(f"jitflow.{n} is exported twice ({_EXPORTS[n]!r} and {obj!r})")
            _EXPORTS[n] = obj
        return obj
    return wrap


def exported(name):
    """The object exported as `name`, or None."""
    return _EXPORTS.get(name)


_loader = []  # the package's loader of the layers it imports on first use (install's `load`)


def _missing(namespace):
    """A module-level __getattr__: TF names get 'not implemented yet', others the usual error.
    A public name not found first loads the layers jitflow imports on first use (their
    exports land in any namespace: jf.nn.Dense is Keras's), then looks again."""
    full = "jitflow" + ("." + namespace if namespace else "")

    def __getattr__(name):
        if not name.startswith("_") and _loader and _loader[0]():
            module = sys.modules.get(full)
            if module is not None and name in module.__dict__:
                return module.__dict__[name]
        if name in _TF.get(namespace, ()):
            tf_name = "tf." + (namespace + "." if namespace else "") + name
            raise AttributeError(f"jitflow does not implement {tf_name} yet (module '{full}' has no "
                                 f"attribute '{name}')")
        raise AttributeError(f"module '{full}' has no attribute '{name}'")
    return __getattr__


def _namespace(package, path):
    """The module for a dotted namespace under the package: an existing submodule (jitflow.nn)
    or a new one (jitflow.math, jitflow.linalg), registered in sys.modules."""
    mod = package
    for i, part in enumerate(path):
        sub = mod.__dict__.get(part)
        name = package.__name__ + "." + ".".join(path[: i + 1])
        if not isinstance(sub, types.ModuleType):
            sub = types.ModuleType(name, f"{name}: TF's tf.{'.'.join(path[: i + 1])} namespace.")
            setattr(mod, part, sub)
        # `import jitflow.nn` and `from jitflow.random import uniform` find the namespace,
        # whichever layer's module serves as it.
        sys.modules.setdefault(name, sub)
        if "__getattr__" not in sub.__dict__:
            sub.__getattr__ = _missing(".".join(path[: i + 1]))
        mod = sub
    return mod


def missing(namespace):
    """The __getattr__ for a package that serves a namespace and may be imported before the
    names it exports are installed (`import jitflow.data`): a miss installs them, then looks again."""
    return _missing(namespace)


def install(package, lazy=(), load=None):
    """Sets every exported name on the package and its namespaces; unknown names raise.
    `lazy`: top-level namespaces served by layers not imported yet (jf.keras, jf.data), left
    for a later install (no placeholder module in their place). `load()` imports those layers
    and installs again, True when that added names: a name not found calls it first."""
    for name, obj in _EXPORTS.items():
        *path, leaf = name.split(".")
        if not path or path[0] not in lazy:
            setattr(_namespace(package, path), leaf, obj)
    for ns in _TF:  # TF's namespaces all exist, so jf.linalg.qr says "not implemented yet"
        if ns and ns.split(".")[0] not in lazy:
            _namespace(package, ns.split("."))
    if load is not None:
        _loader[:] = [load]
