"""jf.autograph: converts Python control flow on tensors inside jf.function (if/while/for,
break/continue, and/or/not, conditional expressions) into jf.cond / jf.while_loop, as TF's
AutoGraph does. Public names: jf.autograph.to_code, jf.autograph.to_graph,
jf.autograph.experimental.do_not_convert."""
import enum
import functools
import types

from ...core.export import export
from . import conversion, operators

to_code = export("autograph.to_code")(conversion.to_code)


@export("autograph.experimental.Feature")
class Feature(enum.Enum):
    """TF's optional AutoGraph conversions, for jf.function(experimental_autograph_options=).
    jitflow acts on ASSERT_STATEMENTS (a tensor `assert` becomes an Assert op) and
    BUILTIN_FUNCTIONS (`print` of a tensor prints when the graph runs); the others name
    behaviour jitflow has anyway or does not convert."""
    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


def feature_names(options):
    """The enabled feature names of an experimental_autograph_options value (TF accepts one
    Feature or a tuple of them; ALL enables every one)."""
    if options is None:
        return frozenset()
    opts = options if isinstance(options, (tuple, list, set, frozenset)) else (options,)
    for o in opts:
        if not isinstance(o, Feature):
            raise TypeError(f"experimental_autograph_options takes jf.autograph.experimental.Feature values, got {o!r}")
    if Feature.ALL in opts:
        return frozenset(f.value for f in Feature)
    return frozenset(o.value for o in opts)


do_not_convert = export("autograph.experimental.do_not_convert")(conversion.do_not_convert)


@export("autograph.experimental.set_loop_options")
def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None, shape_invariants=None):
    """Options for the converted loop whose body calls this (shape_invariants as (variable,
    shape) pairs, maximum_iterations); AutoGraph takes the call out of the loop body. Called
    anywhere else it does nothing, as in TF."""


@export("autograph.to_graph")
def to_graph(entity, recursive=True, experimental_optional_features=None):
    """TF's tf.autograph.to_graph: the function (or bound method) converted. Called inside a
    jf.function its tensor control flow stages jf.cond / jf.while_loop; called eagerly it runs
    as Python on the eager values, as in TF. The functions it calls are converted when called
    whatever `recursive` says (jitflow wraps every call of converted code). A function
    AutoGraph cannot convert raises, as TF's ConversionError does."""
    del recursive
    if isinstance(entity, types.MethodType):
        return types.MethodType(to_graph(entity.__func__, True, experimental_optional_features), entity.__self__)
    if not isinstance(entity, types.FunctionType):
        raise TypeError(f"jf.autograph.to_graph converts functions and methods, got {entity!r}")
    converted = conversion.convert(entity)
    enabled = feature_names(experimental_optional_features)
    if not enabled:
        return converted

    @functools.wraps(entity)
    def with_features(*args, **kwargs):
        with operators.features(enabled):
            return converted(*args, **kwargs)
    return with_features
