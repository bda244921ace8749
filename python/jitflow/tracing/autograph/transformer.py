"""AutoGraph's source-to-source passes: a function's AST in, the same function with its
control flow routed through `ag__` runtime calls out (see operators.py for what they do)."""
import ast
import itertools

_LOOP = (ast.While, ast.For)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Calls the generated code must make itself: zero-argument super() reads the caller's frame.
_NOT_WRAPPED = {"super", "locals", "globals", "vars", "eval", "exec", "range"}


class _Names:
    """Fresh generated names (prefix ag__ for functions, a readable prefix for the flags,
    which are user-visible loop state in to_code)."""

    def __init__(self):
        self._n = itertools.count(1)

    def new(self, kind):
        return f"{kind}__{next(self._n)}"


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _ag(attr):
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _call(func, *args, **kwargs):
    return ast.Call(func=func, args=list(args), keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()])


def _assign(target, value):
    return ast.Assign(targets=[_name(target, True)], value=value)


def _strs(names):
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _walk_scope(node):
    """The nodes of node's own scope: nested functions, lambdas, classes and comprehensions
    are not entered (their names are their own)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))


def assigned(stmts, excluded=()):
    """Names a block binds in the enclosing function's scope, in first-binding order."""
    out = []
    for s in stmts:
        nodes = [s] + list(_walk_scope(s)) if not isinstance(s, _SCOPES) else [s]
        for n in nodes:
            name = None
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                name = n.id
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = n.name
            if name and not name.startswith("ag__") and name not in excluded and name not in out:
                out.append(name)
    return out


