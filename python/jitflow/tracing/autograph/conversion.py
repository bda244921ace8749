"""Converting user functions: source from linecache, the transformed AST compiled under the
original file name and line numbers (tracebacks show the user's lines), once per code object
and kept across processes (code_cache.py); `converted` decides which callees are user code."""
import ast
import copy
import functools
import inspect
import linecache
import os
import re
import sysconfig
import textwrap
import types
import weakref

from ...core import errors as _errors
from . import code_cache, operators
from .transformer import transform

_code_cache = {}  # (original code object, strict) -> (converted code object, converted FunctionDef or None)
_fn_cache = weakref.WeakKeyDictionary()  # original function -> {strict: converted function}
_generated = set()  # every code object compiled here: already converted
_warned = set()
_LIBRARY_ROOTS = {"jitflow", "numpy", "scipy", "builtins", "functools", "itertools", "collections", "math",
                  "operator", "abc", "typing", "inspect", "contextlib", "copy", "tensorflow", "jax",
                  "torch", "pytest", "_pytest"}
_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _is_user_function(f):
    if getattr(f, "__ag_do_not_convert__", False) or f.__code__ in _generated:
        return False
    if f.__code__.co_flags & inspect.CO_COROUTINE:
        return False
    module = (getattr(f, "__module__", None) or "").split(".")[0]
    if module in _LIBRARY_ROOTS:
        return False
    return not f.__code__.co_filename.startswith(_LIBRARY_DIRS)


def strict_mode():
    """TF's AUTOGRAPH_STRICT_CONVERSION: a function AutoGraph cannot convert raises instead of
    running as it is (read at each conversion, as TF reads it)."""
    try:
        return int(os.environ.get("AUTOGRAPH_STRICT_CONVERSION", "0")) > 0
    except ValueError:
        return False


def converted(f):
    """f converted when it is user code (a plain function, bound method or partial of one),
    else f itself. A function whose source cannot be converted (or a generator, which TF does
    not convert) runs as-is, with TF's warning; in strict mode it raises."""
    if isinstance(f, types.MethodType):
        g = converted(f.__func__)
        return f if g is f.__func__ else types.MethodType(g, f.__self__)
    if isinstance(f, functools.partial):
        g = converted(f.func)
        return f if g is f.func else functools.partial(g, *f.args, **f.keywords)
    call = next((c.__dict__["__call__"] for c in type(f).__mro__ if "__call__" in c.__dict__), None)
    if not isinstance(f, (type, types.FunctionType)) and isinstance(call, types.FunctionType) and \
            _is_user_function(call):  # a user object's __call__ (a layer, a model)
        g = converted(call)
        return f if g is call else types.MethodType(g, f)
    if not isinstance(f, types.FunctionType) or not _is_user_function(f):
        return f
    try:
        return convert(f)
    except (OSError, TypeError, ValueError, SyntaxError, NotImplementedError) as e:  # no source, a generator
        if strict_mode():
            raise
        if f.__code__ not in _warned:
            _warned.add(f.__code__)
            _errors.warn(f"AutoGraph could not transform {f} and will run it as-is. Cause: {e}", RuntimeWarning)
        return f


def _parse_lambda(f):
    """A lambda as `def ag__lambda(<its parameters>): return <its body>`. The body is the
    source span its code's instructions cover (3.11 positions), so a lambda inside a longer
    statement, or one of several on a line, is found exactly."""
    code = f.__code__
    spans = [p for p in code.co_positions() if None not in p and (p[0], p[2]) != (p[1], p[3])]  # not RESUME's
    if not spans:
        raise ValueError("the lambda has no source positions")
    start = min((p[0], p[2]) for p in spans)
    end = max((p[1], p[3]) for p in spans)
    lines = linecache.getlines(code.co_filename)
    if not lines or end[0] > len(lines):
        raise OSError(f"could not get the source of {f}")
    text = "".join(lines[start[0] - 1:end[0]])
    text = text[:len(text) - len(lines[end[0] - 1]) + end[1]][start[1]:]
    body = ast.parse("(" + text + "\n)", mode="eval").body
    for n in ast.walk(body):  # the snippet's positions -> the file's
        if getattr(n, "lineno", None) is None:
            continue
        for attr, line_attr in (("col_offset", "lineno"), ("end_col_offset", "end_lineno")):
            if getattr(n, line_attr, None) == 1 and getattr(n, attr, None) is not None:
                setattr(n, attr, getattr(n, attr) - 1 + start[1])
        n.lineno += start[0] - 1
        if getattr(n, "end_lineno", None) is not None:
            n.end_lineno += start[0] - 1
    nargs = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames)
    star = names[nargs] if code.co_flags & inspect.CO_VARARGS else None
    kw = names[nargs + bool(star)] if code.co_flags & inspect.CO_VARKEYWORDS else None
    pos = [ast.arg(arg=a) for a in names[:code.co_argcount]]
    args = ast.arguments(posonlyargs=pos[:code.co_posonlyargcount], args=pos[code.co_posonlyargcount:],
                         vararg=ast.arg(arg=star) if star else None,
                         kwonlyargs=[ast.arg(arg=a) for a in names[code.co_argcount:nargs]],
                         kw_defaults=[None] * code.co_kwonlyargcount, kwarg=ast.arg(arg=kw) if kw else None,
                         defaults=[])
    ret = ast.copy_location(ast.Return(body), body)
    return ast.copy_location(ast.FunctionDef(name="ag__lambda", args=args, body=[ret], decorator_list=[],
                                             returns=None, type_comment=None), body)


_DEF_LINE = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


