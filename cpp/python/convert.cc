// Python <-> jitflow value conversions and the error translator.
#include "python/convert.h"

#include <frameobject.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>

#include "support/errors.h"

namespace jf::py_bridge {

py::dtype numpy_dtype(DType d) {
  switch (d) {
    case DType::kFloat32:
      return py::dtype("float32");
    case DType::kFloat64:
      return py::dtype("float64");
    case DType::kInt32:
      return py::dtype("int32");
    case DType::kInt64:
      return py::dtype("int64");
    case DType::kBool:
      return py::dtype("bool");
    default:
      throw_type("invalid dtype");
  }
}

static DType from_numpy_dtype(const py::dtype& dt, bool* ok) {
  *ok = true;
  char kind = dt.kind();
  size_t size = dt.itemsize();
  if (kind == 'f' && size == 4) return DType::kFloat32;
  if (kind == 'f' && size == 8) return DType::kFloat64;
  if (kind == 'i' && size == 4) return DType::kInt32;
  if (kind == 'i' && size == 8) return DType::kInt64;
  if (kind == 'b') return DType::kBool;
  *ok = false;
  return DType::kInvalid;
}

DType to_dtype(py::handle h) {
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::hasattr(h, "_jf_dtype")) return h.attr("_jf_dtype").cast<DType>();
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
  } catch (py::error_already_set&) {
    throw_type("Cannot convert ", py::repr(h).cast<std::string>(), " to a jitflow dtype");
  }
  bool ok;
  DType d = from_numpy_dtype(dt, &ok);
  if (!ok)
    throw_type("dtype ", py::str(dt).cast<std::string>(),
               " is not supported (supported: float32, float64, int32, int64, bool)");
  return d;
}

static std::string short_repr(py::handle h) {
  std::string s = py::repr(h).cast<std::string>();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

static Tensor scalar_tensor(DType dt, double v) { return Tensor::scalar(dt, v); }

static Tensor from_array(py::array arr) {
  bool ok;
  DType dt = from_numpy_dtype(arr.dtype(), &ok);
  if (!ok)
    throw_type("Cannot convert a numpy array of dtype ", py::str(arr.dtype()).cast<std::string>(),
               " to a Tensor (supported: float32, float64, int32, int64, bool)");
  Shape shape;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) shape.push_back(arr.shape(i));
  Tensor t = Tensor::empty(dt, shape);
  auto c = py::array::ensure(arr, py::array::c_style);
  if (t.nbytes()) std::memcpy(t.raw(), c.data(), t.nbytes());
  return t;
}

