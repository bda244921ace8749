"""AutoGraph's source-to-source passes: a function's AST in, the same function with its
control flow routed through `ag__` runtime calls out (see operators.py for what they do)."""
import ast
import copy

from . import statements
from .analysis import annotate_liveness, assigned
from .nodes import LOOPS as _LOOP
from .nodes import SCOPES as _SCOPES
from .nodes import Names
from .nodes import ag as _ag
from .nodes import assign as _assign
from .nodes import call as _call
from .nodes import lambda_ as _lambda
from .nodes import name as _name
from .nodes import walk_scope as _walk_scope

# Calls the generated code must make itself: zero-argument super() reads the caller's frame.
_NOT_WRAPPED = {"super", "locals", "globals", "vars", "eval", "exec", "range"}


class UnsupportedLanguageElementError(NotImplementedError):
    """A construct TF's AutoGraph does not convert (TF's error type)."""


# ---- pass 1: break / continue / return become flags ----------------------------------------
def _sets_flag(stmts, flag):
    return any(isinstance(n, ast.Name) and n.id == flag and isinstance(n.ctx, ast.Store)
               for s in stmts for n in ast.walk(s))


def _guarded(stmts, flag, is_jump):
    """stmts with each jump statement (is_jump) replaced by `flag = True` and the statements
    after a possible jump wrapped in `if not flag:`. Loops and nested scopes are not entered
    (their break/continue are their own; a return inside a loop is lowered by that loop's own
    pass, which also puts `not flag` into its test)."""
    out = []
    for i, s in enumerate(stmts):
        if is_jump(s):
            out.append(ast.copy_location(_assign(flag, ast.Constant(True)), s))
            return out  # the rest is dead code
        if isinstance(s, ast.If):
            s.body = _guarded(s.body, flag, is_jump)
            s.orelse = _guarded(s.orelse, flag, is_jump)
        elif isinstance(s, (ast.With, ast.Try)):
            s.body = _guarded(s.body, flag, is_jump)
        out.append(s)
        if _sets_flag([s], flag) and i + 1 < len(stmts):
            rest = _guarded(stmts[i + 1:], flag, is_jump)
            guard = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(flag)), body=rest, orelse=[])
            out.append(ast.copy_location(guard, stmts[i + 1]))
            return out
    return out


def _has(stmts, kind):
    """Whether stmts hold a `kind` statement of this loop (not of a nested loop or scope)."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, kind):
            return True
        if not isinstance(n, _SCOPES + _LOOP):
            todo.extend(ast.iter_child_nodes(n))
    return False


class LowerJumps(ast.NodeTransformer):
    """break and continue through flag variables, as TF's AutoGraph does: `continue` sets a
    flag reset at the top of each iteration, `break` sets one that the loop's test reads."""

    def __init__(self, names):
        self.names = names

    def _loop(self, node):
        self.generic_visit(node)  # inner loops first
        pre = []
        if _has(node.body, ast.Continue):
            flag = self.names.new("continue")
            node.body = [_assign(flag, ast.Constant(False))] + \
                _guarded(node.body, flag, lambda s: isinstance(s, ast.Continue))
            for s in node.body[:1]:
                ast.copy_location(s, node)
        if _has(node.body, ast.Break):
            flag = self.names.new("break")
            pre.append(ast.copy_location(_assign(flag, ast.Constant(False)), node))
            node.body = _guarded(node.body, flag, lambda s: isinstance(s, ast.Break))
            not_flag = ast.UnaryOp(op=ast.Not(), operand=_name(flag))
            if isinstance(node, ast.While):
                node.test = ast.BoolOp(op=ast.And(), values=[not_flag, node.test])
            else:
                old = getattr(node, "ag_extra_test", None)
                node.ag_extra_test = not_flag if old is None else ast.BoolOp(op=ast.And(), values=[old, not_flag])
            if node.orelse:  # runs when the loop did not break
                post = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name(flag)), body=node.orelse, orelse=[])
                node.orelse = []
                return pre + [node, ast.copy_location(post, node)]
        return pre + [node]

    visit_While = visit_For = _loop

    def visit_FunctionDef(self, node):
        return self.generic_visit(node)


