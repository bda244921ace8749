"""model.summary(): Keras 3's table (rich's box characters and its column-width arithmetic, without
colour), the total/trainable/non-trainable parameter counts and their memory sizes."""
import math
import shutil
import textwrap


def _memory(weights):
    seen = {id(w): w for w in weights}.values()
    return sum(math.prod(w.shape) * w.dtype.size for w in seen)


def _readable(size):
    for unit in ["B", "KB", "MB", "GB", "TB", "PB"]:
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _ratio_reduce(total, widths):
    """Shrinks the columns by `total` characters in all, evenly, as rich does for a table wider
    than its width."""
    out, remaining, ratio = [], total, len(widths)
    for w in widths:
        d = min(w, round(remaining / ratio))
        out.append(w - d)
        remaining -= d
        ratio -= 1
    return out


def _shape_text(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


def _output_shape(layer):
    nodes = layer._jf_inbound_nodes
    if nodes:
        outs = nodes[-1].output_tensors
        if len(outs) == 1:
            return _shape_text(outs[0].shape)
        return "[" + ", ".join(_shape_text(t.shape) for t in outs) + "]"
    if layer._jf_output_shape is not None:
        return _shape_text(layer._jf_output_shape)
    return "?"


def _connections(layer, relevant):
    parts = []
    for node in layer._jf_inbound_nodes:
        if relevant is not None and node not in relevant:
            continue
        for t in node.input_tensors:
            src, node_index, tensor_index = t._keras_history
            parts.append(f"{src.name}[{node_index}][{tensor_index}]")
    return ", ".join(parts) or "-"


def _wrap(text, width):
    lines = []
    for piece in text.split("\n"):
        lines.extend(textwrap.wrap(piece, width, break_long_words=True, break_on_hyphens=False) or [""])
    return lines


def render(model, layers, line_length=None, positions=None, show_trainable=False, graph_nodes=None):
    """The summary text. graph_nodes: a functional model's nodes (adds "Connected to")."""
    sequential_like = graph_nodes is None
    if sequential_like:
        default, positions = 88, positions or [0.45, 0.80, 1.0]
        header, align = ["Layer (type)", "Output Shape", "Param #"], ["left", "left", "right"]
    else:
        default, positions = 108, positions or [0.3, 0.56, 0.74, 1.0]
        header, align = ["Layer (type)", "Output Shape", "Param #", "Connected to"], ["left", "left", "right", "left"]
    if show_trainable:
        default += 12
        positions = [p * 0.90 for p in positions] + [1.0]
        header.append("Trainable")
        align.append("center")
    default = min(default, shutil.get_terminal_size().columns - 4)
    line_length = line_length or default
    widths, current = [], 0
    for pos in positions:
        w = int(pos * line_length) - current if pos <= 1 else int(pos) - current
        widths.append(w)
        current += w
    cells = [w + 2 for w in widths]  # rich pads each cell by one space on both sides
    excess = sum(cells) + len(cells) + 1 - line_length
    if excess > 0:
        cells = _ratio_reduce(excess, cells)
    inner = [c - 2 for c in cells]

    rows = []
    for layer in layers:
        params = f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"
        row = [f"{layer.name} ({type(layer).__name__})", _output_shape(layer), params]
        if not sequential_like:
            row.append(_connections(layer, graph_nodes))
        if show_trainable:
            row.append(("Y" if layer.trainable else "N") if layer.weights else "-")
        rows.append(row)

    def line(left, mid, right, fill):
        return left + mid.join(fill * c for c in cells) + right

    def text_row(values, bar):
        wrapped = [_wrap(v, w) for v, w in zip(values, inner)]
        height = max(len(w) for w in wrapped)
        out = []
        for i in range(height):
            parts = []
            for col, w in enumerate(inner):
                s = wrapped[col][i] if i < len(wrapped[col]) else ""
                s = s.rjust(w) if align[col] == "right" else (s.center(w) if align[col] == "center" else s.ljust(w))
                parts.append(" " + s + " ")
            out.append(bar + bar.join(parts) + bar)
        return out

    out = [f'Model: "{model.name}"', line("┏", "┳", "┓", "━")]
    out += text_row(header, "┃")
    out.append(line("┡", "╇", "┩", "━"))
    for i, row in enumerate(rows):
        if i:
            out.append(line("├", "┼", "┤", "─"))
        out += text_row(row, "│")
    out.append(line("└", "┴", "┘", "─"))
    trainable, non_trainable = model.trainable_weights, model.non_trainable_weights
    t_count = sum(math.prod(w.shape) for w in trainable)
    n_count = sum(math.prod(w.shape) for w in non_trainable)
    t_mem, n_mem = _memory(trainable), _memory(non_trainable)
    # A compiled model whose optimizer has made its variables counts them too, as Keras does.
    optimizer = getattr(model, "optimizer", None) if getattr(model, "compiled", False) else None
    opt_vars = list(getattr(optimizer, "variables", None) or [])
    o_count, o_mem = sum(math.prod(v.shape) for v in opt_vars), _memory(opt_vars)
    out.append(f" Total params: {t_count + n_count + o_count:,} ({_readable(t_mem + n_mem + o_mem)})")
    out.append(f" Trainable params: {t_count:,} ({_readable(t_mem)})")
    out.append(f" Non-trainable params: {n_count:,} ({_readable(n_mem)})")
    if opt_vars:
        out.append(f" Optimizer params: {o_count:,} ({_readable(o_mem)})")
    return "\n".join(out)
