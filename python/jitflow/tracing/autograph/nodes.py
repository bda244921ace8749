"""AST building blocks shared by AutoGraph's passes: generated names, `ag__.<op>` calls,
assignments, and the walk over one scope's nodes."""
import ast
import itertools

LOOPS = (ast.While, ast.For)
MATCH = getattr(ast, "Match", ())  # match statements exist from Python 3.10
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class Names:
    """Fresh generated names (prefix ag__ for functions, a readable prefix for the flags,
    which are user-visible loop state in to_code)."""

    def __init__(self):
        self._n = itertools.count(1)

    def new(self, kind):
        return f"{kind}__{next(self._n)}"


def name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def ag(attr):
    return ast.Attribute(value=name("ag__"), attr=attr, ctx=ast.Load())


def call(func, *args, **kwargs):
    return ast.Call(func=func, args=list(args), keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()])


def assign(target, value):
    return ast.Assign(targets=[name(target, True)], value=value)


def strs(names):
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def lambda_(body):
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])
    return ast.copy_location(ast.Lambda(args=args, body=body), body)


def def_(fn_name, params, body):
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=fn_name, args=args, body=body or [ast.Pass()], decorator_list=[],
                           returns=None, type_comment=None)


def walk_scope(node):
    """The nodes of node's own scope: nested functions, lambdas, classes and comprehensions
    are not entered (their names are their own)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, SCOPES):
            todo.extend(ast.iter_child_nodes(n))
