"""Keras's global settings, read by the layers (keras.config and keras.backend): the default
float dtype, the fuzz factor epsilon, the image data format, and whether lambdas may be loaded."""
_settings = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last", "unsafe": False}


def floatx():
    return _settings["floatx"]


def set_floatx(value):
    allowed = {"bfloat16", "float16", "float32", "float64"}
    if value not in allowed:
        raise ValueError(f"Unknown `floatx` value: {value}. Expected one of {allowed}")
    _settings["floatx"] = str(value)


def epsilon():
    return _settings["epsilon"]


def set_epsilon(value):
    _settings["epsilon"] = float(value)


def image_data_format():
    return _settings["image_data_format"]


def set_image_data_format(data_format):
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                         f"Received: data_format={data_format}")
    _settings["image_data_format"] = str(data_format)


def backend():
    """The Keras backend jitflow stands in for: TF's."""
    return "tensorflow"


def enable_unsafe_deserialization():
    """Lets load_model rebuild Lambda layers' marshalled lambdas without safe_mode=False."""
    _settings["unsafe"] = True


def unsafe_deserialization_enabled():
    return _settings["unsafe"]