class LowerReturns(ast.NodeTransformer):
    """A return inside if/while/for/with/try becomes `retval_ = value; do_return = True`
    (TF's names, which its error messages show; the flag is set once the value is computed,
    so a return whose value raises into an enclosing handler has not returned), a break out
    of the enclosing loop, and the statements after it guarded; the function ends with
    `return retval_`. An `if` whose
    branch returns takes the rest of the block into its other branch, as TF does, so
    `if c: return a` + `return b` is one cond with a value on both sides."""

    def visit_FunctionDef(self, node):
        self.generic_visit(node)  # nested functions have their own returns
        nested = [s for s in node.body if not isinstance(s, ast.Return)]
        if not any(isinstance(n, ast.Return) for s in nested for n in [s] + list(_walk_scope(s))
                   if not isinstance(s, _SCOPES)):
            return node
        body = self._replace(node.body, in_loop=False)
        body = _guarded_return(body)
        init = [_assign("do_return", ast.Constant(False)), _assign("retval_", _call(_ag("UndefinedReturnValue")))]
        node.body = [ast.copy_location(s, node.body[0]) for s in init] + body + \
            [ast.copy_location(ast.Return(value=_call(_ag("retval"), _name("retval_"))), node.body[-1])]
        return node

    def _replace(self, stmts, in_loop):
        out = []
        for s in stmts:
            if isinstance(s, ast.Return):
                value = s.value if s.value is not None else ast.Constant(None)
                new = [_assign("retval_", value), _assign("do_return", ast.Constant(True))]
                new += [ast.Break()] if in_loop else []
                out.extend(ast.copy_location(n, s) for n in new)
                break  # what follows a return is dead code
            if isinstance(s, _SCOPES):
                out.append(s)
                continue
            loop = isinstance(s, _LOOP)
            for field in ("body", "orelse", "finalbody"):
                if hasattr(s, field):
                    setattr(s, field, self._replace(getattr(s, field), in_loop or (loop and field == "body")))
            for h in getattr(s, "handlers", []):
                h.body = self._replace(h.body, in_loop)
            if loop and _sets_flag(s.body, "do_return"):
                s.body = _guarded_return(s.body)
                stop = ast.UnaryOp(op=ast.Not(), operand=_name("do_return"))
                if isinstance(s, ast.While):
                    s.test = ast.BoolOp(op=ast.And(), values=[stop, s.test])
                else:
                    s.ag_extra_test = stop
            out.append(s)
        return out


def _ends_with_return(stmts):
    """Whether stmts surely return: they end with a lowered return, or with an if whose
    branches both surely return, or with a with block that does."""
    last = stmts[-1] if stmts else None
    if isinstance(last, ast.If):
        return _ends_with_return(last.body) and _ends_with_return(last.orelse)
    if isinstance(last, ast.With):
        return _ends_with_return(last.body)
    return isinstance(last, ast.Assign) and isinstance(last.targets[0], ast.Name) and \
        last.targets[0].id == "do_return"


def _guarded_return(stmts):
    """The statements after a possible return wrapped in `if not do_return:`, or moved into
    the other branch of an `if` one of whose branches surely returned (dropped when both
    did). A finally block runs after a return, so it is lowered on its own: a return in it
    replaces the value."""
    out = []
    for i, s in enumerate(stmts):
        rest = stmts[i + 1:]
        if isinstance(s, ast.If):
            s.body, s.orelse = _guarded_return(s.body), _guarded_return(s.orelse)
            if rest and _sets_flag([s], "do_return"):
                b, e = _ends_with_return(s.body), _ends_with_return(s.orelse)
                if b and e:
                    return out + [s]  # the rest is dead code
                if b != e:
                    if b:
                        s.orelse = _guarded_return(s.orelse + rest)
                    else:
                        s.body = _guarded_return(s.body + rest)
                    return out + [s]
        elif isinstance(s, ast.With):
            s.body = _guarded_return(s.body)
        elif isinstance(s, ast.Try):
            s.body = _guarded_return(s.body)
            for h in s.handlers:
                h.body = _guarded_return(h.body)
            s.orelse = _guarded_return(s.orelse)
            s.finalbody = _guarded_return(s.finalbody)
        out.append(s)
        if rest and not isinstance(s, ast.Assign) and _sets_flag([s], "do_return"):
            if _ends_with_return([s]):
                return out  # the rest is dead code
            guard = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=_name("do_return")),
                           body=_guarded_return(rest), orelse=[])
            return out + [ast.copy_location(guard, rest[0])]
    return out


