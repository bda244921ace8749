"""What a converted statement reads and writes: the names a block binds (plain names and TF's
"composite names", `d['a']` or `self.x`), the names it reads, and which of them may be read
after a statement (liveness), which decides a statement's outputs and loop variables."""
import ast

from .nodes import MATCH as _MATCH
from .nodes import SCOPES, walk_scope


def _scope_nodes(stmts):
    for s in stmts:
        yield s
        if not isinstance(s, SCOPES):
            yield from walk_scope(s)


def assigned(stmts, excluded=()):
    """Names a block binds in the enclosing function's scope, in first-binding order."""
    out = []
    for n in _scope_nodes(stmts):
        found = None
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            found = n.id
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = n.name
        if found and not found.startswith("ag__") and found not in excluded and found not in out:
            out.append(found)
    return out


def modified(stmts, excluded=()):
    """Names a block binds or unbinds (`del x` changes x too), in first-binding order: a
    converted statement's candidate state."""
    out = []
    for n in _scope_nodes(stmts):
        found = []
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            found = [n.id]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or \
                isinstance(n, ast.ExceptHandler) and n.name:
            found = [n.name]
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            found = [a.asname or a.name.split(".")[0] for a in n.names if a.name != "*"]
        for f in found:
            if not f.startswith("ag__") and f not in excluded and f not in out:
                out.append(f)
    return out


def root(node):
    """The name a composite name (`x`, `x.a`, `x['k']`, `x['k'][0]`) starts from, or None when
    node is not one (a subscript that is not a constant, a call, ...)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        constant_key = isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            isinstance(node.slice.value, (str, int)) and not isinstance(node.slice.value, bool)
        if isinstance(node, ast.Attribute) or constant_key:
            node = node.value
        else:
            return None


def composites(stmts):
    """The composite names a block assigns or deletes (`d['a'] = 1`, `self.n += 1`), as
    (target node, TF's name for it), in first-assignment order."""
    out, seen = [], set()
    for n in _scope_nodes(stmts):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)) and \
                root(n) is not None:
            text = ast.unparse(n)
            if text not in seen:
                seen.add(text)
                out.append((n, text))
    return out


def loaded(nodes):
    """Every name read in nodes, nested scopes included (a closure reads them later)."""
    out = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out.add(n.id)
    return out


def flow(stmts, defined=()):
    """(names a block may read before binding them, names it surely binds). A loop surely
    binds nothing (it may not run); a try may read anything it reads and surely binds
    nothing (conservative)."""
    exposed, defined = set(), set(defined)
    for s in stmts:
        if isinstance(s, ast.If):
            exposed |= loaded([s.test]) - defined
            e1, d1 = flow(s.body, defined)
            e2, d2 = flow(s.orelse, defined)
            exposed |= e1 | e2
            defined |= d1 & d2
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            exposed |= (loaded([s]) | {s.target.id}) - defined
            defined.add(s.target.id)
        elif isinstance(s, (ast.Assign, ast.Expr, ast.Return, ast.FunctionDef, ast.ClassDef, ast.Pass)):
            exposed |= loaded([s]) - defined
            defined |= set(assigned([s]))
        elif isinstance(s, ast.Delete):
            exposed |= loaded([s]) - defined
            defined -= {t.id for t in s.targets if isinstance(t, ast.Name)}
        elif isinstance(s, ast.For):
            # the target is bound before each iteration reads anything; the body may not run
            target = assigned([ast.Assign(targets=[s.target], value=ast.Constant(None))])
            extra = getattr(s, "ag_extra_test", None)
            exposed |= loaded([s.iter] + ([extra] if extra is not None else [])) - defined
            exposed |= flow(s.body, defined | set(target))[0] | flow(s.orelse, defined)[0]
        elif isinstance(s, ast.While):
            exposed |= (loaded([s.test]) - defined) | flow(s.body, defined)[0] | flow(s.orelse, defined)[0]
        elif isinstance(s, ast.With):
            exposed |= loaded([i.context_expr for i in s.items]) - defined
            e, d = flow(s.body, defined | set(assigned([i.optional_vars for i in s.items if i.optional_vars])))
            exposed |= e
            defined = d
        else:
            exposed |= loaded([s]) - defined
    return exposed, defined


def live_in(stmts, live_out):
    exposed, defined = flow(stmts)
    return exposed | (set(live_out) - defined)


def annotate_liveness(stmts, live_out=frozenset()):
    """Sets node.ag_live on each if/while/for: the names that may be read after it before
    being bound again (a loop body's end also flows into its next iteration; the end of a
    try body into its finally block, and any point of it into its handlers)."""
    for i, s in enumerate(stmts):
        later = live_in(stmts[i + 1:], live_out)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotate_liveness(s.body)
        elif isinstance(s, ast.ClassDef):
            for m in s.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    annotate_liveness(m.body)
        elif isinstance(s, ast.If):
            s.ag_live = later
            annotate_liveness(s.body, later)
            annotate_liveness(s.orelse, later)
        elif isinstance(s, ast.While):
            s.ag_live = later
            annotate_liveness(s.body, later | loaded([s.test]) | flow(s.body)[0])
            annotate_liveness(s.orelse, later)
        elif isinstance(s, ast.For):
            s.ag_live = later
            extra = getattr(s, "ag_extra_test", None)
            carried = flow(s.body, assigned([ast.Assign(targets=[s.target], value=ast.Constant(None))]))[0]
            annotate_liveness(s.body, later | carried | (loaded([extra]) if extra else set()))
            annotate_liveness(s.orelse, later)
        elif isinstance(s, ast.With):
            annotate_liveness(s.body, later)
        elif isinstance(s, _MATCH):
            for case in s.cases:
                annotate_liveness(case.body, later)
        elif isinstance(s, ast.Try):
            after_final = live_in(s.finalbody, later)
            in_handlers = set()
            for h in s.handlers:
                in_handlers |= live_in(h.body, after_final)
                annotate_liveness(h.body, after_final)
            annotate_liveness(s.body, live_in(s.orelse, after_final) | in_handlers)
            annotate_liveness(s.orelse, after_final)
            annotate_liveness(s.finalbody, later)
