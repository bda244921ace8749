"""AutoGraph's statement pass: each if/while/for becomes functions over the enclosing scope and
one ag__.if_stmt / while_stmt / for_stmt call, as TF's AutoGraph writes them. The branch and
body functions bind the statement's state with `nonlocal`, so a closure that reads a loop
variable sees its current value, and get_state/set_state read and write that state, composite
names (`d['a']`, `self.x`) included, for the runtime (operators.py) to carry through a
jf.cond or jf.while_loop when the condition is a tensor."""
import ast
import copy

from .analysis import composites, flow, loaded, modified, root
from .nodes import MATCH, SCOPES, ag, assign, call, def_, name, strs, walk_scope


class _Scope:
    """One user function being converted: the names it declares global or nonlocal (never
    state: they are written through, as in Python) and the names it deletes somewhere (read
    through ldu, since they may be unbound where a statement ends)."""

    def __init__(self, fn):
        self.declared = {}
        self.deleted = set()
        for n in walk_scope(fn):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                for d in n.names:
                    self.declared[d] = type(n)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del):
                self.deleted.add(n.id)


def _hoist_declarations(fn, scope):
    """The function's global/nonlocal statements, wherever they were, as one each at its top:
    a branch that held one becomes a function of its own, where it would not apply to the
    rest of the scope."""
    def strip(stmts):
        out = []
        for s in stmts:
            if isinstance(s, (ast.Global, ast.Nonlocal)):
                continue
            if not isinstance(s, SCOPES):
                for field in ("body", "orelse", "finalbody"):
                    if isinstance(getattr(s, field, None), list) and getattr(s, field):
                        setattr(s, field, strip(getattr(s, field)) or [ast.Pass()])
                for h in getattr(s, "handlers", []):
                    h.body = strip(h.body) or [ast.Pass()]
            out.append(s)
        return out

    fn.body = strip(fn.body) or [ast.Pass()]
    for kind in (ast.Nonlocal, ast.Global):
        names = sorted(n for n, k in scope.declared.items() if k is kind)
        if names:
            fn.body.insert(0, ast.copy_location(kind(names=names), fn.body[0]))


