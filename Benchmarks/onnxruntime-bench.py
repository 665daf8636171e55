#!/usr/bin/env python3
"""The peer for `kiroku bench`: ONNX Runtime (CPU) on the same model, batch and thread count,
timed the same way (warm-up, then per-run wall time divided by the batch). Prints one JSON object.

    python3 Benchmarks/onnxruntime-bench.py MODEL.onnx BATCH THREADS RUNS
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort

model, batch, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
options = ort.SessionOptions()
options.intra_op_num_threads = threads
options.inter_op_num_threads = 1
options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
spec = session.get_inputs()[0]
shape = [batch if not isinstance(d, int) else d for d in spec.shape]
x = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)
for _ in range(max(5, runs // 10)):
    session.run(None, {spec.name: x})
times = []
for _ in range(runs):
    start = time.perf_counter()
    session.run(None, {spec.name: x})
    times.append((time.perf_counter() - start) * 1000 / batch)
times.sort()
print(json.dumps({"runtime": f"onnxruntime {ort.__version__}", "batch": batch, "threads": threads, "runs": runs,
                  "ms_per_image_mean": sum(times) / len(times), "ms_per_image_p50": times[len(times) // 2],
                  "ms_per_image_p99": times[min(len(times) - 1, int(len(times) * 0.99))]}))
