// jf.data's prefetch and parallel map on C++ threads (runtime/data_pipeline.h): _C.DataPipeline
// pulls a Python iterator's elements (lists of component tensors) on worker threads and maps
// them with a traced function's ConcreteFunction, or with a Python callable, into a bounded
// buffer the iterating thread reads. Workers hold the GIL only while they run Python (the
// upstream iterator, a Python map function, converting tensors); a ConcreteFunction runs
// without it. An exception travels with its element and is raised when that element is asked for.
#include <pybind11/stl.h>

#include <atomic>
#include <exception>
#include <memory>
#include <vector>

#include "python/bindings.h"
#include "python/convert.h"
#include "runtime/data_pipeline.h"
#include "runtime/function.h"
#include "runtime/slice_batcher.h"

namespace jf::py_bridge {
namespace {

// A pipeline item: an owned reference (released under the GIL by whoever holds it last), or
// the exception its pull or map raised. With chunks, `obj` is a list of up to `chunk` elements
// and `error` (if any) follows them.
struct PyItem {
  PyObject* obj = nullptr;
  std::exception_ptr error;
};

class PyPipeline {
 public:
  PyPipeline(py::object upstream, int workers, size_t capacity, bool ordered, py::object cf, py::object fn,
             int chunk)
      : upstream_(std::move(upstream)), fn_(std::move(fn)), chunk_(chunk) {
    if (chunk < 1) throw py::value_error("DataPipeline: chunk must be >= 1");
    if (!PyIter_Check(upstream_.ptr())) throw py::type_error("DataPipeline: upstream must be an iterator");
    if (!cf.is_none()) cf_ = cf.cast<std::shared_ptr<ConcreteFunction>>();
    if (chunk > 1 && !cf_) throw py::value_error("DataPipeline: chunks are for a ConcreteFunction map");
    data::Pipeline<PyItem>::Map map;
    if (cf_)
      map = [this](PyItem in) { return run_function(std::move(in)); };
    else if (!fn_.is_none())
      map = [this](PyItem in) { return run_python(std::move(in)); };
    p_ = std::make_unique<data::Pipeline<PyItem>>(
        workers, capacity, ordered, [this](PyItem* out) { return pull(out); }, std::move(map));
  }
  PyPipeline(const PyPipeline&) = delete;
  PyPipeline& operator=(const PyPipeline&) = delete;
  ~PyPipeline() { close(); }

  py::object next() {
    if (pending_) {  // the error that followed the last chunk's elements
      std::exception_ptr e = pending_;
      pending_ = nullptr;
      std::rethrow_exception(e);
    }
    if (!p_) throw py::stop_iteration();
    PyItem item;
    bool ok;
    {
      py::gil_scoped_release release;
      ok = p_->next(&item);
    }
    if (!ok) throw py::stop_iteration();
    if (item.error && item.obj && PyList_GET_SIZE(item.obj) > 0) {
      pending_ = item.error;  // the chunk's elements first, then its error
      return py::reinterpret_steal<py::object>(item.obj);
    }
    if (item.error) {
      Py_XDECREF(item.obj);  // an empty chunk before its error
      std::rethrow_exception(item.error);
    }
    return py::reinterpret_steal<py::object>(item.obj);
  }

  // Stops the workers (each finishes the call it is in) and releases what they had buffered.
  void close() {
    if (!p_) return;
    stopping_ = true;
    {
      py::gil_scoped_release release;
      p_->stop();
    }
    for (PyItem& it : p_->drain()) Py_XDECREF(it.obj);
    p_.reset();
  }

  size_t outstanding() const { return p_ ? p_->outstanding() : 0; }
  bool ready() const { return pending_ || !p_ || p_->ready(); }
  size_t max_outstanding() const { return p_ ? p_->max_outstanding() : 0; }

 private:
  // One element, or with chunks up to `chunk` of them in a list: one GIL acquisition for
  // all, since a cheap map costs less than a hand-over of the GIL.
  bool pull(PyItem* out) {
    py::gil_scoped_acquire gil;
    if (stopping_) return false;
    if (chunk_ == 1) {
      PyObject* r = PyIter_Next(upstream_.ptr());
      if (r) {
        out->obj = r;
        return true;
      }
      if (!PyErr_Occurred()) return false;
      out->error = std::make_exception_ptr(py::error_already_set());
      return true;
    }
    py::list items;
    while (static_cast<int>(items.size()) < chunk_) {
      PyObject* r = PyIter_Next(upstream_.ptr());
      if (!r) {
        if (PyErr_Occurred()) out->error = std::make_exception_ptr(py::error_already_set());
        break;
      }
      items.append(py::reinterpret_steal<py::object>(r));
    }
    if (items.size() == 0 && !out->error) return false;
    out->obj = items.release().ptr();
    return true;
  }

