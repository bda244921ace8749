// Python <-> jitflow value conversions and the error translator.
#include "python/convert.h"

#include <frameobject.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>

#include "python/nest.h"
#include "python/tensor_object.h"
#include "support/errors.h"

namespace jf::py_bridge {

// numpy's descriptor for d, made once per dtype: parsing the name took a third of a small
// tensor's .numpy(). Kept for the process, as bfloat16's (a static py::object would be
// destroyed after the interpreter).
static py::dtype make_numpy_dtype(DType d);
py::dtype numpy_dtype(DType d) {
  static py::dtype* made[kNumDTypes] = {};
  const int i = static_cast<int>(d);
  if (i < 0 || i >= kNumDTypes) throw_type("invalid dtype");
  if (!made[i]) made[i] = new py::dtype(make_numpy_dtype(d));
  return *made[i];
}

static py::dtype make_numpy_dtype(DType d) {
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
    case DType::kString:
      return py::dtype("O");
    case DType::kFloat16:
      return py::dtype("float16");
    case DType::kBFloat16:
      return bfloat16_numpy_dtype();
    case DType::kInt8:
      return py::dtype("int8");
    case DType::kUInt8:
      return py::dtype("uint8");
    case DType::kInt16:
      return py::dtype("int16");
    case DType::kUInt16:
      return py::dtype("uint16");
    case DType::kUInt32:
      return py::dtype("uint32");
    case DType::kUInt64:
      return py::dtype("uint64");
    case DType::kComplex64:
      return py::dtype("complex64");
    case DType::kComplex128:
      return py::dtype("complex128");
    default:
      throw_type("invalid dtype");
  }
}

// numpy has no bfloat16: ml_dtypes' (as TF and JAX use) is imported on first use and kept for
// the process (never freed: a static py::object would be destroyed after the interpreter).
py::dtype bfloat16_numpy_dtype() {
  static py::dtype* dt = nullptr;
  if (!dt) {
    py::object m;
    try {
      m = py::module_::import("ml_dtypes");
    } catch (py::error_already_set&) {
      PyErr_Clear();
      throw_type("bfloat16 needs the ml_dtypes package (pip install ml_dtypes)");
    }
    dt = new py::dtype(py::dtype::from_args(m.attr("bfloat16")));
  }
  return *dt;
}

// ml_dtypes' bfloat16 is numpy kind 'V' (a user dtype): recognised by its name.
static bool is_bfloat16_np(const py::dtype& dt) {
  return dt.kind() == 'V' && dt.itemsize() == 2 && py::str(dt).cast<std::string>() == "bfloat16";
}

static DType from_numpy_dtype(const py::dtype& dt, bool* ok) {
  *ok = true;
  char kind = dt.kind();
  size_t size = dt.itemsize();
  if (kind == 'f' && size == 4) return DType::kFloat32;
  if (kind == 'f' && size == 8) return DType::kFloat64;
  if (kind == 'f' && size == 2) return DType::kFloat16;
  if (kind == 'i' && size == 4) return DType::kInt32;
  if (kind == 'i' && size == 8) return DType::kInt64;
  if (kind == 'i' && size == 1) return DType::kInt8;
  if (kind == 'i' && size == 2) return DType::kInt16;
  if (kind == 'u' && size == 1) return DType::kUInt8;
  if (kind == 'u' && size == 2) return DType::kUInt16;
  if (kind == 'u' && size == 4) return DType::kUInt32;
  if (kind == 'u' && size == 8) return DType::kUInt64;
  if (kind == 'c' && size == 8) return DType::kComplex64;
  if (kind == 'c' && size == 16) return DType::kComplex128;
  if (kind == 'b') return DType::kBool;
  if (is_bfloat16_np(dt)) return DType::kBFloat16;
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
    throw_type(
        "dtype ", py::str(dt).cast<std::string>(),
        " is not supported (supported: float16, bfloat16, float32, float64, int8, int16, int32, int64, "
        "uint8, uint16, uint32, uint64, complex64, complex128, bool, string)");
  return d;
}

