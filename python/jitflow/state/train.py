"""jf.train's modules, imported together the first time a program uses jf.train: checkpoints,
their directory helpers and the exponential moving average (each exports its names)."""
from . import checkpoint, checkpoint_utils, moving_average  # noqa: F401
