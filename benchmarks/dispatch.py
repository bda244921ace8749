"""Per-call cost of a cached jf.function against the same ops run eagerly, for a 1-op, a
10-op (the seed's LSTM cell) and a 100-op function on small tensors. All figures come from
one run; ratios are what to compare (this machine is noisy).

Columns: eager = the Python function run op by op; function = a cached jf.function call;
graph = the same plan run in a C++ loop (kernels + executor, no Python); overhead =
function - graph, the cost of crossing from Python (signature key, GIL release, outputs)."""
import sys
import timeit

import jitflow as jf


def best_us(fn, number):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=15)) / number * 1e6


def measure(name, py_fn, args, number):
    f = jf.function(py_fn)
    f(*args)
    eager = best_us(lambda: py_fn(*args), number)
    func = best_us(lambda: f(*args), number)
    cf = f.get_concrete_function(*args)
    leaves = jf._C.flatten_inputs(args, None)[1]
    graph = min(cf._cf.time_runs(leaves, number) for _ in range(15)) * 1e6
    ops = sum(1 for op in cf.graph.get_operations() if op.type not in ("Placeholder", "Const"))
    print(f"{name:<22}{ops:>5}{eager:>11.2f}{func:>11.2f}{graph:>11.2f}{func - graph:>11.2f}"
          f"{eager / func:>10.1f}x")
    return eager, func


def main():
    x = jf.zeros([10, 10])
    print(f"{'workload':<22}{'ops':>5}{'eager us':>11}{'func us':>11}{'graph us':>11}{'ovh us':>11}"
          f"{'eager/fn':>11}")
    measure("1 op (add)", lambda a: a + a, (x,), 5000)
    cell = jf.nn.LSTMCell(10)
    state = [jf.zeros([10, 10]), jf.zeros([10, 10])]
    measure("LSTM cell (seed)", lambda i, s: cell(i, s), (x, state), 2000)

    def hundred(a):
        for _ in range(50):
            a = jf.tanh(a * 0.5)
        return a
    measure("100 ops (mul,tanh)x50", hundred, (x,), 500)


if __name__ == "__main__":
    sys.exit(main())
