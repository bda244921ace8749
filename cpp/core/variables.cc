// The variable store: a table of id -> current value, indexed by id (ids only grow), behind
// one mutex held for a lookup and a refcount (graph runs read variables on every call). Each
// variable also has its own update mutex, held across a read-modify-write and by assignments,
// never while the table's mutex is held.
#include "core/variables.h"

#include <memory>
#include <mutex>
#include <vector>

namespace jf {
namespace {

struct Var {
  Tensor value;  // guarded by g_mu
  std::string name;
  std::mutex update_mu;  // serializes writers of this variable
};
std::mutex g_mu;
int64_t g_next = 1;
std::vector<std::shared_ptr<Var>>& table() {
  static auto* t = new std::vector<std::shared_ptr<Var>>();
  return *t;
}

// The thread's VariableBinding: ids the running graph was traced with, and the call's own.
thread_local const std::vector<int64_t>* t_from = nullptr;
thread_local const std::vector<int64_t>* t_to = nullptr;

int64_t bound(int64_t id) {
  if (t_from)
    for (size_t i = 0; i < t_from->size(); ++i)
      if ((*t_from)[i] == id) return (*t_to)[i];
  return id;
}

// Call with g_mu held.
Var& lookup(int64_t id) {
  auto& t = table();
  if (id < 0 || id >= static_cast<int64_t>(t.size()) || !t[id])
    throw_invalid("variable #", id, " does not exist (it was deleted)");
  return *t[id];
}

// The variable itself, kept alive while a writer holds its update mutex (a concurrent
// destroy_variable only drops the table's reference).
std::shared_ptr<Var> hold(int64_t id) {
  std::lock_guard<std::mutex> lock(g_mu);
  lookup(id);
  return table()[id];
}

void check_and_store(Var& v, const Tensor& value, const char* op) {
  // A variable stays on its device, as TF's do: a value computed elsewhere is copied there
  // (outside the lock: a device copy waits for the device).
  Device home;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    home = v.value.device();
  }
  Tensor placed = value.device() == home ? value : value.to_device(home);
  std::lock_guard<std::mutex> lock(g_mu);
  if (placed.dtype() != v.value.dtype() || placed.shape() != v.value.shape())
    throw_invalid(op, ": cannot assign a ", value.desc(), " value to variable '", v.name, "' of type ",
                  v.value.desc());
  v.value = std::move(placed);
}

}  // namespace

int64_t create_variable(const Tensor& init, const std::string& name) {
  if (init.is_symbolic()) throw_invalid("a variable's initial value must be an eager tensor");
  std::lock_guard<std::mutex> lock(g_mu);
  int64_t id = g_next++;
  if (static_cast<int64_t>(table().size()) <= id) table().resize(id + 1);
  auto v = std::make_shared<Var>();
  v->value = init;
  v->name = name;
  table()[id] = std::move(v);
  return id;
}

void destroy_variable(int64_t id) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (id >= 0 && id < static_cast<int64_t>(table().size())) table()[id].reset();
}

Tensor read_variable(int64_t id) {
  id = bound(id);
  std::lock_guard<std::mutex> lock(g_mu);
  return lookup(id).value;
}

void assign_variable(int64_t id, const Tensor& value, const char* op) {
  id = bound(id);
  std::shared_ptr<Var> v = hold(id);
  std::lock_guard<std::mutex> update(v->update_mu);
  check_and_store(*v, value, op);
}

void update_variable(int64_t id, const std::function<Tensor(const Tensor&)>& next, const char* op) {
  id = bound(id);
  std::shared_ptr<Var> v = hold(id);
  std::lock_guard<std::mutex> update(v->update_mu);
  Tensor cur;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    cur = v->value;
  }
  check_and_store(*v, next(cur), op);
}

void variable_info(int64_t id, DType* dtype, Shape* shape, std::string* name) {
  id = bound(id);
  std::lock_guard<std::mutex> lock(g_mu);
  Var& v = lookup(id);
  *dtype = v.value.dtype();
  *shape = v.value.shape();
  if (name) *name = v.name;
}

VariableBinding::VariableBinding(const std::vector<int64_t>* from, const std::vector<int64_t>* to)
    : saved_from_(t_from), saved_to_(t_to) {
  if (from && (!to || to->size() != from->size()))
    throw_invalid("VariableBinding: ", from->size(), " traced variables for ", to ? to->size() : 0,
                  " arguments");
  t_from = from;
  t_to = from ? to : nullptr;
}

VariableBinding::~VariableBinding() {
  t_from = saved_from_;
  t_to = saved_to_;
}

}  // namespace jf
