"""A traced function's signature in TF's words (Function.pretty_printed_concrete_signatures):
each parameter with its kind and type (a TensorSpec for a tensor, Literal[value] for a Python
value, List/Tuple/Dict of those), and the output structure the same way."""
import inspect

from .._C import Tensor
from ..core.graph import GraphTensor
from ..core.tensor_spec import TensorSpec


def _spec_text(shape, dtype):
    return f"TensorSpec(shape={shape}, dtype=jf.{dtype.name}, name=None)"


def type_text(value, aliases=None):
    """TF's text for one argument or output value of a trace; aliases numbers the variables
    in order of appearance (TF's alias_id)."""
    aliases = {} if aliases is None else aliases
    if isinstance(value, (Tensor, GraphTensor)):
        return _spec_text(value.shape, value.dtype)
    if isinstance(value, TensorSpec):
        return _spec_text(value.shape, value.dtype)
    if hasattr(value, "__jf_tensor__") and hasattr(value, "trainable"):  # a jf.Variable
        alias = aliases.setdefault(id(value), len(aliases))
        return (f"VariableSpec(shape={value.shape}, dtype=jf.{value.dtype.name}, trainable={value.trainable}, "
                f"alias_id={alias})")
    if isinstance(value, list):
        return "List[" + ", ".join(type_text(v, aliases) for v in value) + "]"
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        fields = ", ".join(f"[{n!r}, {type_text(v, aliases)}]" for n, v in zip(type(value)._fields, value))
        return f"{type(value).__name__}[{fields}]"
    if isinstance(value, tuple):
        return "Tuple[" + ", ".join(type_text(v, aliases) for v in value) + "]"
    if isinstance(value, dict):
        return "Dict[" + ", ".join(f"[{k!r}, {type_text(v, aliases)}]" for k, v in value.items()) + "]"
    return f"Literal[{value!r}]"


def in_order_of(traced, original):
    """traced (the arguments as traced: dicts in sorted key order, as one trace serves every
    insertion order) with each dict's items in the order of the call's own dict (TF prints them
    as the first call passed them)."""
    if isinstance(traced, dict) and isinstance(original, dict) and set(traced) == set(original):
        return {k: in_order_of(traced[k], original[k]) for k in original}
    if type(traced) in (list, tuple) and type(original) is type(traced) and len(traced) == len(original):
        return type(traced)(in_order_of(t, o) for t, o in zip(traced, original))
    return traced


def parameters(python_function, args, kwargs):
    """[(name, kind, value)] for a call's arguments bound to the function's parameters, the
    defaults of those not passed included (TF lists every parameter)."""
    try:
        bound = inspect.signature(python_function).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return [(f"args_{i}", "POSITIONAL_ONLY", a) for i, a in enumerate(args)] + \
               [(k, "KEYWORD_ONLY", v) for k, v in kwargs.items()]
    bound.apply_defaults()
    params = bound.signature.parameters
    # As TF: with *args, every positional parameter is positional-only and *args spreads into
    # name_0, name_1, ...; **kwargs spreads into its keys, keyword-only.
    has_var = any(p.kind is p.VAR_POSITIONAL for p in params.values())
    out = []
    for name, value in bound.arguments.items():
        kind = params[name].kind
        if kind is kind.VAR_POSITIONAL:
            out += [(f"{name}_{i}", "POSITIONAL_ONLY", v) for i, v in enumerate(value)]
        elif kind is kind.VAR_KEYWORD:
            out += [(k, "KEYWORD_ONLY", v) for k, v in value.items()]
        elif has_var and kind is kind.POSITIONAL_OR_KEYWORD:
            out.append((name, "POSITIONAL_ONLY", value))
        else:
            out.append((name, kind.name, value))
    return out


def render(entries, verbose=True):
    """TF's layout for [(parameters, outputs)], one entry per concrete function."""
    parts = []
    for params, outputs in entries:
        aliases = {}
        ins = [(name, kind, type_text(v, aliases)) for name, kind, v in params]
        out = type_text(outputs)
        if verbose:
            ins = "\n".join(f"  {name} ({kind}): {text}" for name, kind, text in ins)
            parts.append(f"Input Parameters:\n{ins}\nOutput Type:\n  {out}\nCaptures:\n  None")
        else:
            ins = ", ".join(f"{name}: {text}" for name, _, text in ins)
            parts.append(f"({ins}) -> {out}")
    return ("\n\n" if verbose else "\n").join(parts)
