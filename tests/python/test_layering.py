"""The Python package's layering: each layer imports only the layers below it (core -> ops ->
tracing -> autodiff -> state -> data -> distribute -> keras -> the public namespace), with no import cycle between modules and
no import hidden inside a function. Read from the sources with `ast`, so a cycle that only
shows up on some import order still fails here."""
import ast
import pathlib
import re

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "jitflow"
CPP_BINDINGS = PACKAGE.parents[1] / "cpp" / "python"
LAYERS = ["core", "ops", "tracing", "autodiff", "state", "data", "distribute", "keras"]  # bottom first; top-level files come last
# Function-level imports of jitflow modules that are allowed (none: an optional third-party
# dependency is imported where it is used, but jitflow's own modules are imported at the top).
ALLOWED_FUNCTION_LEVEL = frozenset()


def _modules():
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_package)
    return mods


MODULES = _modules()


def _target(module, is_package, node, alias):
    """The jitflow module an import names (the longest existing module prefix), or None."""
    if isinstance(node, ast.Import):
        name = alias.name
    else:
        if node.level:
            base = module.split(".")
            if not is_package:
                base = base[:-1]
            base = base[:len(base) - node.level + 1]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        if alias.name == "_C":
            return None  # the C++ extension sits below every layer
        if f"{name}.{alias.name}" in MODULES:
            name = f"{name}.{alias.name}"
    if name.split(".")[0] != "jitflow" or name.endswith("._C") or name == "jitflow._C":
        return None
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else None


def _imports():
    """(importer, imported, line, inside a function) for every import between jitflow modules."""
    out = []
    for module, (path, is_package) in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))

        def visit(node, in_function, module=module, is_package=is_package):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for alias in child.names:
                        target = _target(module, is_package, child, alias)
                        if target is not None and target != module:
                            out.append((module, target, child.lineno, in_function))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                               ast.Lambda)))
        visit(tree, False)
    return out


IMPORTS = _imports()


def _layer(module):
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return len(LAYERS)  # jitflow/__init__.py and the tools beside it: the public namespace


def test_every_module_is_in_a_layer():
    stray = [m for m in MODULES if _layer(m) == len(LAYERS) and m not in ("jitflow", "jitflow._ops_doc", "jitflow.info")]
    assert not stray, f"modules outside the layers ({', '.join(LAYERS)}): {stray}"


def test_imports_point_down():
    up = [f"{a} (layer {LAYERS[_layer(a)] if _layer(a) < len(LAYERS) else 'top'}) imports {b} "
          f"(layer {LAYERS[_layer(b)] if _layer(b) < len(LAYERS) else 'top'}) at line {line}"
          for a, b, line, _ in IMPORTS if _layer(b) > _layer(a)]
    assert not up, "imports from a lower layer to a higher one:\n" + "\n".join(up)


def test_no_function_level_imports_between_jitflow_modules():
    hidden = [f"{a}:{line} imports {b} inside a function" for a, b, line, inside in IMPORTS
              if inside and b not in ALLOWED_FUNCTION_LEVEL]
    assert not hidden, "\n".join(hidden)


def test_lazy_imports_only_in_the_public_namespace():
    """The one import by name of jitflow's own modules: the public namespace's loader of the
    modules `import jitflow` leaves for first use (jitflow/__init__.py's _LAZY, all of them
    modules in a layer, which its top-level imports could name). Elsewhere importlib would hide an import from
    the checks above."""
    users = sorted(m for m, (path, _) in MODULES.items() if "importlib" in path.read_text())
    assert users == ["jitflow"], f"modules importing jitflow's modules by name: {users}"
    tree = ast.parse(MODULES["jitflow"][0].read_text())
    lazy = next(n.value for n in tree.body if isinstance(n, ast.Assign) and
                getattr(n.targets[0], "id", None) == "_LAZY")
    targets = {ast.literal_eval(v) for v in lazy.values}
    assert targets and all(t.split(".")[0] in LAYERS and f"jitflow.{t}" in MODULES for t in targets), \
        f"_LAZY names modules that are not in a layer: {targets}"


def test_no_import_cycles():
    graph = {m: set() for m in MODULES}
    for a, b, _, _ in IMPORTS:
        # A submodule's import of its own package's __init__ runs it first anyway: not an edge.
        if not a.startswith(b + "."):
            graph[a].add(b)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strongconnect(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            strongconnect(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_checks_see_real_edges():
    """The analysis itself: known edges are found, so the checks above cannot pass empty."""
    edges = {(a, b) for a, b, _, _ in IMPORTS}
    assert ("jitflow.ops.basic_ops", "jitflow.ops.dispatch") in edges
    assert ("jitflow.tracing.function", "jitflow.tracing.autograph") in edges or \
        ("jitflow.tracing.function", "jitflow.tracing.autograph.conversion") in edges
    assert ("jitflow.autodiff.tape", "jitflow.ops.variables") in edges
    assert len(IMPORTS) > 150


def test_modules_the_cpp_bindings_import_exist():
    """The C++ bindings call back into Python modules by name (errors, printing, py_function,
    boolean masks): each name must still be a module after a move."""
    names = set()
    for path in CPP_BINDINGS.glob("*.cc"):
        names |= set(re.findall(r'import\("(jitflow[\w.]*)"\)', path.read_text()))
    assert names, "the bindings import no jitflow module (the pattern is stale)"
    missing = sorted(n for n in names if n not in MODULES)
    assert not missing, f"cpp/python imports modules that do not exist: {missing}"