class ControlFlow:
    def __init__(self, names):
        self.names = names

    # ---- scopes and blocks ---------------------------------------------------------------
    def function(self, fn):
        scope = _Scope(fn)
        _hoist_declarations(fn, scope)
        a = fn.args
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p is not None}
        fn.body = self._block(fn.body, scope, params)
        return fn

    def _block(self, stmts, scope, bound):
        """stmts converted; bound: the names surely bound where the block starts (their
        statements need no initial Undefined)."""
        out, bound = [], set(bound)
        for s in stmts:
            if isinstance(s, (ast.If, ast.While, ast.For)):
                new, state = getattr(self, "_" + type(s).__name__.lower())(s, scope, bound)
                out.extend(new)
                bound |= set(state) - scope.deleted
                continue
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(s)
            elif isinstance(s, ast.ClassDef):
                for m in s.body:
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.function(m)
            elif isinstance(s, ast.With):
                s.body = self._block(s.body, scope, bound)
            elif isinstance(s, MATCH):
                for case in s.cases:
                    case.body = self._block(case.body, scope, bound)
            elif isinstance(s, ast.Try):
                s.body = self._block(s.body, scope, bound)
                for h in s.handlers:
                    h.body = self._block(h.body, scope, bound)
                s.orelse = self._block(s.orelse, scope, bound)
                s.finalbody = self._block(s.finalbody, scope, bound)
            out.append(s)
            if not isinstance(s, (ast.Try, ast.While, ast.For, ast.If)):
                bound = flow([s], bound)[1] - scope.deleted
        return out

    # ---- the statements ------------------------------------------------------------------
    def _if(self, node, scope, bound):
        plain = [n for n in modified(node.body + node.orelse) if n not in scope.declared]
        comps = [c for c in composites(node.body + node.orelse) if root(c[0]) not in plain]
        live = getattr(node, "ag_live", None)
        is_live = (lambda n: True) if live is None else (lambda n: n in live)
        state = [n for n in plain if is_live(n)] + [c for c in comps if is_live(root(c[0]))]
        state += [n for n in plain if not is_live(n)] + [c for c in comps if not is_live(root(c[0]))]
        nouts = sum(1 for n in plain if is_live(n)) + sum(1 for c in comps if is_live(root(c[0])))
        inner = bound | set(plain)
        body_name, else_name = self.names.new("ag__if_body"), self.names.new("ag__else_body")
        defs = [self._fn(body_name, [], self._block(node.body, scope, inner), plain, scope),
                self._fn(else_name, [], self._block(node.orelse, scope, inner), plain, scope)]
        get, set_, state_defs = self._state_fns(state, scope)
        stmt = call(ag("if_stmt"), node.test, name(body_name), name(else_name), name(get), name(set_),
                    strs(_label(s) for s in state), ast.Constant(nouts))
        out = defs + state_defs + self._inits(plain, bound, scope) + [ast.Expr(stmt)]
        return _located(out, node), plain

    def _loop_state(self, node, body_reads, scope, extra_mod=()):
        """(plain loop variables, composite loop variables, all plain names the body binds):
        what the body binds and may read before binding it, or that is read after the loop
        (TF's loop variables). Other names the body binds are local to one iteration."""
        mod = [n for n in modified(list(extra_mod) + node.body) if n not in scope.declared]
        live = getattr(node, "ag_live", None)
        wanted = None if live is None else set(live) | body_reads
        plain = [n for n in mod if wanted is None or n in wanted]
        reads = loaded(node.body) | body_reads | (set(live) if live is not None else set())
        comps = [c for c in composites(node.body) if root(c[0]) not in mod and
                 (live is None or root(c[0]) in reads)]
        return plain, comps, mod

    def _while(self, node, scope, bound):
        reads = loaded([node.test]) | flow(node.body)[0]
        plain, comps, mod = self._loop_state(node, reads, scope)
        inner = (bound - (set(mod) - set(plain))) | set(plain)
        test_name, body_name = self.names.new("ag__loop_test"), self.names.new("ag__loop_body")
        test_fn = def_(test_name, [], [ast.Return(value=node.test)])
        self._declare(test_fn, [], scope)
        body_fn = self._fn(body_name, [], self._block(node.body, scope, inner), plain, scope)
        state = plain + comps
        get, set_, state_defs = self._state_fns(state, scope)
        kwargs = {"has_else": ast.Constant(True)} if getattr(node, "ag_orelse", False) else {}
        stmt = call(ag("while_stmt"), name(test_name), name(body_name), name(get), name(set_),
                    strs(_label(s) for s in state), node.ag_opts, **kwargs)
        out = [test_fn, body_fn] + state_defs + self._inits(plain, bound, scope) + [ast.Expr(stmt)]
        return _located(out, node) + self._block(node.orelse, scope, bound | set(plain)), plain

    def _for(self, node, scope, bound):
        unpack = ast.Assign(targets=[node.target], value=name("ag__itr"))
        extra = getattr(node, "ag_extra_test", None)
        targets = set(modified([unpack]))
        reads = flow(node.body, targets)[0] | (loaded([extra]) if extra is not None else set())
        plain, comps, mod = self._loop_state(node, reads, scope, [unpack])
        inner = (bound - (set(mod) - set(plain))) | set(plain) | targets
        body_name = self.names.new("ag__loop_body")
        body = [ast.copy_location(unpack, node)] + self._block(node.body, scope, inner)
        out = [self._fn(body_name, ["ag__itr"], body, plain, scope)]
        extra_arg = ast.Constant(None)
        if extra is not None:
            extra_name = self.names.new("ag__extra_test")
            fn = def_(extra_name, [], [ast.Return(value=extra)])
            self._declare(fn, [], scope)
            out.append(fn)
            extra_arg = name(extra_name)
        state = plain + comps
        get, set_, state_defs = self._state_fns(state, scope)
        kwargs = {"target": ast.Constant(node.target.id)} if isinstance(node.target, ast.Name) else {}
        if getattr(node, "ag_orelse", False):
            kwargs["has_else"] = ast.Constant(True)
        stmt = call(ag("for_stmt"), node.iter, extra_arg, name(body_name), name(get), name(set_),
                    strs(_label(s) for s in state), node.ag_opts, **kwargs)
        out += state_defs + self._inits(plain, bound, scope) + [ast.Expr(stmt)]
        return _located(out, node) + self._block(node.orelse, scope, bound | set(plain)), plain

    # ---- generated functions -------------------------------------------------------------
    def _fn(self, fn_name, params, body, nonlocals, scope):
        fn = def_(fn_name, params, body)
        self._declare(fn, nonlocals, scope)
        return fn

    @staticmethod
    def _declare(fn, nonlocals, scope):
        """fn's declarations: nonlocal for the state it binds, and the user's own global and
        nonlocal names it uses (they were declared for the whole user function)."""
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} - {fn.name}
        decls = []
        for kind in (ast.Global, ast.Nonlocal):
            names = sorted(n for n, k in scope.declared.items() if k is kind and n in used)
            if names:
                decls.append(kind(names=names))
        if nonlocals:
            decls.append(ast.Nonlocal(names=list(nonlocals)))
        fn.body = decls + fn.body

    def _state_fns(self, state, scope):
        """get_state/set_state for the state (plain names, (node, text) composite names)."""
        get, set_ = self.names.new("ag__get_state"), self.names.new("ag__set_state")
        reads, writes, plain = [], [], []
        for i, s in enumerate(state):
            value = ast.Subscript(value=name("ag__vals"), slice=ast.Constant(i), ctx=ast.Load())
            if isinstance(s, str):
                plain.append(s)
                reads.append(_ldu(name(s), s) if s in scope.deleted else name(s))
                writes.append(assign(s, value))
                continue
            node, text = s
            load = copy.deepcopy(node)
            _set_ctx(load, ast.Load())
            reads.append(_ldu(load, text))
            store = copy.deepcopy(node)
            _set_ctx(store, ast.Store(), outer_only=True)
            key = store.slice if isinstance(store, ast.Subscript) else ast.Constant(store.attr)
            drop = call(ag("delete"), copy.deepcopy(load.value), copy.deepcopy(key),
                        ast.Constant(isinstance(store, ast.Subscript)))
            writes.append(ast.If(test=call(ag("is_undefined"), value), body=[ast.Expr(drop)],
                                 orelse=[ast.Assign(targets=[store], value=copy.deepcopy(value))]))
        get_fn = def_(get, [], [ast.Return(value=ast.Tuple(elts=reads, ctx=ast.Load()))])
        set_fn = def_(set_, ["ag__vals"], writes)
        self._declare(get_fn, [], scope)
        self._declare(set_fn, plain, scope)
        return get, set_, [get_fn, set_fn]

    @staticmethod
    def _inits(plain, bound, scope):
        """`x = ag__.ldu(lambda: x, 'x')` for each state name that may be unbound here: it
        gives the name a binding in this scope (for the generated functions' nonlocal) and an
        Undefined value where it has none yet."""
        return [assign(n, _ldu(name(n), n)) for n in plain if n not in bound or n in scope.deleted]


def _label(s):
    return s if isinstance(s, str) else s[1]


def _ldu(expr, text):
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])
    return call(ag("ldu"), ast.Lambda(args=args, body=expr), ast.Constant(text))


def _set_ctx(node, ctx, outer_only=False):
    """node's context (Load for a read of a composite name, Store for the assignment to it;
    the inner parts of a store target stay reads)."""
    node.ctx = ctx
    if outer_only:
        for n in ast.walk(node.value):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
    else:
        for n in ast.walk(node):
            if hasattr(n, "ctx"):
                n.ctx = ctx


def _located(stmts, node):
    """Generated statements at the line of the statement they replace (a failing
    ag__.if_stmt shows the user's `if` line); original sub-trees keep their own lines."""
    end = getattr(getattr(node, "test", None) or getattr(node, "iter", None), "end_col_offset", None)
    for s in stmts:
        for n in ast.walk(s):
            if n is s or not hasattr(n, "lineno") and isinstance(n, (ast.expr, ast.stmt, ast.arg)):
                n.lineno = n.end_lineno = node.lineno
                n.col_offset, n.end_col_offset = node.col_offset, end or node.col_offset + 1
    return stmts

