"""jf.autograph: converts Python control flow on tensors inside jf.function (if/while/for,
break/continue, and/or/not, conditional expressions) into jf.cond / jf.while_loop, as TF's
AutoGraph does. Public names: jf.autograph.to_code, jf.autograph.experimental.do_not_convert."""
from .._api import export
from . import conversion

to_code = export("autograph.to_code")(conversion.to_code)
do_not_convert = export("autograph.experimental.do_not_convert")(conversion.do_not_convert)
