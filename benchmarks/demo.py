"""`make demo`: the seed's LSTM example (eager vs jf.function vs compiled), then the table of
eager op timings against numpy."""
import os
import sys
import timeit

import jitflow as jf

sys.path.insert(0, os.path.dirname(__file__))


def lstm_demo(number=10):
    lstm_cell = jf.keras.layers.LSTMCell(10)  # the seed spells it tf.keras.layers.LSTMCell

    @jf.function
    def lstm_fn(input, state):
        return lstm_cell(input, state)

    @jf.function
    def lstm_compiled(input, state):
        with jf.jit_scope():
            return lstm_cell(input, state)

    input = jf.zeros([10, 10])
    state = [jf.zeros([10, 10])] * 2
    # warm up
    lstm_cell(input, state)
    lstm_fn(input, state)
    lstm_compiled(input, state)
    # The seed times 10 calls once; we repeat that 50 times and keep the best (noisy machine).
    eager = min(timeit.repeat(lambda: lstm_cell(input, state), number=number, repeat=50))
    function = min(timeit.repeat(lambda: lstm_fn(input, state), number=number, repeat=50))
    compiled = min(timeit.repeat(lambda: lstm_compiled(input, state), number=number, repeat=50))
    print("eager lstm:", eager)
    print("function lstm:", function)
    print("compiled lstm:", compiled)
    print(f"function/eager speed-up: {eager / function:.1f}x, compiled/eager: {eager / compiled:.1f}x "
          "(the seed measured 6.8x for TensorFlow's function/eager)")
    clusters = lstm_compiled.get_concrete_function(input, state).clusters
    print(f"compiled clusters: {[(c.name, len(c.ops)) for c in clusters]}")


if __name__ == "__main__":
    lstm_demo()
    print()
    import eager_ops
    eager_ops.main()
