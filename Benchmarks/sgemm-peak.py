#!/usr/bin/env python3
"""The machine's sgemm peak in GFLOP/s: OpenBLAS (NumPy's) on 1024x1024 float32 matrices, on the
thread count given by OPENBLAS_NUM_THREADS, best of 20 runs."""
import time

import numpy as np

a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
b = a.T.copy()
a @ b
times = []
for _ in range(20):
    start = time.perf_counter()
    a @ b
    times.append(time.perf_counter() - start)
print(f"{2 * 1024 ** 3 / min(times) / 1e9:.1f}")
