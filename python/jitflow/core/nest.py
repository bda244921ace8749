"""jf.nest: TF's nested-structure utilities (flatten, pack_sequence_as, map_structure,
assert_same_structure, is_nested) with tf.nest's ordering rules and error messages.

What is nested (TF's rules): lists, tuples (namedtuples keep their type), mappings (dict,
OrderedDict, defaultdict, any collections.abc.Mapping; values in sorted key order, whatever the
insertion order; rebuilt in the structure's own key order), mapping views, attrs classes (fields
in declaration order) and other collections.abc.Sequence types except str and bytes. Everything
else is a leaf: None, numbers, strings, sets, numpy arrays, tensors and variables.
`expand_composites` is accepted: jitflow has no composite tensors (TF's Variable also stays a
leaf), so it changes nothing.

The C++ walker behind jf.function's signatures (cpp/python/nest.h) visits lists, tuples,
namedtuples and dicts in this same order (tests/python/core/test_nest.py checks that they agree)."""
import collections
import collections.abc as _abc

from .. import _C
from .export import export

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure", "pack_sequence_as"]


def _is_attrs(x):
    return hasattr(type(x), "__attrs_attrs__")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


@export("nest.is_nested")
def is_nested(seq):
    """True for the containers nest descends into (see the module docstring)."""
    if isinstance(seq, (str, bytes, bytearray)) or getattr(type(seq), "__jf_nest_atom__", False):
        return False  # a jf.TensorShape is one value, as TF's TensorShape
    return isinstance(seq, (list, tuple, _abc.Mapping, _abc.MappingView, _abc.Sequence)) or _is_attrs(seq)


def _sorted_keys(mapping):
    return sorted(mapping)  # TypeError for keys that do not sort, as TF


def _children(x):
    """The direct items of a nested value, in flatten order."""
    if isinstance(x, _abc.Mapping):
        return [x[k] for k in _sorted_keys(x)]
    if isinstance(x, _abc.MappingView):
        return list(x)
    if _is_attrs(x):
        return [getattr(x, a.name) for a in type(x).__attrs_attrs__]
    return list(x)


def _sequence_like(instance, args):
    """A container of instance's kind holding args (in flatten order)."""
    if isinstance(instance, _abc.Mapping):
        by_key = dict(zip(_sorted_keys(instance), args))
        items = [(k, by_key[k]) for k in instance]
        if isinstance(instance, collections.defaultdict):
            return type(instance)(instance.default_factory, items)
        return type(instance)(items)
    if isinstance(instance, _abc.MappingView):
        return list(args)
    if _is_namedtuple(instance) or _is_attrs(instance):
        return type(instance)(*args)
    if isinstance(instance, (list, tuple)):
        return type(instance)(args)
    try:
        return type(instance)(args)
    except TypeError:  # a Sequence type that cannot be built from a list (range, ...)
        return list(args)


def _flatten_into(x, out):
    if is_nested(x):
        for c in _children(x):
            _flatten_into(c, out)
    else:
        out.append(x)


@export("nest.flatten")
def flatten(structure, expand_composites=False):
    """The leaves of `structure`, depth first (dict values by sorted key); a leaf is [leaf]."""
    out = []
    _flatten_into(structure, out)
    return out


def _pack(structure, flat, index):
    items = []
    for c in _children(structure):
        if is_nested(c):
            index, packed = _pack(c, flat, index)
            items.append(packed)
        else:
            items.append(flat[index])
            index += 1
    return index, _sequence_like(structure, items)


@export("nest.pack_sequence_as")
def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`structure` with its leaves replaced, in flatten order, by the items of flat_sequence."""
    if not is_nested(flat_sequence):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence}\ninto a structure, but found "
                        f"incompatible type `{type(flat_sequence)}` instead.")
    flat = list(flat_sequence)
    if not is_nested(structure):
        if len(flat) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  {structure}\n"
                             f"However the input is a sequence ({type(flat_sequence)}) of length "
                             f"{len(flat)}.\n  {flat_sequence}\nnest cannot guarantee that it is safe "
                             "to map one to the other.")
        return flat[0]
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {n} atoms, but flat_sequence had "
                         f"{len(flat)} items.  Structure: {structure}, flat_sequence: {flat_sequence}.")
    return _pack(structure, flat, 0)[1]


class _Dot:
    """A leaf shown as '.' in the outline of a structure (TF's error messages)."""

    def __repr__(self):
        return "."

    __str__ = __repr__


def _outline(s):
    return str(pack_sequence_as(s, [_Dot()] * len(flatten(s)))) if is_nested(s) else "."


def _desc(x):
    return f"type={type(x).__name__} str={x}"


def _same_namedtuples(a, b):
    return type(a).__name__ == type(b).__name__ and type(a)._fields == type(b)._fields


class _Mismatch(Exception):
    def __init__(self, cls, detail):
        super().__init__(detail)
        self.cls = cls
        self.detail = detail


def _check(a, b, check_types):
    na, nb = is_nested(a), is_nested(b)
    if na != nb:
        seq, other = (a, b) if na else (b, a)
        raise _Mismatch(ValueError, f'Substructure "{_desc(seq)}" is a sequence, while substructure '
                                    f'"{_desc(other)}" is not')
    if not na:
        return
    if check_types:
        ta, tb = type(a), type(b)
        both_maps = isinstance(a, _abc.Mapping) and isinstance(b, _abc.Mapping)
        same_nt = _is_namedtuple(a) and _is_namedtuple(b) and _same_namedtuples(a, b)
        if ta is not tb and not both_maps and not same_nt:
            raise _Mismatch(TypeError, "The two namedtuples don't have the same sequence type. First "
                                       f"structure {_desc(a)} has type {ta.__name__}, while second "
                                       f"structure {_desc(b)} has type {tb.__name__}")
        if both_maps and set(a) != set(b):
            raise _Mismatch(ValueError, "The two dictionaries don't have the same set of keys. First "
                                        f"structure has keys {_desc(list(a))}, while second structure "
                                        f"has keys {_desc(list(b))}")
    ca, cb = _children(a), _children(b)
    for x, y in zip(ca, cb):
        _check(x, y, check_types)
    if len(ca) != len(cb):
        raise _Mismatch(ValueError, "The two structures don't have the same number of elements. "
                                    f"First structure: {_desc(a)}. Second structure: {_desc(b)}")


@export("nest.assert_same_structure")
def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError (shape of the nesting) or TypeError (container types, with
    check_types) unless nest1 and nest2 nest alike; returns None."""
    try:
        _check(nest1, nest2, check_types)
    except _Mismatch as m:
        raise m.cls("The two structures don't have the same nested structure.\n\n"
                    f"First structure: {_desc(nest1)}\n\nSecond structure: {_desc(nest2)}\n\n"
                    f"More specifically: {m.detail}\nEntire first structure:\n{_outline(nest1)}\n"
                    f"Entire second structure:\n{_outline(nest2)}") from None


@export("nest.map_structure")
def map_structure(func, *structure, **kwargs):
    """func applied to the corresponding leaves of the structures, packed like structure[0]."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", False)
    if kwargs:
        raise ValueError("Only valid keyword arguments are `check_types` and `expand_composites`, "
                         f"not: `{'`, `'.join(kwargs)}`")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flats = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flats)])


def flatten_outputs(out):
    """(tensors, TreeDef) for a traced function's return value: its leaves (tensors,
    variables, numpy values) converted to tensors, in the C++ nest order."""
    leaves, tree = _C.nest_flatten(out, outputs=True)
    return [_C.convert_to_tensor(x) for x in leaves], tree
