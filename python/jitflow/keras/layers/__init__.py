"""jf.keras.layers: Keras 3's layers on jitflow's ops (docs/keras.md)."""
from .attention import MultiHeadAttention
from .core import Activation, Add, Concatenate, Dense, Dropout, Embedding, Flatten, Reshape
from .input_layer import Input, InputLayer
from .layer import Layer
from .normalization import BatchNormalization, LayerNormalization
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell

__all__ = [
           "GRU",
           "LSTM",
           "RNN",
           "Activation",
           "Add",
           "BatchNormalization",
           "Concatenate",
           "Dense",
           "Dropout",
           "Embedding",
           "Flatten",
           "GRUCell",
           "Input",
           "InputLayer",
           "LSTMCell",
           "Layer",
           "LayerNormalization",
           "MultiHeadAttention",
           "Reshape",
]
