// Stateful kernels: variable reads and writes, and PrintV2 (handed to the Python layer,
// which owns sys.stdout / sys.stderr).
#include "core/variables.h"
#include "ir/op_registry.h"
#include "kernels/kernels.h"

namespace jf {
namespace {
PrintFn g_print = nullptr;
}

void set_print_fn(PrintFn fn) { g_print = fn; }

void infer_read_variable(OpCall& c) {
  DType dt;
  Shape s;
  variable_info(c.attrs.get<int64_t>("var_id", 0), &dt, &s, nullptr);
  c.add_output(dt, s);
}
void infer_assign_variable(OpCall& c) {
  DType dt;
  Shape s;
  std::string name;
  variable_info(c.attrs.get<int64_t>("var_id", 0), &dt, &s, &name);
  if (c.in[0].dtype() != dt)
    c.fail("cannot assign a value of type ", c.in[0].desc(), " to variable '", name, "' of type ",
           dtype_name(dt), s.str());
  if (c.in[0].shape() != s)  // TF: no broadcasting, for assign_add and assign_sub either
    c.fail("Cannot update variable '", name, "' with shape ", s.str(), " using a Tensor with shape ",
           c.in[0].shape().str(), ", shapes must be equal.");
}
void infer_print(OpCall&) {}
void infer_control_flow(OpCall& c) { c.fail("If/While nodes are built by jf.cond / jf.while_loop"); }

void k_ReadVariableOp(OpCall& c) { c.results[0] = read_variable(c.attrs.get<int64_t>("var_id", 0)); }
void k_AssignVariableOp(OpCall& c) { assign_variable(c.attrs.get<int64_t>("var_id", 0), c.in[0], c.name()); }
static void assign_op(OpCall& c, OpId op) {
  const Tensor& delta = c.in[0];
  update_variable(
      c.attrs.get<int64_t>("var_id", 0),
      [&](const Tensor& cur) {
        return run_kernel(op_def(op), {cur, delta}, Attrs())[0];
      },
      c.name());
}
void k_AssignAddVariableOp(OpCall& c) { assign_op(c, OpId::AddV2); }
void k_AssignSubVariableOp(OpCall& c) { assign_op(c, OpId::Sub); }
void k_PrintV2(OpCall& c) {
  if (g_print) g_print(c.in, c.attrs);
}
// Graph ops run by the executor itself; called eagerly they raise.
void k_If(OpCall& c) { c.fail("If runs only inside a traced function"); }
void k_While(OpCall& c) { c.fail("While runs only inside a traced function"); }
void k_XlaLaunch(OpCall& c) { c.fail("XlaLaunch runs only inside a traced function"); }

}  // namespace jf