def loaded(nodes):
    """Every name read in nodes, nested scopes included (a closure reads them later)."""
    out = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out.add(n.id)
    return out


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
    """A return inside if/while/for/with/try becomes `do_return = True; retval_ = value`
    (TF's names, which its error messages show), a break out of the enclosing loop, and the
    statements after it guarded; the function ends with `return retval_`. An `if` whose
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
                new = [_assign("do_return", ast.Constant(True)), _assign("retval_", value)]
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
    last = stmts[-1] if stmts else None
    return isinstance(last, ast.Assign) and isinstance(last.targets[0], ast.Name) and last.targets[0].id == "retval_"


def _guarded_return(stmts):
    """The statements after a possible return wrapped in `if not do_return:`, or moved into
    the other branch of an `if` one of whose branches surely returned."""
    out = []
    for i, s in enumerate(stmts):
        rest = stmts[i + 1:]
        if isinstance(s, ast.If):
            s.body, s.orelse = _guarded_return(s.body), _guarded_return(s.orelse)
            if rest and _sets_flag([s], "do_return"):
                b, e = _ends_with_return(s.body), _ends_with_return(s.orelse)
                if b != e:
                    if b:
                        s.orelse = _guarded_return(s.orelse + rest)
                    else:
                        s.body = _guarded_return(s.body + rest)
                    return out + [s]
        elif isinstance(s, (ast.With, ast.Try)):
            s.body = _guarded_return(s.body)
        out.append(s)
        if rest and not isinstance(s, ast.Assign) and _sets_flag([s], "do_return"):
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


def _lambda(body):
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])
    return ast.copy_location(ast.Lambda(args=args, body=body), body)


# ---- pass 3: which names are read after a statement ------------------------------------
def _flow(stmts, defined=()):
    """(names a block may read before binding them, names it surely binds). Conservative:
    a loop, with or try may read anything it reads first and surely binds nothing."""
    exposed, defined = set(), set(defined)
    for s in stmts:
        if isinstance(s, ast.If):
            exposed |= loaded([s.test]) - defined
            e1, d1 = _flow(s.body, defined)
            e2, d2 = _flow(s.orelse, defined)
            exposed |= e1 | e2
            defined |= d1 & d2
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            exposed |= (loaded([s]) | {s.target.id}) - defined
            defined.add(s.target.id)
        elif isinstance(s, (ast.Assign, ast.Expr, ast.Return, ast.FunctionDef, ast.ClassDef, ast.Pass)):
            exposed |= loaded([s]) - defined
            defined |= set(assigned([s]))
        else:
            exposed |= loaded([s]) - defined
    return exposed, defined


def _live_in(stmts, live_out):
    exposed, defined = _flow(stmts)
    return exposed | (set(live_out) - defined)


def annotate_liveness(stmts, live_out=frozenset()):
    """Sets node.ag_live on each if/while/for: the names that may be read after it before
    being bound again (a loop body's end also flows into its next iteration)."""
    for i, s in enumerate(stmts):
        later = _live_in(stmts[i + 1:], live_out)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotate_liveness(s.body)
        elif isinstance(s, ast.If):
            s.ag_live = later
            annotate_liveness(s.body, later)
            annotate_liveness(s.orelse, later)
        elif isinstance(s, ast.While):
            s.ag_live = later
            annotate_liveness(s.body, later | loaded([s.test]) | _flow(s.body)[0])
            annotate_liveness(s.orelse, later)
        elif isinstance(s, ast.For):
            s.ag_live = later
            extra = getattr(s, "ag_extra_test", None)
            carried = _flow(s.body, assigned([ast.Assign(targets=[s.target], value=ast.Constant(None))]))[0]
            annotate_liveness(s.body, later | carried | (loaded([extra]) if extra else set()))
            annotate_liveness(s.orelse, later)
        elif isinstance(s, (ast.With, ast.Try)):
            annotate_liveness(s.body, later)
            for h in getattr(s, "handlers", []):
                annotate_liveness(h.body, later)
            annotate_liveness(getattr(s, "orelse", []), later)
            annotate_liveness(getattr(s, "finalbody", []), later)


# ---- pass 4: if / while / for become ag__ calls on generated functions -------------------
def _def(name, params, body, returns):
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    ret = ast.Return(value=ast.Tuple(elts=[_name(n) for n in returns], ctx=ast.Load()))
    return ast.FunctionDef(name=name, args=args, body=(body or [ast.Pass()]) + [ret],
                           decorator_list=[], returns=None, type_comment=None)


def _state_assign(names, value):
    if not names:
        return ast.Expr(value=value)
    return ast.Assign(targets=[ast.Tuple(elts=[_name(n, True) for n in names], ctx=ast.Store())], value=value)


def _get_vars(names):
    return _call(_ag("get_vars"), _call(_name("locals")), _strs(names))


class ControlFlow(ast.NodeTransformer):
    """Each if/while/for becomes functions of its state (the names it assigns) and one
    ag__.if_stmt / while_stmt / for_stmt call that decides at trace time between Python
    control flow (a Python condition, a Python iterable) and jf.cond / jf.while_loop."""

    def __init__(self, names, excluded):
        self.names = names
        self.excluded = excluded  # global / nonlocal names: side effects, not state

    def _located(self, stmts, node):
        """Generated statements at the line of the statement they replace (a failing
        ag__.if_stmt shows the user's `if` line); original sub-trees keep their own lines."""
        end = getattr(getattr(node, "test", None) or getattr(node, "iter", None), "end_col_offset", None)
        for s in stmts:
            for n in ast.walk(s):
                if n is s or not hasattr(n, "lineno") and isinstance(n, (ast.expr, ast.stmt, ast.arg)):
                    n.lineno = n.end_lineno = node.lineno
                    n.col_offset, n.end_col_offset = node.col_offset, end or node.col_offset + 1
        return stmts

    def visit_FunctionDef(self, node):
        saved = self.excluded
        self.excluded = set(saved) | _declared(node)
        self.generic_visit(node)
        self.excluded = saved
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        state = assigned(node.body + node.orelse, self.excluded)
        t, f = self.names.new("ag__if_true"), self.names.new("ag__if_false")
        live = _live(node, state)
        call = _call(_ag("if_stmt"), node.test, _name(t), _name(f), _get_vars(state), _strs(state), _strs(live))
        return self._located([_def(t, state, node.body, state), _def(f, state, node.orelse, state),
                              _state_assign(state, call)], node)

    def visit_While(self, node):
        self.generic_visit(node)
        opts = _loop_options(node)
        state = assigned(node.body, self.excluded)
        test, body = self.names.new("ag__while_test"), self.names.new("ag__while_body")
        test_fn = _def(test, state, [], [])
        test_fn.body = [ast.Return(value=node.test)]
        live = _live(node, state)
        call = _call(_ag("while_stmt"), _name(test), _name(body), _get_vars(state), _strs(state), _strs(live), opts)
        out = [test_fn, _def(body, state, node.body, state), _state_assign(state, call)]
        return self._located(out, node) + node.orelse

    def visit_For(self, node):
        self.generic_visit(node)
        opts = _loop_options(node)
        state = assigned([ast.Assign(targets=[node.target], value=ast.Constant(None))] + node.body, self.excluded)
        body, item = self.names.new("ag__for_body"), self.names.new("ag__item")
        unpack = ast.copy_location(ast.Assign(targets=[node.target], value=_name(item)), node)
        out = [_def(body, [item] + state, [unpack] + node.body, state)]
        extra = ast.Constant(None)
        if getattr(node, "ag_extra_test", None) is not None:
            extra_name = self.names.new("ag__extra_test")
            fn = _def(extra_name, state, [], [])
            fn.body = [ast.Return(value=Expressions().visit(node.ag_extra_test))]
            out.append(fn)
            extra = _name(extra_name)
        target = node.target.id if isinstance(node.target, ast.Name) else ""
        live = _live(node, state)
        call = _call(_ag("for_stmt"), node.iter, extra, _name(body), _get_vars(state), _strs(state),
                     _strs(live), ast.Constant(target), opts)
        out.append(_state_assign(state, call))
        return self._located(out, node) + node.orelse


def _is_loop_options(stmt):
    """Whether stmt is a `...set_loop_options(...)` call (its callee wrapped by converted_call)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    if isinstance(f, ast.Call) and f.args:  # ag__.converted_call(f)
        f = f.args[0]
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return name == "set_loop_options"


def _loop_options(node):
    """A loop body's set_loop_options(...) calls, taken out of the body: their keywords become
    ag__.loop_options(...), evaluated where the loop starts (the variables the shape
    invariants name hold their values before the loop)."""
    found = [s for s in node.body if _is_loop_options(s)]
    if not found:
        return ast.Constant(None)
    node.body = [s for s in node.body if not _is_loop_options(s)] or [ast.Pass()]
    return _call(_ag("loop_options"), *found[-1].value.args, **{k.arg: k.value for k in found[-1].value.keywords})


def _live(node, state):
    live = getattr(node, "ag_live", None)  # None: in a class body, not analysed
    return [n for n in state if live is None or n in live]


def _declared(fn):
    out = set()
    for n in _walk_scope(fn):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def _is_generator(fn):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk_scope(fn))


def transform(fn_node):
    """Converts a FunctionDef in place (its decorators dropped) and returns it."""
    fn_node.decorator_list = []
    if _is_generator(fn_node):
        raise NotImplementedError("generators are not converted")
    names = _Names()
    fn_node = LowerReturns().visit(fn_node)
    fn_node = LowerJumps(names).visit(fn_node)
    fn_node = Expressions(fn_node).visit(fn_node)
    annotate_liveness(fn_node.body)
    fn_node = ControlFlow(names, _declared(fn_node)).visit(fn_node)
    ast.fix_missing_locations(fn_node)
    return fn_node