  PyItem run_function(PyItem in) {
    if (chunk_ > 1) return run_function_chunk(std::move(in));
    if (in.error) return in;
    PyItem out;
    try {
      std::vector<Tensor> args;
      {
        py::gil_scoped_acquire gil;
        args = py::handle(in.obj).cast<std::vector<Tensor>>();
      }
      std::vector<Tensor> res = cf_->call(std::move(args));  // without the GIL
      py::gil_scoped_acquire gil;
      out.obj = tensors_to_py(res).release().ptr();
    } catch (...) {
      out.error = std::current_exception();
    }
    py::gil_scoped_acquire gil;
    Py_DECREF(in.obj);
    return out;
  }

  // A chunk: its elements converted under one GIL acquisition, mapped without it, and their
  // results converted under one more. The first failing element ends the chunk with its error.
  PyItem run_function_chunk(PyItem in) {
    PyItem out{nullptr, in.error};
    std::vector<std::vector<Tensor>> args;
    try {
      py::gil_scoped_acquire gil;
      py::handle list(in.obj);
      for (py::handle e : list) args.push_back(e.cast<std::vector<Tensor>>());
    } catch (...) {
      args.clear();
      out.error = std::current_exception();
    }
    std::vector<std::vector<Tensor>> res;
    for (auto& a : args) {
      try {
        res.push_back(cf_->call(std::move(a)));  // without the GIL
      } catch (...) {
        out.error = std::current_exception();
        break;
      }
    }
    py::gil_scoped_acquire gil;
    try {
      py::list results;
      for (auto& r : res) results.append(tensors_to_py(r));
      out.obj = results.release().ptr();
    } catch (...) {
      out.obj = PyList_New(0);
      out.error = std::current_exception();
    }
    Py_DECREF(in.obj);
    return out;
  }

  PyItem run_python(PyItem in) {
    if (in.error) return in;
    PyItem out;
    py::gil_scoped_acquire gil;
    try {
      out.obj = fn_(py::handle(in.obj)).release().ptr();
    } catch (...) {
      out.error = std::current_exception();
    }
    Py_DECREF(in.obj);
    return out;
  }

  py::object upstream_, fn_;
  int chunk_ = 1;
  std::exception_ptr pending_;
  std::shared_ptr<ConcreteFunction> cf_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<data::Pipeline<PyItem>> p_;
};

// Batches of tensor slices (runtime/slice_batcher.h): made on `workers` threads ahead of the
// consumer (at most `capacity` batches made and not consumed), or with no workers on the
// iterating thread, in both cases without the GIL; the consumer only wraps finished batches.
class PyBatcher {
 public:
  struct Item {
    int64_t index = 0;
    std::vector<Tensor> batch;
    std::exception_ptr error;
  };

  PyBatcher(std::vector<Tensor> sources, py::object order, int64_t batch_size, bool drop_remainder,
            std::vector<std::shared_ptr<ConcreteFunction>> maps, int workers, size_t capacity) {
    std::vector<int64_t> rows;
    if (!order.is_none()) {
      Tensor o = order.cast<Tensor>();
      if (o.dtype() != DType::kInt64 || o.rank() != 1)
        throw py::type_error("DataBatcher: order must be int64[n]");
      rows.assign(o.data<int64_t>(), o.data<int64_t>() + o.num_elements());
    }
    b_ = std::make_unique<data::SliceBatcher>(std::move(sources), std::move(rows), batch_size, drop_remainder,
                                              std::move(maps));
    total_ = b_->num_batches();
    if (workers > 0)
      p_ = std::make_unique<data::Pipeline<Item>>(
          workers, capacity, true,
          [this](Item* it) {  // the next batch's number: no Python, no GIL
            if (pulled_ >= total_) return false;
            it->index = pulled_++;
            return true;
          },
          [this](Item it) {
            try {
              it.batch = b_->make(it.index);
            } catch (...) {
              it.error = std::current_exception();
            }
            return it;
          });
  }
  PyBatcher(const PyBatcher&) = delete;
  PyBatcher& operator=(const PyBatcher&) = delete;
  ~PyBatcher() { close(); }

