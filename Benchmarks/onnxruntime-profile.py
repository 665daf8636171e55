#!/usr/bin/env python3
"""Where ONNX Runtime spends its time, per operator kind (and with --steps per node), to set beside
`kiroku bench --profile [--steps]`.

    python3 Benchmarks/onnxruntime-profile.py MODEL THREADS [RUNS] [--steps] [--batch N]

Batch 1 unless --batch says otherwise (the model's batch must then be symbolic:
scripts/symbolic_batch.py), the CPU provider with all graph optimisations (as Benchmarks/onnxruntime-bench.py), its
built-in profiler on; prints mean milliseconds per run after a tenth as many warm-up runs (at least
5). Depthwise and other grouped convolutions are reported apart from the rest of Conv, found by
name in the optimised graph ONNX Runtime saves (it fuses activations and renames nodes, so kinds,
not names, are what compare). Benchmarks/compare-steps.py imports `profile`."""
import collections
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ort.set_default_logger_severity(3)  # not the warning about saving an NCHWc-optimised graph


def profile(model, threads, runs, batch=1):
    """Each node ONNX Runtime ran, in execution order: name -> [kind, mean ms over the `runs` runs
    of `batch` images after a tenth as many warm-up runs, at least 5 (whose events are dropped)]."""
    warmup = max(5, runs // 10)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.profile_file_prefix = os.path.join(tempfile.gettempdir(), f"onnxruntime-profile-{os.getpid()}")
    optimised = tempfile.NamedTemporaryFile(suffix=".onnx", delete=False).name
    options.optimized_model_filepath = optimised  # its node names are the profile's
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    spec = session.get_inputs()[0]
    x = np.random.default_rng(5).standard_normal([batch] + list(spec.shape[1:])).astype(np.float32)
    for _ in range(warmup + runs):
        session.run(None, {spec.name: x})
    trace = session.end_profiling()
    with open(trace) as file:
        events = json.load(file)
    os.remove(trace)

    # Grouped (depthwise) convolutions, by their name in the graph ONNX Runtime ran.
    graph = onnx.load(optimised, load_external_data=False).graph  # only its nodes: no weights beside it
    os.remove(optimised)
    grouped = {node.name for node in graph.node
               if node.op_type == "Conv" and any(a.name == "group" and a.i > 1 for a in node.attribute)}
    steps = collections.OrderedDict()
    seen = collections.Counter()
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        name, op = event["name"][: -len("_kernel_time")], event["args"].get("op_name", "?")
        seen[name] += 1
        if seen[name] <= warmup:
            continue
        kind = "Conv (grouped)" if op == "Conv" and name in grouped else op
        entry = steps.setdefault(name, [kind, 0.0])
        entry[1] += event["dur"] / 1000 / runs
    return steps


def main():
    args = [a for a in sys.argv[1:] if a != "--steps"]
    batch = 1
    if "--batch" in args:
        at = args.index("--batch")
        batch = int(args[at + 1])
        del args[at:at + 2]
    model, threads = args[0], int(args[1])
    runs = int(args[2]) if len(args) > 2 else 30
    steps = profile(model, threads, runs, batch)
    by_kind = collections.defaultdict(float)
    for kind, ms in steps.values():
        by_kind[kind] += ms
    if "--steps" in sys.argv:
        for name, (kind, ms) in steps.items():
            print(f"  {ms:8.3f} ms  {kind} {name}")
    for kind, ms in sorted(by_kind.items(), key=lambda item: -item[1]):
        print(f"  {kind:26s} {ms:8.2f} ms")
    print(f"  {'total':26s} {sum(by_kind.values()):8.2f} ms")


if __name__ == "__main__":
    main()
