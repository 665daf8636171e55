#!/usr/bin/env python3
"""Where the time goes, convolution by convolution, in Kiroku and in ONNX Runtime on the same model
and thread count: `kiroku bench --profile --steps` beside ONNX Runtime's own profiler
(Benchmarks/onnxruntime-profile.py), alternated ROUNDS times, each step's minimum over the rounds
(the machine is shared: minima are the least disturbed). The convolutions are paired in execution
order when both runtimes run as many; otherwise (Kiroku merges sibling convolutions) only the
totals are printed.

    python3 Benchmarks/compare-steps.py MODEL.onnx [THREADS] [ROUNDS] [RUNS] [--batch N]

Both profilers time each step on its own, which costs a little: compare the two columns with each
other, not with `make bench`'s whole-model figures. With --batch N each run is N images (the
model's batch must be symbolic: scripts/symbolic_batch.py). KIROKU_BIN names the kiroku binary
(default: the release build's).
"""
import importlib.util
import os
import re
import subprocess
import sys

import onnxruntime as ort

_spec = importlib.util.spec_from_file_location(
    "onnxruntime_profile", os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnxruntime-profile.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
profile = _module.profile

STEP = re.compile(r"^\s+([\d.]+) ms  (.+)$")


def kiroku_steps(binary, model, threads, runs, batch):
    """(ms, label) per step, in execution order."""
    out = subprocess.run([binary, "bench", "--model", model, "--threads", str(threads), "--runs", str(runs), "--batch", str(batch),
                          "--profile", "--steps"],
                         check=True, capture_output=True, text=True).stdout
    return [(float(m.group(1)), m.group(2)) for m in map(STEP.match, out.splitlines()) if m]


def onnxruntime_steps(model, threads, runs, batch):
    """(ms, kind) per node, in execution order."""
    return [(ms, kind) for kind, ms in profile(model, threads, runs, batch).values()]


def minima(rounds):
    """Each position's minimum over rounds of equally long step lists, with the first round's label."""
    return [(min(r[i][0] for r in rounds), rounds[0][i][1]) for i in range(len(rounds[0]))]


def main():
    args = sys.argv[1:]
    batch = 1
    if "--batch" in args:
        at = args.index("--batch")
        batch = int(args[at + 1])
        del args[at:at + 2]
    model = args[0]
    threads = int(args[1]) if len(args) > 1 else 1
    rounds = int(args[2]) if len(args) > 2 else 3
    runs = int(args[3]) if len(args) > 3 else 200
    binary = os.environ.get("KIROKU_BIN") or os.path.join(
        subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], check=True, capture_output=True, text=True).stdout.strip(),
        "kiroku")
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(kiroku_steps(binary, model, threads, runs, batch))
        theirs.append(onnxruntime_steps(model, threads, runs, batch))
    ours, theirs = minima(ours), minima(theirs)
    our_convs = [s for s in ours if s[1].startswith("Conv node")]
    their_convs = [s for s in theirs if s[1].startswith("Conv") or s[1] == "FusedConv"]
    print(f"{os.path.basename(model)}, batch {batch}, {threads} thread(s), minima of {rounds} rounds of {runs} runs; onnxruntime {ort.__version__}")
    print()
    if len(our_convs) == len(their_convs):
        print("| Kiroku ms | ONNX Runtime ms | ratio | Kiroku step |")
        print("|---|---|---|---|")
        for (a, label), (b, _) in zip(our_convs, their_convs):
            print(f"| {a:.3f} | {b:.3f} | {a / b:.2f} | {label} |")
        print()
    else:
        print(f"({len(our_convs)} convolution steps in Kiroku, {len(their_convs)} in ONNX Runtime: not paired)")
    print(f"convolutions: Kiroku {sum(s[0] for s in our_convs):.2f} ms, ONNX Runtime {sum(s[0] for s in their_convs):.2f} ms")
    print(f"every step:   Kiroku {sum(s[0] for s in ours):.2f} ms, ONNX Runtime {sum(s[0] for s in theirs):.2f} ms")


if __name__ == "__main__":
    main()