static std::string short_repr(py::handle h) {
  std::string s = py::repr(h).cast<std::string>();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

[[noreturn]] static void cannot_convert(py::handle h, DType dt) {
  throw_type("Cannot convert ", short_repr(h), " to EagerTensor of dtype ", dtype_name(dt));
}
[[noreturn]] static void int_out_of_range() {
  throw_invalid(
      "Can't convert Python sequence with out-of-range integer to Tensor (an int beyond 64-bit integers).");
}

// A numpy array as a tensor of dtype dt: numpy converts the values (any numeric or bool
// dtype, TF's force-cast), the byte order to native and the layout (strides, negative
// strides, Fortran order) to C order; no copy when the array already is all that.
static Tensor from_array(py::handle src, DType dt) {
  auto& api = py::detail::npy_api::get();
  PyObject* descr = numpy_dtype(dt).release().ptr();  // stolen by PyArray_FromAny
  auto arr = py::reinterpret_steal<py::array>(api.PyArray_FromAny_(
      src.ptr(), descr, 0, 0,
      py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_FORCECAST_ |
          py::detail::npy_api::NPY_ARRAY_ENSUREARRAY_,
      nullptr));
  if (!arr) throw py::error_already_set();
  Shape shape;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) shape.push_back(arr.shape(i));
  Tensor t = Tensor::empty(dt, shape);
  if (t.nbytes()) std::memcpy(t.raw(), arr.data(), t.nbytes());
  return t;
}

static bool numeric_kind(char k) { return k == 'b' || k == 'i' || k == 'u' || k == 'f' || k == 'c'; }
static bool numeric_np(const py::dtype& dt) { return numeric_kind(dt.kind()) || is_bfloat16_np(dt); }
// Python floats become any floating or complex dtype; integers any numeric one.
static bool takes_floats(DType d) { return is_floating_type(d) || is_complex_type(d); }

// A Python bool, int or float (not a numpy scalar) as a scalar of dt (kInvalid: TF's default:
// bool, int32 or int64 by range, float32). Integers stay exact: they never pass through
// double, except into a float dtype, where TF rounds them through double too.
static Tensor python_scalar(py::handle h, DType dt) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return Tensor::scalar_int(dt == DType::kInvalid ? DType::kBool : dt, o == Py_True);
  if (PyComplex_Check(o)) {  // TF: complex128 unless a complex dtype is asked for
    if (dt == DType::kInvalid) dt = DType::kComplex128;
    if (!is_complex_type(dt)) cannot_convert(h, dt);
    return from_array(py::module_::import("numpy").attr("asarray")(h), dt);
  }
  if (PyLong_Check(o)) {
    if (takes_floats(dt)) {
      double v = PyLong_AsDouble(o);
      if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw_invalid("Can't convert Python int ", short_repr(h), " to ", dtype_name(dt), ": too large");
      }
      return Tensor::scalar(dt, v);
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow > 0 && dt == DType::kUInt64) {  // 2**63 .. 2**64-1 only fit uint64
      unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (PyErr_Occurred()) {
        PyErr_Clear();
        int_out_of_range();
      }
      return Tensor::scalar_int(dt, static_cast<int64_t>(u));  // the same bits
    }
    if (overflow) int_out_of_range();
    if (dt == DType::kInvalid) dt = (v >= INT32_MIN && v <= INT32_MAX) ? DType::kInt32 : DType::kInt64;
    if (dt == DType::kBool) cannot_convert(h, dt);
    if (dt == DType::kInt32 && (v < INT32_MIN || v > INT32_MAX))
      throw_type("Cannot convert ", v, " to EagerTensor of dtype int32 (out of range)");
    return Tensor::scalar_int(dt, v);
  }
  double v = PyFloat_AS_DOUBLE(o);
  if (dt == DType::kInvalid) dt = DType::kFloat32;
  if (!takes_floats(dt)) cannot_convert(h, dt);  // TF: even 3.0 does not become an integer
  return Tensor::scalar(dt, v);
}

// Whether a nested list/tuple holds a Python int outside int64 (numpy then makes uint64,
// float64 or object arrays of it).
static bool has_big_int(PyObject* o, int depth = 0) {
  if (PyList_Check(o) || PyTuple_Check(o)) {
    if (depth > 64) return false;
    py::sequence s = py::reinterpret_borrow<py::sequence>(o);
    for (size_t i = 0; i < s.size(); ++i)
      if (has_big_int(s[i].ptr(), depth + 1)) return true;
    return false;
  }
  if (!PyLong_Check(o) || PyBool_Check(o)) return false;
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(o, &overflow);
  return overflow != 0;
}

