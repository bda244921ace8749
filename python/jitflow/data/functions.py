"""User functions of an element (map, filter, scan, reduce): traced once as a jf.function
against the element's specs, so each call runs the graph (compiled where the function is a
jf.function with jit_compile=True), as TF traces them once into a dataset function.

String components are graph inputs like any other (string ops run in the graph, uncompiled),
and a string result is an output. Elements holding datasets (window) or of unknown rank run
the function eagerly on each element instead; their output specs are then those of the first
element's result."""
from .. import _C
from ..core.strings import is_string_dtype
from ..core.tensor_spec import TensorSpec
from ..tracing.function import Function
from . import structure
from .base import DatasetSpec


def _fix_lists(out):
    """TF's dataset functions return a top-level list as a tuple."""
    return tuple(out) if isinstance(out, list) else out


class ElementFunction:
    """func applied to elements of structure `tree` with flat `specs`. A tuple element is
    passed unpacked (func(a, b)), as TF does for a plain tuple; anything else as one argument.
    With a state (scan, reduce) TF calls func(state, element): the element stays whole.
    After construction: out_tree and out_specs describe the result."""

    def __init__(self, func, tree, specs, what, extra=None):
        self.func, self.tree, self.specs, self.what = func, tree, specs, what
        self.extra = extra  # (tree, specs) of a state passed before the element (scan, reduce)
        self.unpack = tree.kind == "tuple" and tree.meta is tuple and extra is None
        all_specs = list(specs) + (list(extra[1]) if extra else [])
        self.eager = any(isinstance(s, DatasetSpec) for s in all_specs) or \
            any(s.shape.rank is None for s in all_specs)
        self.cf = None
        if not self.eager:
            fn = func if isinstance(func, Function) else Function(func, name=getattr(func, "__name__", what))
            self.function = fn
            args = self._args([_placeholder_spec(s) for s in specs], extra and list(extra[1]))
            try:
                self.cf = fn.get_concrete_function(*args)
            except Exception:
                # A string op the graph cannot hold yet (split's ragged result): such functions
                # run eagerly per element, as all string functions did before strings were
                # graph values. Any other function's errors are raised here, as TF does.
                if not any(is_string_dtype(s.dtype) for s in all_specs):
                    raise
                self.eager = True
        if not self.eager:
            out = _fix_lists(self.cf.structured_outputs)
            self.out_tree = structure.Tree.of(out)
            leaves = self.out_tree.flatten(out)
            for leaf in leaves:
                if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
                    raise TypeError(f"Unsupported return value from function passed to Dataset.{what}(): {leaf!r}.")
            self.out_specs = [TensorSpec(t.shape, t.dtype) for t in leaves]
            # The graph's outputs in their flat order match our tree's when the structure has
            # no lists (jf.nest descends into lists, tf.data does not).
            self.fast = _C.nest_flatten(out, rule="nest")[1].num_leaves == len(leaves)
            # String values cross into C++ through their own conversion (core/strings.py),
            # which the ConcreteFunction's Python call does.
            if any(is_string_dtype(sp.dtype) for sp in list(all_specs) + self.out_specs):
                self.fast = False
        else:
            self.out_tree = self.out_specs = None

    def _args(self, comps, state=None):
        value = self.tree.pack(comps)
        args = list(value) if self.unpack else [value]
        if state is not None:
            args = [self.extra[0].pack(state)] + args
        return args

    def call_traced(self, comps, state=None):
        """The flat outputs of func on graph tensors (inside another function's trace)."""
        out = _fix_lists(self.function(*self._args(comps, state)))
        return [structure.to_component(x) for x in structure.Tree.of(out).flatten(out)]

    def __call__(self, comps, state=None):
        """The flat components of func(element) (with the flat state first for scan/reduce)."""
        if self.cf is not None and self.fast:
            cf = self.cf
            leaves = (list(state) + list(comps)) if state is not None else comps
            return list(cf._cf.call(list(leaves), cf._var_ids, []))
        args = self._args(comps, state)
        out = _fix_lists(self.cf(*args) if self.cf is not None else self.func(*args))
        tree = structure.Tree.of(out)
        if self.out_tree is None:
            self.out_tree = tree
        leaves = tree.flatten(out)
        comps_out = [structure.to_component(x) for x in leaves]
        if self.out_specs is None:
            self.out_specs = [structure.spec_of(c) for c in comps_out]
        return comps_out


def _placeholder_spec(s):
    return TensorSpec(s.shape, s.dtype)
