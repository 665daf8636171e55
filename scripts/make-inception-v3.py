#!/usr/bin/env python3
"""Writes InceptionV3 (torchvision's architecture, 299x299, no auxiliary head) with random weights
as ONNX, for speed benchmarks and a large-graph check against ONNX Runtime. numpy and onnx only.

    python3 scripts/make-inception-v3.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(299)


class Builder:
    def __init__(self):
        self.nodes, self.initializers, self.count = [], [], 0

    def name(self, kind):
        self.count += 1
        return f"{kind}_{self.count}"

    def const(self, value):
        name = self.name("w")
        self.initializers.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv(self, x, cin, cout, kernel, stride=1, pad=(0, 0)):
        """torchvision's BasicConv2d: Conv (no bias), BatchNormalization (eps 0.001), ReLU."""
        kh, kw = kernel if isinstance(kernel, tuple) else (kernel, kernel)
        ph, pw = pad if isinstance(pad, tuple) else (pad, pad)
        w = RNG.standard_normal((cout, cin, kh, kw)) * np.sqrt(2.0 / (cin * kh * kw))
        c = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, self.const(w)], [c], name=c, kernel_shape=[kh, kw],
                                           strides=[stride, stride], pads=[ph, pw, ph, pw]))
        stats = [RNG.uniform(0.5, 1.5, cout), RNG.uniform(-0.1, 0.1, cout), RNG.uniform(-0.1, 0.1, cout), RNG.uniform(0.5, 1.5, cout)]
        b = self.name("bn")
        self.nodes.append(helper.make_node("BatchNormalization", [c] + [self.const(s) for s in stats], [b], name=b, epsilon=1e-3))
        r = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [b], [r], name=r))
        return r

    def pool(self, kind, x, kernel, stride, pad=0, **attributes):
        y = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, [x], [y], name=y, kernel_shape=[kernel, kernel], strides=[stride, stride],
                                           pads=[pad] * 4, **attributes))
        return y

    def concat(self, inputs):
        y = self.name("concat")
        self.nodes.append(helper.make_node("Concat", inputs, [y], name=y, axis=1))
        return y


def inception_a(g, x, cin, pool_features):
    b1 = g.conv(x, cin, 64, 1)
    b5 = g.conv(g.conv(x, cin, 48, 1), 48, 64, 5, pad=2)
    b3 = g.conv(g.conv(g.conv(x, cin, 64, 1), 64, 96, 3, pad=1), 96, 96, 3, pad=1)
    bp = g.conv(g.pool("AveragePool", x, 3, 1, 1, count_include_pad=1), cin, pool_features, 1)
    return g.concat([b1, b5, b3, bp]), 224 + pool_features


def inception_b(g, x, cin):
    b3 = g.conv(x, cin, 384, 3, stride=2)
    bd = g.conv(g.conv(g.conv(x, cin, 64, 1), 64, 96, 3, pad=1), 96, 96, 3, stride=2)
    return g.concat([b3, bd, g.pool("MaxPool", x, 3, 2)]), 480 + cin


def inception_c(g, x, cin, c7):
    b1 = g.conv(x, cin, 192, 1)
    b7 = g.conv(g.conv(g.conv(x, cin, c7, 1), c7, c7, (1, 7), pad=(0, 3)), c7, 192, (7, 1), pad=(3, 0))
    bd = g.conv(x, cin, c7, 1)
    for kernel, pad in (((7, 1), (3, 0)), ((1, 7), (0, 3)), ((7, 1), (3, 0))):
        bd = g.conv(bd, c7, c7, kernel, pad=pad)
    bd = g.conv(bd, c7, 192, (1, 7), pad=(0, 3))
    bp = g.conv(g.pool("AveragePool", x, 3, 1, 1, count_include_pad=1), cin, 192, 1)
    return g.concat([b1, b7, bd, bp]), 768


def inception_d(g, x, cin):
    b3 = g.conv(g.conv(x, cin, 192, 1), 192, 320, 3, stride=2)
    b7 = g.conv(g.conv(g.conv(g.conv(x, cin, 192, 1), 192, 192, (1, 7), pad=(0, 3)), 192, 192, (7, 1), pad=(3, 0)), 192, 192, 3, stride=2)
    return g.concat([b3, b7, g.pool("MaxPool", x, 3, 2)]), 512 + cin


def inception_e(g, x, cin):
    b1 = g.conv(x, cin, 320, 1)
    s = g.conv(x, cin, 384, 1)
    b3 = g.concat([g.conv(s, 384, 384, (1, 3), pad=(0, 1)), g.conv(s, 384, 384, (3, 1), pad=(1, 0))])
    d = g.conv(g.conv(x, cin, 448, 1), 448, 384, 3, pad=1)
    bd = g.concat([g.conv(d, 384, 384, (1, 3), pad=(0, 1)), g.conv(d, 384, 384, (3, 1), pad=(1, 0))])
    bp = g.conv(g.pool("AveragePool", x, 3, 1, 1, count_include_pad=1), cin, 192, 1)
    return g.concat([b1, b3, bd, bp]), 2048


def build():
    g = Builder()
    x = g.conv("input", 3, 32, 3, stride=2)
    x = g.conv(x, 32, 32, 3)
    x = g.conv(x, 32, 64, 3, pad=1)
    x = g.pool("MaxPool", x, 3, 2)
    x = g.conv(x, 64, 80, 1)
    x = g.conv(x, 80, 192, 3)
    x = g.pool("MaxPool", x, 3, 2)
    x, c = inception_a(g, x, 192, 32)
    x, c = inception_a(g, x, c, 64)
    x, c = inception_a(g, x, c, 64)
    x, c = inception_b(g, x, c)
    for c7 in (128, 160, 160, 192):
        x, c = inception_c(g, x, c, c7)
    x, c = inception_d(g, x, c)
    x, c = inception_e(g, x, c)
    x, c = inception_e(g, x, c)
    g.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="pool"))
    g.nodes.append(helper.make_node("Flatten", ["pooled"], ["features"], name="flatten", axis=1))
    w, b = RNG.standard_normal((1000, c)) * np.sqrt(1.0 / c), np.zeros(1000)
    g.nodes.append(helper.make_node("Gemm", ["features", g.const(w), g.const(b)], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(g.nodes, "inception-v3-random",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 299, 299])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="kiroku make-inception-v3")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    model = build()
    onnx.save(model, sys.argv[1])
    print(f"make-inception-v3: {sys.argv[1]} ({len(model.graph.node)} nodes)")
