"""jf.autograph: converts Python control flow on tensors inside jf.function (if/while/for,
break/continue, and/or/not, conditional expressions) into jf.cond / jf.while_loop, as TF's
AutoGraph does. Public names: jf.autograph.to_code, jf.autograph.experimental.do_not_convert."""
from .._api import export
from . import conversion

to_code = export("autograph.to_code")(conversion.to_code)
do_not_convert = export("autograph.experimental.do_not_convert")(conversion.do_not_convert)


@export("autograph.experimental.set_loop_options")
def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None, shape_invariants=None):
    """Options for the converted loop whose body calls this (shape_invariants as (variable,
    shape) pairs, maximum_iterations); AutoGraph takes the call out of the loop body. Called
    anywhere else it does nothing, as in TF."""
