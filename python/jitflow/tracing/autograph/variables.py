"""Names that converted code may read before they are bound: TF's `Undefined` value and its
`ld` / `ldu` loads. A converted statement's state travels through functions that read and
write the enclosing scope, so a name the statement may bind holds an Undefined until it
does; reading one raises TF's UnboundLocalError."""


class Undefined:
    """The value of a name (or a dict item, an attribute) not bound yet where a converted
    statement starts. Any use of it raises TF's "'x' is used before assignment"."""
    __slots__ = ("name",)

    def __init__(self, name):
        object.__setattr__(self, "name", name)

    def __repr__(self):
        return f"Undefined({self.name!r})"

    def read(self):
        raise UnboundLocalError(f"'{self.name}' is used before assignment")

    def _fail(self, *args, **kwargs):
        self.read()

    def __getattr__(self, attr):
        self.read()


for _m in ("__bool__", "__call__", "__getitem__", "__setitem__", "__iter__", "__len__", "__index__", "__int__",
           "__float__", "__neg__", "__abs__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
           "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
           "__matmul__", "__lt__", "__le__", "__gt__", "__ge__", "__array__"):
    setattr(Undefined, _m, Undefined._fail)


class UndefinedReturnValue(Undefined):
    """retval_ before a return statement ran."""
    __slots__ = ()

    def __init__(self):
        Undefined.__init__(self, "retval_")


def is_undefined(v):
    return isinstance(v, Undefined)


def ld(v):
    """A name's value where it is read: an Undefined raises TF's UnboundLocalError."""
    if isinstance(v, Undefined):
        v.read()
    return v


def ldu(load, name):
    """load(), or an Undefined named `name` when it is not bound: an unbound name, a missing
    dict key, a missing attribute (TF's ldu)."""
    try:
        return load()
    except (KeyError, AttributeError, NameError):
        return Undefined(name)


def delete(container, key, item):
    """Undoes a dict item or attribute a traced branch or loop body set where the statement
    found none (its state restores to "absent")."""
    try:
        if item:
            del container[key]
        else:
            delattr(container, key)
    except (KeyError, AttributeError, IndexError, TypeError):
        pass


def retval(v):
    """The function's result: None when no return statement ran (Python's implicit return)."""
    return None if isinstance(v, UndefinedReturnValue) else v