// A Python list/tuple (nested) as a tensor of dt (kInvalid: TF's default: float32 for
// floats, int32 for ints that fit, else int64, bool for bools).
static Tensor python_sequence(py::handle h, DType dt) {
  py::array arr;
  try {
    arr = py::module_::import("numpy").attr("asarray")(h);
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_ValueError))
      throw_invalid("Can't convert non-rectangular Python sequence to Tensor.");
    throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
               py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor: ", e.what());
  }
  char k = arr.dtype().kind();
  // An empty list has no values to refuse: numpy's float64 for [] and [[], []] is only its
  // default, and TF makes an empty tensor of any dtype asked for (float32 by default).
  if (arr.size() == 0 && numeric_kind(k))
    return from_array(arr, dt == DType::kInvalid ? DType::kFloat32 : dt);
  if ((k == 'u' || k == 'O' || k == 'f') && has_big_int(h.ptr())) {
    if (k == 'u' && dt == DType::kUInt64) return from_array(arr, dt);
    if (!takes_floats(dt)) int_out_of_range();
    return from_array(py::module_::import("numpy").attr("asarray")(h, "float64"), dt);
  }
  if (!numeric_kind(k))
    throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
               py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor.");
  bool fits32 = true;
  if (k == 'i' && arr.size() > 0) {
    fits32 = arr.attr("min")().cast<int64_t>() >= INT32_MIN && arr.attr("max")().cast<int64_t>() <= INT32_MAX;
  }
  if (dt == DType::kInvalid) {
    dt = k == 'f'   ? DType::kFloat32
         : k == 'c' ? DType::kComplex128
         : k == 'b' ? DType::kBool
         : fits32   ? DType::kInt32
                    : DType::kInt64;
  } else if ((k == 'f' && !takes_floats(dt)) || (k == 'c' && !is_complex_type(dt)) ||
             (k == 'i' && dt == DType::kBool)) {
    cannot_convert(h, dt);
  } else if (k == 'i' && dt == DType::kInt32 && !fits32) {
    throw_type("Cannot convert ", short_repr(h), " to EagerTensor of dtype int32 (values out of range)");
  } else if (k == 'i' && takes_floats(dt)) {
    arr = arr.attr("astype")("float64");  // TF rounds Python ints through double
  }
  return from_array(arr, dt);
}

// A numpy array or scalar: its own dtype when no dtype is asked for (TypeError for dtypes
// jitflow lacks); otherwise cast to the wanted or hinted dtype, as TF force-casts numpy
// values.
static Tensor numpy_value(py::handle h, DType dt) {
  py::array arr;
  try {
    arr = py::module_::import("numpy").attr("asarray")(h);
  } catch (py::error_already_set& e) {
    throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
               py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor: ", e.what());
  }
  if (dt != DType::kInvalid && numeric_np(arr.dtype())) return from_array(arr, dt);
  bool ok;
  DType own = from_numpy_dtype(arr.dtype(), &ok);
  if (!ok) {
    if (arr.dtype().kind() == 'O' || arr.dtype().kind() == 'U' || arr.dtype().kind() == 'S')
      throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
                 py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor.");
    throw_type(
        "Cannot convert a numpy array of dtype ", py::str(arr.dtype()).cast<std::string>(),
        " to a Tensor (supported: float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, "
        "uint16, uint32, uint64, complex64, complex128, bool)");
  }
  return from_array(arr, own);
}

// An exact ndarray, C-contiguous, aligned and in native byte order, of a jitflow dtype,
// converted to that dtype (jf.constant(x), a numpy operand): its bytes copied as they are,
// without the stand-in attribute lookups, numpy.asarray and PyArray_FromAny of the general
// path (most of a small constant's time). False for anything else: the general path takes it.
bool plain_array(py::handle h, DType target, Tensor* out) {
  auto& api = py::detail::npy_api::get();
  if (Py_TYPE(h.ptr()) != api.PyArray_Type_) return false;
  auto arr = py::reinterpret_borrow<py::array>(h);
  constexpr int need = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  if ((arr.flags() & need) != need) return false;
  py::dtype dt = arr.dtype();
  if (dt.byteorder() == '>' || dt.kind() == 'V') return false;  // big-endian data; bfloat16 by name
  bool ok;
  DType own = from_numpy_dtype(dt, &ok);
  if (!ok || (target != DType::kInvalid && target != own)) return false;
  Shape shape;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) shape.push_back(arr.shape(i));
  *out = Tensor::empty(own, shape);
  if (out->nbytes()) std::memcpy(out->raw(), arr.data(), out->nbytes());
  return true;
}