Tensor to_tensor(py::handle h, DType want, DType hint) {
  if (py::isinstance<Tensor>(h)) {
    const Tensor& t = h.cast<const Tensor&>();
    if (want != DType::kInvalid && t.dtype() != want)
      throw_invalid("Tensor conversion requested dtype ", dtype_name(want), " for Tensor with dtype ",
                    dtype_name(t.dtype()));
    return t;
  }
  DType dt = want != DType::kInvalid ? want : hint;
  if (PyBool_Check(h.ptr())) {
    bool v = h.ptr() == Py_True;
    if (dt == DType::kInvalid) dt = DType::kBool;
    return scalar_tensor(dt, v);
  }
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) throw_invalid("Can't convert Python int ", short_repr(h), " to a 64-bit integer");
    if (dt == DType::kInvalid) dt = (v >= INT32_MIN && v <= INT32_MAX) ? DType::kInt32 : DType::kInt64;
    if (dt == DType::kBool) throw_type("Cannot convert ", v, " to EagerTensor of dtype bool");
    if (dt == DType::kInt32 && (v < INT32_MIN || v > INT32_MAX))
      throw_type("Cannot convert ", v, " to EagerTensor of dtype int32 (out of range)");
    return scalar_tensor(dt, static_cast<double>(v));
  }
  if (PyFloat_Check(h.ptr()) &&
      !PyObject_HasAttrString(h.ptr(), "dtype")) {  // np.float64 is a float subclass
    double v = PyFloat_AS_DOUBLE(h.ptr());
    if (dt == DType::kInvalid) dt = DType::kFloat32;
    if (!is_float(dt) && !(want != DType::kInvalid && v == std::floor(v) && is_int(dt)))
      throw_type("Cannot convert ", short_repr(h), " to EagerTensor of dtype ", dtype_name(dt));
    return scalar_tensor(dt, v);
  }
  // Objects that stand for a tensor (jf.Variable) convert through __jf_tensor__.
  if (PyObject_HasAttrString(h.ptr(), "__jf_tensor__"))
    return to_tensor(h.attr("__jf_tensor__")(), want, hint);
  if (py::isinstance<py::str>(h) || py::isinstance<py::bytes>(h) || h.is_none())
    throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
               py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor.");
  bool is_numpy = py::isinstance<py::array>(h) || py::hasattr(h, "dtype");
  py::array arr;
  try {
    arr = py::module_::import("numpy").attr("asarray")(h);
  } catch (py::error_already_set& e) {
    throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
               py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor: ", e.what());
  }
  if (arr.dtype().kind() == 'O' || arr.dtype().kind() == 'U' || arr.dtype().kind() == 'S')
    throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
               py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor.");
  if (!is_numpy) {
    // Python lists follow TF: floats become float32, ints int32 (when they fit), or the hint.
    char k = arr.dtype().kind();
    if (dt == DType::kInvalid) {
      if (k == 'f') dt = DType::kFloat32;
      if (k == 'i') {
        auto mn = arr.attr("min")(), mx = arr.attr("max")();
        bool fits = arr.size() == 0 || (mn.cast<int64_t>() >= INT32_MIN && mx.cast<int64_t>() <= INT32_MAX);
        dt = fits ? DType::kInt32 : DType::kInt64;
      }
    } else if (k == 'f' && !is_float(dt)) {
      throw_type("Cannot convert ", short_repr(h), " to EagerTensor of dtype ", dtype_name(dt));
    }
  }
  if (is_numpy && want == DType::kInvalid && hint != DType::kInvalid) {
    // TF converts a numpy operand to its peer tensor's dtype when that loses no kind: floats
    // to the float width, integers to any numeric dtype (float to int stays an error).
    char k = arr.dtype().kind();
    bool supported;
    from_numpy_dtype(arr.dtype(), &supported);  // unsupported dtypes (float16, uint8) stay errors
    bool ok = supported && ((k == 'f' && is_float(hint)) || (k == 'i' && is_numeric(hint)));
    dt = ok ? hint : DType::kInvalid;
  }
  if (!is_numpy && dt == DType::kInt32 && arr.dtype().kind() == 'i' && arr.size() > 0) {
    int64_t mn = arr.attr("min")().cast<int64_t>(), mx = arr.attr("max")().cast<int64_t>();
    if (mn < INT32_MIN || mx > INT32_MAX)
      throw_type("Cannot convert ", short_repr(h), " to EagerTensor of dtype int32 (values out of range)");
  }
  if (dt != DType::kInvalid && (is_numpy ? (want != DType::kInvalid || dt == hint) : true))
    arr = arr.attr("astype")(numpy_dtype(dt));
  return from_array(arr);
}

static AttrValue to_attr(py::handle v) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return v.cast<int64_t>();
  if (PyFloat_Check(v.ptr())) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<DType>(v)) return v.cast<DType>();
  if (py::isinstance<Tensor>(v)) return v.cast<Tensor>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence s = py::reinterpret_borrow<py::sequence>(v);
    bool all_int = true, all_num = true, all_str = true;
    for (auto x : s) {
      all_int &= PyLong_Check(x.ptr()) && !PyBool_Check(x.ptr());
      all_num &= PyLong_Check(x.ptr()) || PyFloat_Check(x.ptr());
      all_str &= py::isinstance<py::str>(x);
    }
    if (all_int) return s.cast<std::vector<int64_t>>();
    if (all_num) return s.cast<std::vector<double>>();
    if (all_str) return s.cast<std::vector<std::string>>();
  }
  throw_type("unsupported attribute value ", short_repr(v));
}

