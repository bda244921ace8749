"""jf.Module: TF's tf.Module — a named container whose variables and submodules are found
through its attributes (and the lists, tuples and dicts in them), with a name scope for its ops."""
import functools
import re

from .. import _C
from ..core.export import export
from ..core.name_scope import current_module_scope, name_scope
from ..ops.variables import Variable
from ..tracing import display as _display

# TF's module_utils: a name is a Python identifier; the default is the class name in snake_case.
_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CAMEL_TO_SNAKE = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")


def camel_to_snake(value):
    return _CAMEL_TO_SNAKE.sub(r"_\1", value).lower()


class _ModuleNameScope(name_scope):
    """The module's name scope. Its name is absolute (fixed when the module was made), so every
    entry reuses it, as TF does: ops built under it are named "<module>/<Op>", "<module>/<Op>_1"."""


def _is_variable(x):
    return isinstance(x, Variable)


def _flatten_with_paths(value):
    """(path, leaf) for the leaves of a module attribute, as TF's nest.flatten_with_tuple_paths
    walks it: jf.nest's one traversal (the C++ walker), paths of indices and keys."""
    leaves, tree = _C.nest_flatten(value, rule="nest")
    return list(zip(tree.paths(), leaves))


@export("Module")
class Module:
    """A named container of variables and submodules (TF's tf.Module).

    `variables`, `trainable_variables`, `non_trainable_variables` and `submodules` walk the
    module's attributes in sorted order (lists and tuples in order, dicts by sorted key),
    a module's own attributes before its submodules' attributes, each object once."""

    # Attributes never walked (TF's _TF_MODULE_IGNORED_PROPERTIES): bookkeeping, not state.
    _jf_untracked = frozenset({"_name", "_name_scope", "_jf_deferred"})

    def __init__(self, name=None):
        if name is None:
            name = camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _VALID_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid Python "
                             "identifiers (e.g. a valid class name).")
        object.__setattr__(self, "_name", name)
        if _C.is_tracing():
            # Inside a trace the scope is the graph's: "outer/name/", made unique as TF's
            # graph-mode name_scope does.
            with _C.name_scope(name) as full:
                pass
        else:
            full = current_module_scope() + name + "/"
        object.__setattr__(self, "_name_scope", _ModuleNameScope(full))

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        # A checkpoint restored before this attribute existed (a layer built on first call)
        # left its value here: restore it now, as TF's deferred restoration does.
        deferred = self.__dict__.get("_jf_deferred")
        if deferred and name in deferred:
            deferred.pop(name)(value)

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """A context manager; ops created under it are named "<module name>/<op>"."""
        return self._name_scope

    @classmethod
    def with_name_scope(cls, method):
        """Decorator: the method runs inside `with self.name_scope:`."""
        @functools.wraps(method)
        def method_with_name_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return method_with_name_scope

    def _repr_html_(self):
        """In a notebook: the variables, and the graphs of the jf.function methods traced so far."""
        traced = [(v._name, v) for k, v in sorted(self.__dict__.items())
                  if k.startswith("_jf_bound_") and hasattr(v, "_concrete")]
        return _display.module_html(self, list(self.variables), traced)

    # ---- discovery ------------------------------------------------------------------------
    @property
    def variables(self):
        """Every jf.Variable of this module and its submodules, each once."""
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self):
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and v.trainable))

    @property
    def non_trainable_variables(self):
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and not v.trainable))

    @property
    def submodules(self):
        """Every Module reachable from this one (not itself), each once."""
        return tuple(self._flatten(predicate=lambda m: isinstance(m, Module)))

    def _flatten(self, recursive=True, predicate=None, with_path=False):
        """The attributes' leaves matching predicate (TF's Module._flatten); with_path, pairs
        (path tuple, leaf), and objects reachable by several paths are yielded for each."""
        return _flatten_module(self, recursive, predicate or (lambda _: True), with_path, (),
                               {id(self)}, [])


def _flatten_module(module, recursive, predicate, with_path, module_path, seen, stack):
    # TF's order: this module's attributes (sorted) first, then each submodule found there,
    # depth first. A module already on the recursion stack is not walked again (cycles).
    if id(module) in stack:
        recursive = False
    submodules = []
    ignored = getattr(type(module), "_jf_untracked", frozenset())
    for key in sorted(vars(module)):
        if key in ignored or key.startswith("_jf_bound_"):  # jf.function's per-instance methods
            continue
        try:
            leaves = list(_flatten_with_paths(vars(module)[key]))
        except Exception as cause:
            raise ValueError(f"Error processing property {key!r} of {module!r}") from cause
        for leaf_path, leaf in leaves:
            path = module_path + (key,) + leaf_path
            if not with_path:
                if id(leaf) in seen:
                    continue
                seen.add(id(leaf))
            if predicate(leaf):
                yield (path, leaf) if with_path else leaf
            if recursive and isinstance(leaf, Module):
                submodules.append((path, leaf))
    stack.append(id(module))
    for path, sub in submodules:
        yield from _flatten_module(sub, recursive, predicate, with_path, path, seen, stack)
    stack.pop()
