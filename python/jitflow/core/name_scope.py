"""Name scopes (TF's tf.name_scope): eagerly they name the variables and modules made inside
("net/w:0"); while tracing they name ops (the C++ trace's own scope stack)."""
import threading

from .. import _C
from .export import export

# The name scopes entered on this thread, innermost last: (full scope "outer/inner/", entered
# while tracing). The C++ scope stack exists only while tracing, so eagerly this is what gives
# TF's nested names: a module made in another's scope is "net/sub/", a variable "net/w:0".
_scopes = threading.local()


def _scope_stack():
    s = getattr(_scopes, "stack", None)
    if s is None:
        s = _scopes.stack = []
    return s


def current_module_scope():
    """The innermost name scope on this thread ("net/sub/"), or "". A trace does not inherit
    the eager scopes around it (TF's function graphs start at the root)."""
    tracing = _C.is_tracing()
    for full, traced in reversed(_scope_stack()):
        if traced == tracing:
            return full
        if tracing:
            break
    return ""


@export("get_current_name_scope")
def get_current_name_scope():
    """TF's tf.get_current_name_scope: the current scope without its trailing "/" ("a/b")."""
    return current_module_scope().rstrip("/")


@export("name_scope")
class name_scope:
    """TF's tf.name_scope. Entering returns the full scope ("outer/inner/"); a name ending in
    "/" is absolute. While tracing, op names carry it (made unique: "layer_1/" on reuse);
    eagerly it names the variables and modules made inside (TF does not make eager scopes
    unique)."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise ValueError("name for name_scope must be a string.")  # noqa: TRY004  (TF raises ValueError)
        self._name = name
        self._local = threading.local()  # per thread: what each entry pushed (threads trace concurrently)

    @property
    def name(self):
        return self._name

    def __enter__(self):
        tracing = _C.is_tracing()
        scope = None
        if tracing:
            scope = _C.name_scope(self._name)
            full = scope.__enter__()
        elif not self._name or self._name.endswith("/"):
            full = self._name  # "" is the root scope, "x/" an absolute one
        else:
            full = current_module_scope() + self._name + "/"
        if not hasattr(self._local, "inner"):
            self._local.inner = []
        self._local.inner.append(scope)
        _scope_stack().append((full, tracing))
        return full

    def __exit__(self, *exc):
        _scope_stack().pop()
        scope = self._local.inner.pop()
        if scope is not None:
            scope.__exit__(*exc)
        return False

    def __repr__(self):
        return f"<jf.name_scope {self._name!r}>"