Attrs to_attrs(py::handle dict) {
  Attrs a;
  if (dict.is_none()) return a;
  for (auto kv : py::reinterpret_borrow<py::dict>(dict)) {
    if (kv.second.is_none()) continue;
    a.set(kv.first.cast<std::string>(), to_attr(kv.second));
  }
  return a;
}

py::object attr_to_py(const AttrValue& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

py::array to_numpy(const Tensor& t, py::handle owner) {
  if (t.is_symbolic())
    throw_type(
        "Tensor.numpy() is only available for eager tensors; this is a symbolic tensor "
        "inside a traced function (return it from the function instead)");
  if (!t.on_host()) {  // a GPU tensor: the array views a host copy, which it keeps alive
    Tensor host;
    {
      py::gil_scoped_release release;
      host = t.to_device(Device{});
    }
    py::object keep = py::cast(host);
    return to_numpy(keep.cast<const Tensor&>(), keep);
  }
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(t.rank());
  py::ssize_t st = dtype_size(t.dtype());
  for (int i = t.rank() - 1; i >= 0; --i) {
    strides[i] = st;
    st *= shape[i];
  }
  py::array arr(numpy_dtype(t.dtype()), shape, strides, t.raw(), owner);
  // Tensors are immutable: the view must not let numpy write into them.
  py::detail::array_proxy(arr.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return arr;
}

// The innermost frame outside the jitflow package: where the user called us from.
std::string current_user_location() {
  static std::string pkg_dir = [] {
    try {
      std::string f = py::module_::import("jitflow").attr("__file__").cast<std::string>();
      return f.substr(0, f.rfind('/') + 1);
    } catch (...) {
      PyErr_Clear();
      return std::string("\x01");
    }
  }();
  PyFrameObject* f = PyEval_GetFrame();
  if (f) Py_INCREF(f);
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    std::string file = py::str(code->co_filename).cast<std::string>();
    Py_DECREF(code);
    if (file.rfind(pkg_dir, 0) != 0 && file.find("<frozen") != 0) {
      int line = PyFrame_GetLineNumber(f);
      Py_DECREF(f);
      std::string text;
      try {
        text = py::module_::import("linecache").attr("getline")(file, line).cast<std::string>();
      } catch (...) {
        PyErr_Clear();
      }
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      size_t s = text.find_first_not_of(' ');
      text = s == std::string::npos ? "" : text.substr(s);
      return str_cat(file, ":", line, text.empty() ? "" : ": " + text);
    }
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  return "";
}

void register_error_translator(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      std::string msg = e.what();
      std::string where = current_user_location();
      if (!where.empty()) msg += "\n  at " + where;
      PyObject* cls = PyExc_RuntimeError;
      py::object errors;
      try {
        errors = py::module_::import("jitflow.errors");
      } catch (py::error_already_set&) {
        PyErr_Clear();
      }
      switch (e.kind()) {
        case ErrorKind::kType:
          cls = PyExc_TypeError;
          break;
        case ErrorKind::kInvalidArgument:
          cls = errors ? errors.attr("InvalidArgumentError").ptr() : PyExc_ValueError;
          break;
        case ErrorKind::kUnimplemented:
          cls = errors ? errors.attr("UnimplementedError").ptr() : PyExc_NotImplementedError;
          break;
        case ErrorKind::kRuntime:
          cls = PyExc_RuntimeError;
          break;
        case ErrorKind::kInternal:
          cls = errors ? errors.attr("InternalError").ptr() : PyExc_RuntimeError;
          break;
      }
      PyErr_SetString(cls, msg.c_str());
    }
  });
  (void)m;
}

}  // namespace jf::py_bridge