def _source_lines(f):
    """The lines of f's def (decorators included) and the first one's number. inspect's
    getsourcelines finds the same lines, but first searches every loaded module for the
    function's (getmodule: a realpath per module, most of a small function's first call);
    the code object names its file and line. Its code object, not f: inspect would follow a
    decorator's __wrapped__ to another def."""
    code = f.__code__
    filename = code.co_filename
    if not (filename.startswith("<") and filename.endswith(">")):
        linecache.checkcache(filename)  # an edited file is read again
    lines = linecache.getlines(filename, f.__globals__)
    if not lines:
        raise OSError("could not get source code")
    lnum = code.co_firstlineno - 1
    while lnum > 0:  # back to the def or its first decorator, as inspect.findsource does
        if lnum >= len(lines):
            raise OSError("lineno is out of bounds")
        if _DEF_LINE.match(lines[lnum]):
            break
        lnum -= 1
    block = _block_by_positions(code, lines, lnum)
    return (block if block is not None else inspect.getblock(lines[lnum:])), lnum + 1


def _last_line(code):
    """The last source line any instruction of code or its nested functions comes from."""
    last = max((p[1] for p in code.co_positions() if p[1] is not None), default=code.co_firstlineno)
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            last = max(last, _last_line(k))
    return last


def _block_by_positions(code, lines, lnum):
    """The def's lines without tokenizing the file (inspect.getblock's tokenizer costs a few
    ms on a first call): up to the last line its instructions come from, then on over the
    lines that still belong to its body (blank, comments, indented deeper than the def), so
    statements that compile to nothing (an annotation, a trailing pass) stay in. None when
    that is not one complete def: the caller tokenizes."""
    end = min(_last_line(code), len(lines))
    indent = len(lines[lnum]) - len(lines[lnum].lstrip())
    while end < len(lines):
        text = lines[end].strip()
        if text and not text.startswith("#") and len(lines[end]) - len(lines[end].lstrip()) <= indent:
            break
        end += 1
    block = lines[lnum:end]
    try:
        body = ast.parse(textwrap.dedent("".join(block))).body
    except SyntaxError:
        return None
    if len(body) != 1 or not isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return block


def _parse(f):
    if f.__name__ == "<lambda>":
        return _parse_lambda(f)
    lines, first = _source_lines(f)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(textwrap.dedent("".join(lines)))
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef) or node.name != f.__code__.co_name:
        raise ValueError(f"the source of {f.__name__} is not a def statement")
    ast.increment_lineno(tree, first - 1)
    for n in ast.walk(tree):  # columns too: 3.11 tracebacks underline the failing expression
        if hasattr(n, "col_offset") and n.col_offset is not None:
            n.col_offset += indent
            if getattr(n, "end_col_offset", None) is not None:
                n.end_col_offset += indent
    return node


def _compile(f, strict=False):
    """(converted code object, converted FunctionDef or None when it was loaded from the
    cache) for f's code: from memory, else from the disk cache, else converted here."""
    code = f.__code__
    entry = _code_cache.get((code, strict))
    if entry is not None:
        return entry
    cache_key = code_cache.key(code, strict)
    node = None
    loaded = code_cache.load(cache_key)
    if loaded is not None:
        compiled, name = loaded
    else:
        node = transform(_parse(f), strict)
        compiled, name = _compile_node(node, code), node.name
        code_cache.store(cache_key, compiled, name)
    inner = None
    todo = [compiled]
    while todo:
        c = todo.pop()
        _generated.add(c)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                todo.append(k)
                if k.co_name == name and inner is None and c.co_name == "ag__factory":
                    inner = k
    if inner is None:
        raise ValueError(f"the converted code of {f.__name__} has no function {name}")
    entry = _code_cache[(code, strict)] = (inner, node)
    return entry


def _compile_node(node, code):
    # The converted def inside a factory whose parameters are the original's free variables,
    # so its code refers to them as free variables too: called with the original cells, the
    # converted function shares the closure (later assignments to it are seen).
    params = ["ag__"] + list(code.co_freevars)
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])
    factory = ast.FunctionDef(name="ag__factory", args=args, body=[node, ast.Return(ast.Name(node.name, ast.Load()))],
                              decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[ast.copy_location(factory, node)], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(module, code.co_filename, "exec", dont_inherit=True)


def convert(f):
    """The converted version of a Python function (cached per function, compiled once per
    code object)."""
    strict = strict_mode()
    g = _fn_cache.get(f, {}).get(strict)
    if g is not None:
        return g
    inner, _ = _compile(f, strict)
    cells = []
    for name in inner.co_freevars:
        if name == "ag__":
            cells.append(types.CellType(operators))
        else:
            cells.append(f.__closure__[f.__code__.co_freevars.index(name)])
    g = types.FunctionType(inner, f.__globals__, f.__name__, f.__defaults__, tuple(cells))
    g.__kwdefaults__ = f.__kwdefaults__
    g.__dict__.update(f.__dict__)
    g.__qualname__, g.__doc__, g.__module__ = f.__qualname__, f.__doc__, f.__module__
    _fn_cache.setdefault(f, {})[strict] = g
    return g


operators._converter.append(converted)


def to_code(f):
    """The source AutoGraph generates for f (a function or a jf.function)."""
    f = getattr(f, "python_function", f)
    if isinstance(f, functools.partial):
        f = f.func
    f = getattr(f, "__func__", f)
    node = _compile(f)[1]
    tree = copy.deepcopy(node) if node is not None else transform(_parse(f), False)  # loaded: no tree kept
    for node in ast.walk(tree):  # TF names the converted function tf__<name>
        if isinstance(node, ast.FunctionDef) and node.name == f.__name__:
            node.name = "tf__" + node.name
            break
    return ast.unparse(tree) + "\n"


def do_not_convert(func=None):
    """Marks func to run as written, never converted (also when a converted function calls it)."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    wrapper.__ag_do_not_convert__ = True
    return wrapper