py::object tensor_to_py(const Tensor& t) {
  if (t.dtype() == DType::kString && !t.is_symbolic() && string_tensor_type())
    return py::handle(reinterpret_cast<PyObject*>(string_tensor_type())).attr("_from_c")(py::cast(t));
  PyObject* o = tensor_object(Tensor(t));
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(o);
}

py::list tensors_to_py(const std::vector<Tensor>& ts) {
  py::list l;
  for (const Tensor& t : ts) l.append(tensor_to_py(t));
  return l;
}

Tensor string_tensor(py::sequence values, const Shape& shape) {
  Tensor t = Tensor::empty(DType::kString, shape);
  if (static_cast<int64_t>(values.size()) != t.num_elements())
    throw_invalid("string_tensor: ", values.size(), " values for shape ", shape.str());
  std::string* d = t.data<std::string>();
  for (size_t i = 0; i < values.size(); ++i) {
    py::handle v = values[i];
    if (py::isinstance<py::bytes>(v)) {
      d[i] = v.cast<std::string>();
    } else if (py::isinstance<py::str>(v)) {
      d[i] = v.cast<std::string>();
    } else {
      throw_type("string_tensor: expected bytes or str, got ", short_repr(v));
    }
  }
  return t;
}

Tensor to_tensor(py::handle h, DType want, DType hint, bool soft_hint) {
  if (is_string_tensor(h.ptr())) {  // jitflow's eager string tensor holds its kString value
    Tensor t = h.attr("_c_tensor")().cast<Tensor>();
    if (want != DType::kInvalid && want != DType::kString)
      throw_invalid("Tensor conversion requested dtype ", dtype_name(want), " for Tensor with dtype string");
    return t;
  }
  const Tensor* exact = exact_tensor(h.ptr());
  if (exact || py::isinstance<Tensor>(h)) {
    const Tensor& t = exact ? *exact : h.cast<const Tensor&>();
    if (want != DType::kInvalid && t.dtype() != want)
      throw_invalid("Tensor conversion requested dtype ", dtype_name(want), " for Tensor with dtype ",
                    dtype_name(t.dtype()));
    return t;
  }
  PyObject* o = h.ptr();
  // A Python value for a string operand (jf.equal(s, "a")): core/strings.py makes it, with
  // TF's TypeError for numbers.
  if ((want == DType::kString || (want == DType::kInvalid && hint == DType::kString && !soft_hint)) &&
      !PyObject_HasAttrString(o, "__jf_tensor__"))
    return to_tensor(py::module_::import("jitflow.core.strings").attr("constant")(h), want);
  Tensor plain;
  if (plain_array(h, want != DType::kInvalid ? want : hint, &plain)) return plain;
  // np.float64 is a float subclass: numpy scalars convert as numpy values.
  bool scalar = PyBool_Check(o) || PyLong_Check(o) ||
                ((PyFloat_Check(o) || PyComplex_Check(o)) && !PyObject_HasAttrString(o, "dtype"));
  if (!scalar) {
    // Objects that stand for a tensor (jf.Variable) convert through __jf_tensor__, which may
    // hand over another stand-in; a chain that reaches no tensor in kMaxStandIns steps (an
    // object returning itself) is refused, where following it overflowed the C stack.
    if (PyObject_HasAttrString(o, "__jf_tensor__")) {
      constexpr int kMaxStandIns = 32;
      py::object r = py::reinterpret_borrow<py::object>(h);
      for (int i = 0; !py::isinstance<Tensor>(r) && PyObject_HasAttrString(r.ptr(), "__jf_tensor__"); ++i) {
        if (i == kMaxStandIns)
          throw_type("Cannot convert ", short_repr(h), " to a Tensor: its __jf_tensor__() returned ",
                     r.ptr() == o ? "the object itself" : "a chain of objects that never ends in a tensor",
                     " (", kMaxStandIns, " calls)");
        r = r.attr("__jf_tensor__")();
      }
      return to_tensor(r, want, hint, soft_hint);
    }
    if (py::isinstance<py::str>(h) || py::isinstance<py::bytes>(h) || h.is_none())
      throw_type("Attempt to convert a value (", short_repr(h), ") with an unsupported type (",
                 py::str(py::type::of(h)).cast<std::string>(), ") to a Tensor.");
    if (py::isinstance<py::array>(h) || py::hasattr(h, "dtype"))
      return numpy_value(h, want != DType::kInvalid ? want : hint);
  }
  auto convert = [&](DType dt) { return scalar ? python_scalar(h, dt) : python_sequence(h, dt); };
  if (want != DType::kInvalid || hint == DType::kInvalid) return convert(want);
  if (!soft_hint) return convert(hint);
  // dtype_hint= is a preference (TF's preferred_dtype): a value that cannot take it converts
  // as it would alone.
  try {
    return convert(hint);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kType) throw;
  }
  return convert(DType::kInvalid);
}