# ---- pass 2: calls and expressions -----------------------------------------------------
class Expressions(ast.NodeTransformer):
    """Calls go through ag__.converted_call (user functions are converted when called);
    range() through ag__.range_; and/or/not and `a if c else b` through ag__ operators that
    build tensor ops when their operands are tensors and keep Python's short-circuit
    otherwise."""

    def __init__(self, root=None):
        params = root.args.posonlyargs + root.args.args if root is not None else []
        self.root, self.self_name = root, params[0].arg if params else None

    def visit_FunctionDef(self, node):
        if node is self.root:
            return self.generic_visit(node)
        saved, self.self_name = self.self_name, None  # a nested def's super() is its own
        self.generic_visit(node)
        self.self_name = saved
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "super" and not node.args and self.self_name:
            # zero-argument super() reads its frame's first argument, which in a generated
            # branch or loop function is not the method's self: name both explicitly
            node.args = [_name("__class__"), _name(self.self_name)]
        elif isinstance(f, ast.Name) and f.id == "range":
            node.func = _ag("range_")
        elif not (isinstance(f, ast.Name) and f.id in _NOT_WRAPPED) and \
                not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "ag__"):
            node.func = ast.copy_location(_call(_ag("converted_call"), f), f)
        return node

    def visit_Compare(self, node):
        # a < b < c is a < b and b < c (b evaluated twice, as TF evaluates it), so a chain of
        # tensor comparisons is a lazy tensor `and`, not the truth value of a tensor
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        pairs, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            pairs.append(ast.copy_location(ast.Compare(left=left, ops=[op], comparators=[right]), node))
            left = copy.deepcopy(right)
        expr = pairs[-1]
        for p in reversed(pairs[:-1]):
            expr = _call(_ag("and_"), p, _lambda(expr))
        return ast.copy_location(expr, node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        expr = node.values[-1]
        for v in reversed(node.values[:-1]):  # a and b and c -> and_(a, lambda: and_(b, lambda: c))
            expr = _call(_ag(op), v, _lambda(expr))
        return ast.copy_location(expr, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call(_ag("not_"), node.operand), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.copy_location(_call(_ag("if_exp"), node.test, _lambda(node.body), _lambda(node.orelse)), node)

    def visit_Assert(self, node):
        # An assert op on a tensor when Feature.ASSERT_STATEMENTS is on, else Python's assert
        # (ag__.assert_stmt decides); the message stays lazy, as Python's.
        self.generic_visit(node)
        msg = _lambda(node.msg) if node.msg is not None else ast.Constant(None)
        return ast.copy_location(ast.Expr(_call(_ag("assert_stmt"), node.test, msg)), node)


# ---- reads of names that may be undefined ------------------------------------------------
def _flag(n):
    return n in ("do_return", "retval_") or n.startswith(("break__", "continue__"))


class WrapLoads(ast.NodeTransformer):
    """Each read of a name that a converted statement binds goes through ag__.ld, which raises
    TF's "'x' is used before assignment" when the name holds an Undefined (a branch or loop
    that did not bind it)."""

    def __init__(self, fn):
        self.names = set()
        for n in ast.walk(fn):
            if isinstance(n, (ast.If, ast.While, ast.For)):
                extra = [ast.Assign(targets=[n.target], value=ast.Constant(None))] if isinstance(n, ast.For) else []
                self.names |= {x for x in assigned(extra + n.body + n.orelse) if not _flag(x)}

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return ast.copy_location(_call(_ag("ld"), node), node)
        return node


# ---- set_loop_options and unsupported constructs ------------------------------------------
def _is_loop_options(stmt):
    """Whether stmt is a `...set_loop_options(...)` call (its callee wrapped by converted_call)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    if isinstance(f, ast.Call) and f.args:  # ag__.converted_call(f)
        f = f.args[0]
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return name == "set_loop_options"


def _take_loop_options(fn):
    """Each loop's set_loop_options(...) calls, taken out of its body: their keywords become
    node.ag_opts, an ag__.loop_options(...) call evaluated where the loop starts (the
    variables the shape invariants name hold their values before the loop)."""
    for node in ast.walk(fn):
        if not isinstance(node, _LOOP):
            continue
        found = [s for s in node.body if _is_loop_options(s)]
        node.ag_opts = ast.Constant(None)
        if found:
            node.body = [s for s in node.body if not _is_loop_options(s)] or [ast.Pass()]
            opts = found[-1].value
            node.ag_opts = _call(_ag("loop_options"), *opts.args, **{k.arg: k.value for k in opts.keywords})


def _is_generator(fn):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk_scope(fn))


def check_supported(fn, strict):
    """TF's refusals: generators are never converted (the function runs as it is, with TF's
    warning); a loop with an else clause is refused in AUTOGRAPH_STRICT_CONVERSION mode, and
    otherwise converted, raising only when the loop runs on a tensor."""
    if _is_generator(fn):
        raise UnsupportedLanguageElementError("generators are not supported")
    if strict:
        for n in ast.walk(fn):
            if isinstance(n, ast.For) and n.orelse:
                raise UnsupportedLanguageElementError("for/else statement not yet supported")
            if isinstance(n, ast.While) and n.orelse:
                raise UnsupportedLanguageElementError("while/else statement not yet supported")

def transform(fn_node, strict=False):
    """Converts a FunctionDef in place (its decorators dropped) and returns it."""
    fn_node.decorator_list = []
    check_supported(fn_node, strict)
    for n in ast.walk(fn_node):
        if isinstance(n, _LOOP) and n.orelse:
            n.ag_orelse = True
    names = Names()
    fn_node = LowerReturns().visit(fn_node)
    fn_node = LowerJumps(names).visit(fn_node)
    fn_node = Expressions(fn_node).visit(fn_node)
    for n in ast.walk(fn_node):
        if isinstance(n, ast.For) and getattr(n, "ag_extra_test", None) is not None:
            n.ag_extra_test = Expressions().visit(n.ag_extra_test)
    _take_loop_options(fn_node)
    fn_node = WrapLoads(fn_node).visit(fn_node)
    annotate_liveness(fn_node.body)
    fn_node = statements.ControlFlow(names).function(fn_node)
    ast.fix_missing_locations(fn_node)
    return fn_node
