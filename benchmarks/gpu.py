"""GPU benchmark: fused elementwise bandwidth vs a device copy and the LSTM cell, on a machine
with a GPU. Elsewhere it says why there is nothing to measure and exits 0."""
import sys

import jitflow as jf


def main():
    status = jf._C.cuda_status()
    if not status["available"]:
        print(f"no GPU: {status['error']} -- nothing to measure (PTX generation is exercised by "
              "tests/python/test_gpu_codegen.py)")
        return 0
    names = [jf._C.cuda_device_name(i) for i in range(status["device_count"])]
    print(f"GPUs: {names}; driver {status['driver_version']}")
    print("GPU execution is not implemented in this build yet: kernels are generated as PTX "
          "(jf.experimental.emit_ptx) but not launched. Nothing to time.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