// An int attr (axis, num_split, seeds): TF's ValueError past int64, not pybind's cast error.
static int64_t attr_int(py::handle v) {
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow) throw_invalid("attribute value ", short_repr(v), " does not fit in int64");
  return x;
}

static AttrValue to_attr(py::handle v) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return attr_int(v);
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
    if (all_int) {
      std::vector<int64_t> ints;
      for (auto x : s) ints.push_back(attr_int(x));
      return ints;
    }
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
  if (!t.defined())  // Tensor.__new__(Tensor): an object that was never given a value
    throw_type("this jf.Tensor has no value (it was made without one, e.g. by Tensor.__new__)");
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
  if (t.dtype() == DType::kString) {  // an object array of bytes, as TF's .numpy()
    py::array out(py::dtype("O"), shape);
    auto** cells = static_cast<PyObject**>(out.mutable_data());
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      Py_XDECREF(cells[i]);
      cells[i] = py::bytes(s[i]).release().ptr();
    }
    return out;
  }
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

// The innermost frame outside the jitflow package: where the user called us from. Called for
// every node a trace records, so the frames are told apart by comparing their file names as
// Python strings, without converting each one.
std::string current_user_location() {
  static PyObject* pkg_dir = [] {
    try {
      std::string f = py::module_::import("jitflow").attr("__file__").cast<std::string>();
      return py::str(f.substr(0, f.rfind('/') + 1)).release().ptr();
    } catch (...) {
      PyErr_Clear();
      return py::str("\x01").release().ptr();
    }
  }();
  static PyObject* frozen = py::str("<frozen").release().ptr();
  auto starts_with = [](PyObject* s, PyObject* prefix) {
    return PyUnicode_Check(s) && PyUnicode_Tailmatch(s, prefix, 0, PY_SSIZE_T_MAX, -1) == 1;
  };
  PyFrameObject* f = PyEval_GetFrame();
  if (f) Py_INCREF(f);
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const bool ours = starts_with(code->co_filename, pkg_dir) || starts_with(code->co_filename, frozen);
    if (!ours) {
      std::string file = py::str(code->co_filename).cast<std::string>();
      Py_DECREF(code);
      int line = PyFrame_GetLineNumber(f);
      Py_DECREF(f);
      std::string text;
      try {
        static PyObject* getline =
            py::object(py::module_::import("linecache").attr("getline")).release().ptr();
        text = py::handle(getline)(file, line).cast<std::string>();
      } catch (...) {
        PyErr_Clear();
      }
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      size_t s = text.find_first_not_of(' ');
      text = s == std::string::npos ? "" : text.substr(s);
      return str_cat(file, ":", line, text.empty() ? "" : ": " + text);
    }
    Py_DECREF(code);
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
        errors = py::module_::import("jitflow.core.errors");
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
        case ErrorKind::kResourceExhausted:
          cls = errors ? errors.attr("ResourceExhaustedError").ptr() : PyExc_MemoryError;
          break;
        case ErrorKind::kUnknown:
          cls = errors ? errors.attr("UnknownError").ptr() : PyExc_RuntimeError;
          break;
        case ErrorKind::kOutOfRange:
          cls = errors ? errors.attr("OutOfRangeError").ptr() : PyExc_RuntimeError;
          break;
        case ErrorKind::kUnavailable:
          cls = errors ? errors.attr("UnavailableError").ptr() : PyExc_RuntimeError;
          break;
        case ErrorKind::kDeadlineExceeded:
          cls = errors ? errors.attr("DeadlineExceededError").ptr() : PyExc_TimeoutError;
          break;
      }
      PyErr_SetString(cls, msg.c_str());
    } catch (const std::bad_alloc&) {  // an allocation not bounded beforehand failed after all
      PyObject* cls = PyExc_MemoryError;
      try {
        cls = py::module_::import("jitflow.core.errors")
                  .attr("ResourceExhaustedError")
                  .ptr();  // kept by the module
      } catch (py::error_already_set&) {
        PyErr_Clear();
      }
      PyErr_SetString(cls, "out of memory (std::bad_alloc)");
    }
  });
  (void)m;
}

}  // namespace jf::py_bridge
