#!/usr/bin/env python3
"""The comparison of `make zoo`: each model through `kiroku infer` and ONNX Runtime on one seeded
input (maximum difference relative to the largest logit, same top-1), then `kiroku bench` beside
Benchmarks/onnxruntime-bench.py, alternated rounds on 1 and 2 threads, batch 1 and any other (medians of the rounds'
p50, and the median of the rounds' ratios).
A model agrees when the difference is within 1e-3 of the largest logit and top-1 is the same (where
ONNX Runtime's top two differ by more than 1e-4). Beside it, how far ONNX Runtime's own output moves
when every input value moves by one rounding (the next float up): a model that amplifies rounding
moves by more than 1e-3 there too, and no engine that rounds differently can agree closer.
Prints a Markdown table; exit 1 when any model fails to load or disagrees.

    python3 scripts/zoo-compare.py KIROKU MODEL.onnx... [--rounds 3] [--runs 20] [--threads 1 2] [--batch 1 8] [--no-speed]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

import symbolic_batch

BENCH = pathlib.Path(__file__).resolve().parent.parent / "Benchmarks" / "onnxruntime-bench.py"


def agreement(kiroku, model, workdir):
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    spec = session.get_inputs()[0]
    x = np.random.default_rng(5).standard_normal([1] + [d if isinstance(d, int) else 1 for d in spec.shape[1:]]).astype(np.float32)
    np.save(f"{workdir}/input.npy", x)
    reference = session.run(None, {spec.name: x})[0]
    moved = session.run(None, {spec.name: np.nextafter(x, np.float32(np.inf))})[0]
    run = subprocess.run([kiroku, "infer", "--model", model, "--input", f"{workdir}/input.npy", "--output", f"{workdir}/ours.npy"],
                         capture_output=True, text=True)
    if run.returncode:
        return None, run.stderr.strip().splitlines()[-1][:200]
    ours = np.load(f"{workdir}/ours.npy")
    if ours.shape != reference.shape:
        return None, f"shape {ours.shape}, ONNX Runtime {reference.shape}"
    scale = float(np.abs(reference).max()) or 1.0
    # Top-1 is compared where ONNX Runtime's top two classes differ by more than 1e-4 (else a tie).
    first, second = np.sort(reference.ravel())[-2:][::-1]
    same = bool(ours.argmax() == reference.argmax()) or first - second <= 1e-4
    return (float(np.abs(ours - reference).max()) / scale, same, float(np.abs(moved - reference).max()) / scale), None


def milliseconds(value):
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def speed(kiroku, model, batch, threads, rounds, runs):
    ours, theirs = [], []
    for _ in range(rounds):
        result = subprocess.run([kiroku, "bench", "--model", model, "--batch", str(batch), "--threads", str(threads), "--runs", str(runs),
                                 "--json"], capture_output=True, text=True)
        if result.returncode:
            return None
        ours.append(json.loads(result.stdout)["ms_per_image_p50"])
        result = subprocess.run([sys.executable, str(BENCH), model, str(batch), str(threads), str(runs)], capture_output=True, text=True)
        if result.returncode:
            return None
        theirs.append(json.loads(result.stdout)["ms_per_image_p50"])
    # The ratio is the median of the rounds' ratios: a round the host slowed slows both runtimes alike.
    return statistics.median(ours), statistics.median(theirs), statistics.median(a / b for a, b in zip(ours, theirs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kiroku")
    parser.add_argument("models", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20, help="runs per round at batch 1 (at batch B: max(3, runs / B))")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], choices=[1, 2])
    parser.add_argument("--batch", type=int, nargs="+", default=[1],
                        help="batch sizes; above 1 the export's batch is made symbolic first (scripts/symbolic_batch.py)")
    parser.add_argument("--no-speed", action="store_true")
    args = parser.parse_args()
    cases = [] if args.no_speed else [(batch, threads) for batch in args.batch for threads in args.threads]
    failures, ratios = 0, {case: [] for case in cases}
    header = ["model", "max diff / max logit", "top-1", "ONNX Runtime's own, input one rounding away"]
    for batch, threads in cases:
        header += [f"Kiroku p50 ms, batch {batch}, {threads} thread(s)", "ONNX Runtime", "ratio"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    with tempfile.TemporaryDirectory() as workdir:
        for model in args.models:
            name = pathlib.Path(model).stem
            result, error = agreement(args.kiroku, model, workdir)
            if result is None:
                failures += 1
                print(f"| {name} | refused or failed: {error} |" + " |" * (len(header) - 2), flush=True)
                continue
            difference, same, own = result
            failures += difference > 1e-3 or not same
            cells = [f"{difference:.1e}", "same" if same else "DIFFERENT", f"{own:.1e}"]
            batched = None
            for batch, threads in cases:
                if batch > 1 and batched is None:
                    batched = f"{workdir}/{name}-batched.onnx"
                    symbolic_batch.make_symbolic(model, batched)
                timed = speed(args.kiroku, batched if batch > 1 else model, batch, threads, args.rounds,
                              args.runs if batch == 1 else max(3, args.runs // batch))
                if timed is None:
                    failures += batch == 1
                    cells += ["(batch fixed in the graph)" if batch > 1 else "failed", "", ""]
                    continue
                ours, theirs, ratio = timed
                ratios[(batch, threads)].append(ratio)
                cells += [milliseconds(ours), milliseconds(theirs), f"{ratio:.2f}x"]
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    for (batch, threads), values in ratios.items():
        if values:
            print(f"\nKiroku / ONNX Runtime at batch {batch} on {threads} thread(s): median {statistics.median(values):.2f}x, "
                  f"worst {max(values):.2f}x over {len(values)} models")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