  py::object next() {
    Item it;
    if (p_) {
      bool ok;
      {
        py::gil_scoped_release release;
        ok = p_->next(&it);
      }
      if (!ok) throw py::stop_iteration();
    } else {
      if (closed_ || pulled_ >= total_) throw py::stop_iteration();
      it.index = pulled_++;
      py::gil_scoped_release release;
      try {
        it.batch = b_->make(it.index);
      } catch (...) {
        it.error = std::current_exception();
      }
    }
    if (it.error) std::rethrow_exception(it.error);
    return tensors_to_py(it.batch);
  }

  void close() {
    closed_ = true;
    if (!p_) return;
    {
      py::gil_scoped_release release;  // a worker may be in a map that calls back into Python
      p_->stop();
    }
    p_->drain();
    p_.reset();
  }

  size_t max_outstanding() const { return p_ ? p_->max_outstanding() : 0; }

 private:
  std::unique_ptr<data::SliceBatcher> b_;
  std::unique_ptr<data::Pipeline<Item>> p_;
  int64_t total_ = 0, pulled_ = 0;  // pulled_: by one puller at a time (the pipeline's pull lock)
  bool closed_ = false;
};

}  // namespace

void bind_data(py::module_& m) {
  py::class_<PyPipeline>(m, "DataPipeline")
      .def(py::init<py::object, int, size_t, bool, py::object, py::object, int>(), py::arg("upstream"),
           py::arg("workers"), py::arg("capacity"), py::arg("ordered") = true,
           py::arg("function") = py::none(), py::arg("python_function") = py::none(), py::arg("chunk") = 1,
           "Elements of `upstream` (an iterator of lists of tensors) pulled and mapped by `workers` threads "
           "(by a ConcreteFunction, run without the GIL, or a Python callable; neither: passed through) "
           "into a buffer of at most `capacity` items. With `chunk` > 1 (a ConcreteFunction only), each "
           "item is a list of up to `chunk` mapped elements, pulled and converted under one GIL hold.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyPipeline::next)
      .def("close", &PyPipeline::close)
      .def_property_readonly("outstanding", &PyPipeline::outstanding)
      .def_property_readonly(
          "ready", &PyPipeline::ready,
          "True when __next__ would not wait (an element or an error is there, or the end).")
      .def_property_readonly("max_outstanding", &PyPipeline::max_outstanding);

  py::class_<PyBatcher>(m, "DataBatcher")
      .def(py::init<std::vector<Tensor>, py::object, int64_t, bool,
                    std::vector<std::shared_ptr<ConcreteFunction>>, int, size_t>(),
           py::arg("sources"), py::arg("order"), py::arg("batch_size"), py::arg("drop_remainder"),
           py::arg("functions"), py::arg("workers"), py::arg("capacity"),
           "Batches of the rows of `sources` (whole tensors of one length) taken in `order` (an int64 "
           "tensor, or None for 0..n-1), each element passed through `functions` in turn, made by `workers` "
           "threads ahead of the consumer into a buffer of `capacity` batches (0 workers: on the iterating "
           "thread), without the GIL.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &PyBatcher::next)
      .def("close", &PyBatcher::close)
      .def_property_readonly("max_outstanding", &PyBatcher::max_outstanding);
  m.def(
      "data_shuffle_order",
      [](int64_t n, int64_t m, Tensor steady, Tensor drain) {
        auto vec = [](const Tensor& t) {
          if (t.dtype() != DType::kInt64 || t.rank() != 1)
            throw py::type_error("data_shuffle_order: int64[k] draws");
          return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
        };
        std::vector<int64_t> order = data::SliceBatcher::shuffle_order(n, m, vec(steady), vec(drain));
        return Tensor::from_int64s(order, DType::kInt64);
      },
      py::arg("n"), py::arg("m"), py::arg("steady"), py::arg("drain"),
      "The positions a shuffle buffer of m slots gives n elements from its draws (int64 tensors).");
}

}  // namespace jf::py_bridge
