#!/usr/bin/env python3
"""The int8 peer's model: ONNX Runtime's quantize_static (QDQ form, per-channel int8 weights, uint8
activations, MinMax) calibrated on every other photo's reference input tensor, the photos `make test`
prepares (.kiroku/vision-fixtures/reference/*.npy, 224x224, the model's own preprocessing).

    python3 Benchmarks/onnxruntime-quantize.py MODEL.onnx OUT.onnx [REFERENCE_DIR]
"""
import pathlib
import sys

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

model, out = sys.argv[1], sys.argv[2]
reference = pathlib.Path(sys.argv[3] if len(sys.argv) > 3 else ".kiroku/vision-fixtures/reference")
inputs = [np.load(path).astype(np.float32) for path in sorted(reference.glob("*.npy"))][::2]
if not inputs:
    sys.exit(f"onnxruntime-quantize: no .npy tensors in {reference} (run make test first)")
name = onnx.load(model).graph.input[0].name


class Photos(CalibrationDataReader):
    def __init__(self):
        self.batches = iter([{name: tensor} for tensor in inputs])

    def get_next(self):
        return next(self.batches, None)


quantize_static(model, out, Photos(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
print(f"onnxruntime-quantize: {out}, calibrated on {len(inputs)} photos")
