#!/usr/bin/env python3
"""How well `kiroku quantize` keeps a model's answers, per calibration method, and whether ONNX
Runtime runs what it writes:

  Benchmarks/quantize-accuracy.py KIROKU MODEL.onnx [--crops 0] [--out .kiroku/quantize-accuracy]

Photos: scripts/decode-agreement.py's set (the project's photos and Debian's wallpapers, each
optionally in random crops); `kiroku quantize` calibrates on every other one and
reports agreement with the float model on the rest; the default's `--sensitivity` ranking picks
the two layers that a further row leaves float. Then ONNX Runtime runs the written model on
the model's reference input twice: its plain operator semantics (no graph optimisation, which
Kiroku's QDQ path follows) and its optimised int8 kernels. Prints Markdown.
"""
import argparse
import contextlib
import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGURATIONS = [
    ("minmax", 8, ["--method", "minmax"]),
    ("percentile 99.999", 8, ["--no-bias-correction"]),
    ("percentile 99.99", 8, ["--percentile", "99.99"]),
    ("percentile 99.999 (default)", 8, []),
    ("percentile 99.999", 7, ["--weight-bits", "7"]),
    # The two layers `--sensitivity` ranks first on the calibration photos left float.
    ("percentile 99.999, 2 most sensitive layers float", 8, ["SENSITIVE"]),
    # The ceiling: everything but the residual Adds and the pooling left float.
    ("percentile 99.999, Conv and Gemm float", 8, ["--keep-float", "Conv", "Gemm"]),
]


def decode_agreement():
    spec = importlib.util.spec_from_file_location("decode_agreement", ROOT / "scripts/decode-agreement.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peer_agreement(model, files, out):
    """The peer's recipe on the same split: ONNX Runtime's quantize_static (QDQ, per-channel int8
    weights, uint8 activations) calibrated on the same photos through the legacy example's Pillow
    preprocessing, top-1 agreement with the float model through its int8 kernels and in plain
    semantics."""
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
    legacy = decode_agreement().legacy_pipeline()
    session, sidecar = legacy.load_model(str(model))
    name = session.get_inputs()[0].name
    tensors = [legacy.preprocess(path.read_bytes(), sidecar, "reduced") for path in files]
    calibration, held = tensors[0::2], tensors[1::2]
    reference = np.array([session.run(None, {name: x})[0][0] for x in held]).argmax(1)

    class Photos(CalibrationDataReader):
        def __init__(self):
            self.inputs = iter([{name: x} for x in calibration])

        def get_next(self):
            return next(self.inputs, None)

    def top1(path, optimised):
        options = ort.SessionOptions()
        if not optimised:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        quantized = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return int((np.array([quantized.run(None, {name: x})[0][0] for x in held]).argmax(1) == reference).sum())

    rows = []
    for label, options in [("minmax", {}), ("minmax, reduce_range", {"reduce_range": True}),
                           ("percentile 99.999", {"calibrate_method": CalibrationMethod.Percentile})]:
        target = out / f"{model.stem}.onnxruntime.int8.onnx"
        with contextlib.redirect_stdout(sys.stderr):  # its progress lines stay out of the table
            quantize_static(str(model), str(target), Photos(), quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, **options)
        rows.append((label, top1(target, True), top1(target, False), len(held)))
    return rows


def onnxruntime_check(kiroku, model, reference):
    """Largest logit difference and top-1 of ONNX Runtime (plain, optimised) against `kiroku infer`."""
    import onnxruntime as ort
    x = np.load(reference)
    ours = model.with_suffix(".kiroku.npy")
    subprocess.run([kiroku, "infer", "--model", str(model), "--input", str(reference), "--output", str(ours)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours = np.load(ours)
    results = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        theirs = session.run(None, {session.get_inputs()[0].name: x})[0]
        results.append((float(np.abs(theirs - ours).max()), int((theirs.argmax(1) == ours.argmax(1)).sum()), len(x)))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kiroku")
    parser.add_argument("model")
    parser.add_argument("--crops", type=int, default=0)
    parser.add_argument("--out", default=str(ROOT / ".kiroku/quantize-accuracy"))
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    files = decode_agreement().dataset(out, args.crops)
    model = pathlib.Path(args.model)
    reference = model.with_name(model.stem + ".reference-input.npy")
    print(f"{model.name}: {len(files)} JPEGs (the project's photos and Debian's wallpapers, {args.crops} random crop(s) "
          f"each), calibrated on every other one, agreement with the float model on the rest\n")
    print("| activation ranges | weight bits | bias correction | decision agrees (95% interval) | top-1 agrees on the decisive (margin 0.1) "
          "| mean squared logit difference | top-1 agrees, every photo | accepted at 98% | float's top two on the disagreements, largest gap "
          "| ONNX Runtime plain: max logit diff, top-1 | ONNX Runtime int8 kernels: max logit diff, top-1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    def quantize(target, flags):
        run = subprocess.run([args.kiroku, "quantize", "--model", str(model), "--calibrate", *map(str, files),
                              "--output", str(target), "--force", "--json", "--speed-runs", "0", *flags], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"kiroku quantize failed ({' '.join(flags)}): {run.stderr}")
        return json.loads(run.stdout)

    sensitive = []
    for index, (name, bits, flags) in enumerate(CONFIGURATIONS):
        target = out / f"{model.stem}.{index}.int8.onnx"
        if flags == ["SENSITIVE"]:
            if not sensitive:
                sys.exit("quantize-accuracy: the default row's --sensitivity ranking must come before the row that uses it")
            flags = ["--keep-float", *sensitive]
            name += f" (`{' '.join(flags)}`)"
        report = quantize(target, flags + (["--sensitivity"] if not flags else []))
        if report.get("sensitivity"):
            sensitive = [layer["node"] for layer in report["sensitivity"]["layers"][:2]]
        held = report["held_out_images"]
        same = round(report["top1_agreement"] * held / 100)
        acceptance = report["acceptance"]
        share = lambda p: f"{p['successes']}/{p['trials']} ({100 * p['low']:.0f}-{100 * p['high']:.0f}%)"
        mse = acceptance["mean_squared_logit_difference"]
        cells = [f"{diff:.2f}, {agree}/{total}" for diff, agree, total in onnxruntime_check(args.kiroku, target, reference)]
        gap = max((miss["float"]["score"] - miss["float_runner_up"]["score"] for miss in report["disagreements"] if "float_runner_up" in miss),
                  default=None)
        print(f"| {name} | {bits} | {'no' if '--no-bias-correction' in flags else 'yes'} | {share(acceptance['decision'])} "
              f"| {share(acceptance['decisive_top1'])} | {mse['mean']:.4f} ({mse['low']:.4f}-{mse['high']:.4f}) | {same}/{held} "
              f"| {'yes' if not acceptance['shortfalls'] else 'no'} | {'-' if gap is None else f'{gap:.3f}'} | {cells[0]} | {cells[1]} |")
    print("\nThe peer on the same split (`quantize_static`, per-channel int8 weights, uint8 activations, Pillow preprocessing):\n")
    print("| ONNX Runtime recipe | top-1 agrees, its int8 kernels | plain semantics |")
    print("|---|---|---|")
    for label, kernels, plain, held in peer_agreement(model, files, out):
        print(f"| {label} | {kernels}/{held} | {plain}/{held} |")


if __name__ == "__main__":
    sys.exit(main())
