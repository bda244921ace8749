"""jf.nest: TF's nested-structure utilities (flatten, pack_sequence_as, map_structure,
assert_same_structure, is_nested) on the C++ traversal jf.function flattens its arguments and
results with (cpp/python/nest.h, the 'nest' leaf rule), with tf.nest's error messages.

What is nested is that traversal's one set of container rules, tf.nest's: lists, tuples
(namedtuples keep their type), mappings (dict, OrderedDict, defaultdict, any
collections.abc.Mapping; values in sorted key order, whatever the insertion order; rebuilt as
their type in the structure's own key order), mapping views, attrs classes (fields in
declaration order) and other collections.abc.Sequence types except str, bytes and bytearray.
Everything else is a leaf: None, numbers, strings, sets, numpy arrays, tensors, variables and
jf.TensorShape. A composite tensor (jf.SparseTensor, jf.RaggedTensor) is one leaf, or its
component tensors with expand_composites=True, as in TF (a Variable stays a leaf either way)."""
from .. import _C
from .export import export
from .strings import StringTensor

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure", "pack_sequence_as"]


@export("nest.is_nested")
def is_nested(seq):
    """True for the containers nest descends into (see the module docstring)."""
    return _C.nest_is_nested(seq)


def _flatten(structure, expand_composites=False):
    return _C.nest_flatten(structure, rule="nest_expand" if expand_composites else "nest")


@export("nest.flatten")
def flatten(structure, expand_composites=False):
    """The leaves of `structure`, depth first (mapping values by sorted key); a leaf is [leaf].
    A SparseTensor or RaggedTensor is one leaf, or its component tensors with expand_composites."""
    return _flatten(structure, expand_composites)[0]


@export("nest.pack_sequence_as")
def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`structure` with its leaves replaced, in flatten order, by the items of flat_sequence."""
    if not is_nested(flat_sequence):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence}\ninto a structure, but found "
                        f"incompatible type `{type(flat_sequence)}` instead.")
    flat = list(flat_sequence)
    composite = expand_composites and hasattr(type(structure), "__jf_composite__")
    if not is_nested(structure) and not composite:
        if len(flat) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  {structure}\n"
                             f"However the input is a sequence ({type(flat_sequence)}) of length "
                             f"{len(flat)}.\n  {flat_sequence}\nnest cannot guarantee that it is safe "
                             "to map one to the other.")
        return flat[0]
    tree = _flatten(structure, expand_composites)[1]
    if tree.num_leaves != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {tree.num_leaves} atoms, but flat_sequence "
                         f"had {len(flat)} items.  Structure: {structure}, flat_sequence: {flat_sequence}.")
    return tree.unflatten(flat)


class _Dot:
    """A leaf shown as '.' in the outline of a structure (TF's error messages)."""

    def __repr__(self):
        return "."

    __str__ = __repr__


def _outline(tree):
    return str(tree.unflatten([_Dot()] * tree.num_leaves))


def _desc(x):
    return f"type={type(x).__name__} str={x}"


def _check_same(nest1, tree1, nest2, tree2, check_types):
    """Raises TF's error for the first place (TreeDef.difference) where the two nest otherwise;
    the message names the substructures there, reached through the traversal's children."""
    diff = tree1.difference(tree2, check_types)
    if diff is None:
        return
    path, reason = diff
    a, b = nest1, nest2
    for i in path:
        a, b = _C.nest_children(a)[i], _C.nest_children(b)[i]
    if reason == "nesting":
        seq, other = (a, b) if is_nested(a) else (b, a)
        cls, detail = ValueError, (f'Substructure "{_desc(seq)}" is a sequence, while substructure '
                                   f'"{_desc(other)}" is not')
    elif reason == "type":
        cls, detail = TypeError, ("The two namedtuples don't have the same sequence type. First "
                                  f"structure {_desc(a)} has type {type(a).__name__}, while second "
                                  f"structure {_desc(b)} has type {type(b).__name__}")
    elif reason == "keys":
        cls, detail = ValueError, ("The two dictionaries don't have the same set of keys. First "
                                   f"structure has keys {_desc(list(a))}, while second structure "
                                   f"has keys {_desc(list(b))}")
    else:
        cls, detail = ValueError, ("The two structures don't have the same number of elements. "
                                   f"First structure: {_desc(a)}. Second structure: {_desc(b)}")
    raise cls("The two structures don't have the same nested structure.\n\n"
              f"First structure: {_desc(nest1)}\n\nSecond structure: {_desc(nest2)}\n\n"
              f"More specifically: {detail}\nEntire first structure:\n{_outline(tree1)}\n"
              f"Entire second structure:\n{_outline(tree2)}")


@export("nest.assert_same_structure")
def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError (shape of the nesting) or TypeError (container types, with
    check_types) unless nest1 and nest2 nest alike; returns None."""
    _check_same(nest1, _flatten(nest1, expand_composites)[1], nest2, _flatten(nest2, expand_composites)[1],
                check_types)


@export("nest.map_structure")
def map_structure(func, *structure, **kwargs):
    """func applied to the corresponding leaves of the structures, packed like structure[0]."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    expand = kwargs.pop("expand_composites", False)
    if kwargs:
        raise ValueError("Only valid keyword arguments are `check_types` and `expand_composites`, "
                         f"not: `{'`, `'.join(kwargs)}`")
    flats = [_flatten(s, expand) for s in structure]
    for s, (_, tree) in zip(structure[1:], flats[1:]):
        _check_same(structure[0], flats[0][1], s, tree, check_types)
    return flats[0][1].unflatten([func(*xs) for xs in zip(*(leaves for leaves, _ in flats))])


def flatten_outputs(out):
    """(tensors, TreeDef) for a traced function's return value: its leaves (tensors,
    variables, numpy values) converted to tensors, in the C++ nest order."""
    leaves, tree = _C.nest_flatten(out, outputs=True)
    return [x._c_tensor() if isinstance(x, StringTensor) else _C.convert_to_tensor(x) for x in leaves], tree
