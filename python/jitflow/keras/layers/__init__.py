"""jf.keras.layers: Keras 3's layers on jitflow's ops (docs/keras.md). A Keras layer jitflow
lacks raises an AttributeError saying so."""
from .attention import MultiHeadAttention
from .conv import AveragePooling2D, AvgPool2D, Conv2D, MaxPool2D, MaxPooling2D
from .core import Activation, Add, Concatenate, Dense, Dropout, Embedding, Flatten, Reshape, add, concatenate
from .extra import (
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    LeakyReLU,
    ReLU,
    Softmax,
)
from .input_layer import Input, InputLayer
from .layer import Layer
from .normalization import BatchNormalization, LayerNormalization
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell
from .tensor_op import TensorOp  # also gives KerasTensors their operators
from .wrappers import Bidirectional, TimeDistributed

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "Activation",
    "Add",
    "AveragePooling2D",
    "AvgPool2D",
    "BatchNormalization",
    "Bidirectional",
    "Concatenate",
    "Conv2D",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRUCell",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "Input",
    "InputLayer",
    "LSTMCell",
    "Layer",
    "LayerNormalization",
    "LeakyReLU",
    "MaxPool2D",
    "MaxPooling2D",
    "MultiHeadAttention",
    "ReLU",
    "Reshape",
    "SimpleRNN",
    "SimpleRNNCell",
    "Softmax",
    "TensorOp",
    "TimeDistributed",
    "add",
    "concatenate",
]

# dir(keras.layers) of Keras 3.15 (TF 2.21's tf.keras.layers), less what is above.
_KERAS_LAYERS = frozenset((
    "ActivityRegularization", "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D",
    "AdaptiveAveragePooling3D", "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D",
    "AdditiveAttention", "AlphaDropout", "Attention", "AugMix", "AutoContrast", "Average", "AveragePooling1D",
    "AveragePooling3D", "AvgPool1D", "AvgPool3D", "CategoryEncoding", "CenterCrop",
    "ContrastLimitedAdaptiveHistogramEqualization", "Conv1D", "Conv1DTranspose", "Conv2DTranspose", "Conv3D",
    "Conv3DTranspose", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "Convolution1D", "Convolution1DTranspose",
    "Convolution2D", "Convolution2DTranspose", "Convolution3D", "Convolution3DTranspose", "Cropping1D",
    "Cropping2D", "Cropping3D", "CutMix", "DepthwiseConv1D", "DepthwiseConv2D", "Discretization", "Dot", "ELU",
    "EinsumDense", "Equalization", "FlaxLayer", "GaussianDropout", "GaussianNoise", 
    "GlobalAveragePooling3D", "GlobalAvgPool3D",
    "GlobalMaxPool3D", 
    "GlobalMaxPooling3D", "GroupNormalization", "GroupQueryAttention", "HashedCrossing", "Hashing", "Identity",
    "InputSpec", "IntegerLookup", "JaxLayer", "Lambda", "Masking", "MaxNumBoundingBoxes",
    "MaxPool1D", "MaxPool3D", "MaxPooling1D", "MaxPooling3D", "Maximum", "MelSpectrogram", "Minimum", "MixUp",
    "Multiply", "Normalization", "PReLU", "Permute", "Pipeline", "RMSNormalization", "RandAugment",
    "RandomBrightness", "RandomColorDegeneration", "RandomColorJitter", "RandomContrast", "RandomCrop",
    "RandomElasticTransform", "RandomErasing", "RandomFlip", "RandomGaussianBlur", "RandomGrayscale",
    "RandomHue", "RandomInvert", "RandomPerspective", "RandomPosterization", "RandomRotation",
    "RandomSaturation", "RandomSharpness", "RandomShear", "RandomTranslation", "RandomZoom", 
    "RepeatVector", "Rescaling", "Resizing", "ReversibleEmbedding", "STFTSpectrogram", "SeparableConv1D",
    "SeparableConv2D", "SeparableConvolution1D", "SeparableConvolution2D", 
    "Solarization", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
    "SpectralNormalization", "StackedRNNCells", "StringLookup", "Subtract", "TFSMLayer", "TextVectorization",
    "TorchModuleWrapper", "UnitNormalization", "UpSampling1D", "UpSampling2D",
    "UpSampling3D", "Wrapper", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "average", "deserialize",
    "dot", "maximum", "minimum", "multiply", "serialize", "subtract",
))


def __getattr__(name):
    if name in _KERAS_LAYERS:
        raise AttributeError(f"jitflow does not implement tf.keras.layers.{name} yet (module "
                             f"'jitflow.keras.layers' has no attribute '{name}')")
    raise AttributeError(f"module 'jitflow.keras.layers' has no attribute '{name}'")
