#!/usr/bin/env python3
"""Builds small ONNX models and their ONNX Runtime outputs for the engine's tests.

    python3 scripts/make-inference-fixtures.py OUT_DIR
    python3 scripts/make-inference-fixtures.py --large OUT_DIR

One directory per case: model.onnx, input_<i>.npy, expected_<i>.npy (ONNX Runtime's outputs,
CPU provider, all optimisations off so the reference is the plain operator semantics). Beside
OUT_DIR, BadModels/ holds models the engine must refuse with a clear error.
With --large: the cases too big to commit (convolutions whose unrolled input passes the engine's
4 MB band threshold, depthwise ones over wide planes), which `make test` generates into .kiroku/inference-fixtures-large.
With --quantized: small float models quantized by ONNX Runtime's quantize_static (QDQ form, int8
weights per channel, calibrated on seeded random inputs), for Tests/KirokuInferenceTests/QuantizedFixtures;
each case adds step_<i>.npy, the scale of output i's last DequantizeLinear (one quantization step).
Needs onnx, onnxruntime and numpy from PyPI. Inputs are seeded random, so runs are repeatable.
"""
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

LARGE = len(sys.argv) > 1 and sys.argv[1] == "--large"
QUANTIZED = len(sys.argv) > 1 and sys.argv[1] == "--quantized"
OUT = pathlib.Path(sys.argv[-1] if len(sys.argv) > 1 + (LARGE or QUANTIZED) else "Tests/KirokuInferenceTests/Fixtures")
RNG = np.random.default_rng(20261122)
CASES = []


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def case(name, nodes, inputs, initializers=(), opset=17, outputs=None):
    """inputs: {name: array}; initializers: {name: array}; outputs: names (default: last node's)."""
    CASES.append((name, nodes, dict(inputs), dict(initializers), opset, outputs))


def float_model(name, nodes, inputs, initializers, opset, outputs):
    """The graph as an ONNX model: float inputs of the given arrays' shapes, `outputs` of unknown shape."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="kiroku-fixtures")
    model.ir_version = 8
    return model


def plain_outputs(model, outputs, inputs):
    """ONNX Runtime's outputs with all optimisations off: the plain operator semantics."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(outputs, inputs)


def save_case(name, model, inputs, results):
    """OUT/name: model.onnx, input_<i>.npy and expected_<i>.npy; returns the directory."""
    directory = OUT / name
    directory.mkdir(parents=True, exist_ok=True)
    onnx.save(model, directory / "model.onnx")
    for i, value in enumerate(inputs.values()):
        np.save(directory / f"input_{i}.npy", value)
    for i, value in enumerate(results):
        np.save(directory / f"expected_{i}.npy", np.asarray(value, dtype=np.float32))
    return directory


def build(name, nodes, inputs, initializers, opset, outputs):
    outputs = outputs or list(nodes[-1].output)
    model = float_model(name, nodes, inputs, initializers, opset, outputs)
    results = plain_outputs(model, outputs, inputs)
    # Declare the output shapes ONNX Runtime produced, then let the checker vet the model.
    del model.graph.output[:]
    model.graph.output.extend(
        helper.make_tensor_value_info(o, TensorProto.FLOAT, r.shape) for o, r in zip(outputs, results))
    if name not in UNCHECKED:
        onnx.checker.check_model(model, full_check=True)
    save_case(name, model, inputs, results)


N = helper.make_node
# Cases of operator versions the checker calls deprecated but exporters wrote and ONNX Runtime runs.
UNCHECKED = {"groupnorm_opset18_scale_per_group"}

# Convolution: padding, strides, dilations, groups, depthwise, auto_pad, bias or not.
x = rand(1, 4, 9, 9)
w = rand(6, 4, 3, 3, scale=0.3)
b = rand(6)
case("conv_basic", [N("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], {"x": x}, {"w": w, "b": b})
case("conv_no_bias_valid", [N("Conv", ["x", "w"], ["y"])], {"x": x}, {"w": w})
case("conv_stride2_asym_pads", [N("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[0, 1, 2, 1])], {"x": x}, {"w": w, "b": b})
case("conv_dilation2", [N("Conv", ["x", "w", "b"], ["y"], dilations=[2, 2], pads=[2, 2, 2, 2])], {"x": x}, {"w": w, "b": b})
case("conv_same_upper_stride2", [N("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER")], {"x": rand(1, 4, 8, 8)}, {"w": w, "b": b})
case("conv_same_lower_stride2", [N("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], auto_pad="SAME_LOWER")], {"x": rand(1, 4, 8, 8)}, {"w": w, "b": b})
case("conv_groups2", [N("Conv", ["x", "w"], ["y"], group=2, pads=[1, 1, 1, 1])], {"x": x}, {"w": rand(6, 2, 3, 3, scale=0.3)})
case("conv_depthwise_stride2", [N("Conv", ["x", "w", "b"], ["y"], group=4, strides=[2, 2], pads=[1, 1, 1, 1])], {"x": x}, {"w": rand(4, 1, 3, 3), "b": rand(4)})
case("conv_depthwise_5x5", [N("Conv", ["x", "w", "b"], ["y"], group=4, pads=[2, 2, 2, 2])], {"x": x}, {"w": rand(4, 1, 5, 5, scale=0.2), "b": rand(4)})
case("conv_depthwise_dilated_asym", [N("Conv", ["x", "w", "b"], ["y"], group=4, dilations=[2, 2], strides=[1, 2], pads=[1, 2, 3, 0])],
     {"x": x}, {"w": rand(4, 1, 3, 3), "b": rand(4)})
case("conv_depthwise_wide_kernel", [N("Conv", ["x", "w"], ["y"], group=4, pads=[3, 3, 3, 3], strides=[3, 3])],
     {"x": rand(2, 4, 7, 11)}, {"w": rand(4, 1, 5, 5)})
case("conv_1x1_batch2", [N("Conv", ["x", "w", "b"], ["y"])], {"x": rand(2, 8, 5, 7)}, {"w": rand(5, 8, 1, 1), "b": rand(5)})
case("conv_rect_kernel", [N("Conv", ["x", "w"], ["y"], kernel_shape=[1, 3], pads=[0, 1, 0, 1])], {"x": x}, {"w": rand(3, 4, 1, 3)})

# Normalisation and activations.
c = 4
case("batchnorm", [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)], {"x": x},
     {"s": rand(c), "b": rand(c), "m": rand(c), "v": np.abs(rand(c)) + 0.5})
case("relu", [N("Relu", ["x"], ["y"])], {"x": x})
case("clip_min_max", [N("Clip", ["x", "lo", "hi"], ["y"])], {"x": x}, {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)})
case("clip_max_only", [N("Clip", ["x", "", "hi"], ["y"])], {"x": x}, {"hi": np.array(6.0, np.float32)})
case("leakyrelu", [N("LeakyRelu", ["x"], ["y"], alpha=0.1)], {"x": x})
case("sigmoid", [N("Sigmoid", ["x"], ["y"])], {"x": x * 3})
case("hardsigmoid", [N("HardSigmoid", ["x"], ["y"], alpha=0.25, beta=0.4)], {"x": x * 3})
case("hardswish", [N("HardSwish", ["x"], ["y"])], {"x": x * 4})

# Broadcasting arithmetic.
case("add_channel_broadcast", [N("Add", ["x", "c"], ["y"])], {"x": x}, {"c": rand(4, 1, 1)})
case("mul_scalar", [N("Mul", ["x", "c"], ["y"])], {"x": x}, {"c": np.array(1.5, np.float32)})
case("sub_row_broadcast", [N("Sub", ["x", "c"], ["y"])], {"x": x}, {"c": rand(9)})
case("div_two_inputs_broadcast", [N("Div", ["x", "z"], ["y"])], {"x": rand(2, 3, 4), "z": np.abs(rand(3, 1)) + 0.5})
case("add_both_broadcast", [N("Add", ["x", "z"], ["y"])], {"x": rand(3, 1, 5), "z": rand(1, 4, 1)})

# Pooling and reductions.
case("maxpool_3x3_s2", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {"x": x})
case("maxpool_ceil", [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)], {"x": x})
case("avgpool_exclude_pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {"x": x})
case("avgpool_include_pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)], {"x": x})
case("avgpool_ceil", [N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)], {"x": x})
case("global_avgpool", [N("GlobalAveragePool", ["x"], ["y"])], {"x": x})
# Stride 1, output the input's size (InceptionV3's pools): the kernel's flat path.
case("avgpool_same_exclude_pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], {"x": x})
case("avgpool_same_include_pad", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)], {"x": x})
case("maxpool_same_asymmetric", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 4], pads=[0, 1, 2, 2])], {"x": x})
case("maxpool_dilated", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1])], {"x": x})
# Planes wider than one group of rows (a deterministic wave, so the seeded draws above stay as they were).
wave = np.sin(np.arange(2 * 40 * 41, dtype=np.float32) * 0.37).reshape(1, 2, 40, 41) * 3
case("avgpool_large_plane", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {"x": wave})
case("maxpool_large_same", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], {"x": wave})
case("global_maxpool", [N("GlobalMaxPool", ["x"], ["y"])], {"x": x})
case("reducemean_axes_attr", [N("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=0)], {"x": x}, opset=13)
case("reducemean_axes_input", [N("ReduceMean", ["x", "axes"], ["y"], keepdims=1)], {"x": x}, {"axes": np.array([-1, -2], np.int64)}, opset=18)

# Shapes and layout.
case("concat_axis1", [N("Concat", ["x", "z"], ["y"], axis=1)], {"x": x, "z": rand(1, 2, 9, 9)})
case("flatten", [N("Flatten", ["x"], ["y"], axis=1)], {"x": x})
case("reshape_minus_one_zero", [N("Reshape", ["x", "s"], ["y"])], {"x": x}, {"s": np.array([0, -1, 3], np.int64)})
case("squeeze_unsqueeze", [N("Unsqueeze", ["x", "a"], ["u"]), N("Squeeze", ["u", "b"], ["y"])], {"x": rand(1, 3, 1, 5)},
     {"a": np.array([0], np.int64), "b": np.array([1, 3], np.int64)})
case("squeeze_opset11_attr", [N("Squeeze", ["x"], ["y"], axes=[2])], {"x": rand(1, 3, 1, 5)}, opset=11)
case("transpose", [N("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], {"x": x})
case("pad_constant", [N("Pad", ["x", "p", "v"], ["y"], mode="constant")], {"x": x},
     {"p": np.array([0, 0, 1, 2, 0, 1, 3, 0], np.int64), "v": np.array(0.5, np.float32)})
case("identity_dropout", [N("Identity", ["x"], ["i"]), N("Dropout", ["i"], ["y"])], {"x": x})

# Linear layers and softmax.
case("gemm_transb_bias", [N("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=0.5, beta=2.0)], {"x": rand(3, 10)}, {"w": rand(7, 10), "b": rand(7)})
case("gemm_plain", [N("Gemm", ["x", "w"], ["y"])], {"x": rand(2, 6)}, {"w": rand(6, 4)})
# One row (batch 1): a matrix-vector product, its columns split across threads. Own generator, so
# the seeded draws above and below stay as they were.
row_rng = np.random.default_rng(11)
case("gemm_row_transb_bias", [N("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=0.5, beta=2.0)],
     {"x": row_rng.standard_normal((1, 40)).astype(np.float32)},
     {"w": row_rng.standard_normal((300, 40)).astype(np.float32), "b": row_rng.standard_normal(300).astype(np.float32)})
case("gemm_row_transa", [N("Gemm", ["x", "w"], ["y"], transA=1)], {"x": row_rng.standard_normal((40, 1)).astype(np.float32)},
     {"w": row_rng.standard_normal((40, 200)).astype(np.float32)})
case("matmul_2d", [N("MatMul", ["x", "w"], ["y"])], {"x": rand(4, 6)}, {"w": rand(6, 3)})
case("matmul_batched", [N("MatMul", ["x", "w"], ["y"])], {"x": rand(2, 4, 6)}, {"w": rand(6, 3)})
case("softmax_last_axis", [N("Softmax", ["x"], ["y"], axis=-1)], {"x": rand(2, 3, 5) * 3})
case("softmax_opset11_coerce2d", [N("Softmax", ["x"], ["y"], axis=1)], {"x": rand(2, 3, 5) * 3}, opset=11)

# Converter reshape chains: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, folded at load.
case("shape_gather_reshape_chain", [
    N("Shape", ["x"], ["shape"]),
    N("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
    N("Gather", ["shape", "zero"], ["batch"], axis=0),
    N("Unsqueeze", ["batch", "ax0"], ["batch1"]),
    N("Constant", [], ["minus1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
    N("Concat", ["batch1", "minus1"], ["newshape"], axis=0),
    N("Cast", ["newshape"], ["newshape64"], to=TensorProto.INT64),
    N("Reshape", ["x", "newshape64"], ["y"]),
], {"x": rand(2, 4, 3, 3)}, {"ax0": np.array([0], np.int64)})

# Small networks: what the optimiser fuses must still match.
case("net_conv_bn_relu", [
    N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
    N("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
    N("Relu", ["n"], ["y"]),
], {"x": x}, {"w": w, "s": rand(6), "b": rand(6), "m": rand(6), "v": np.abs(rand(6)) + 0.5})
case("net_mobile_block", [
    N("Conv", ["x", "w1", "b1"], ["e"]),                                   # expand 1x1
    N("Clip", ["e", "lo", "hi"], ["e6"]),                                  # ReLU6
    N("Conv", ["e6", "wd", "bd"], ["d"], group=8, pads=[1, 1, 1, 1]),      # depthwise 3x3
    N("HardSwish", ["d"], ["dh"]),
    N("GlobalAveragePool", ["dh"], ["sq"]),                                # squeeze-excite
    N("Conv", ["sq", "ws", "bs"], ["ex"]),
    N("Sigmoid", ["ex"], ["gate"]),
    N("Mul", ["dh", "gate"], ["se"]),
    N("Conv", ["se", "w2", "b2"], ["p"]),                                  # project 1x1
    N("Add", ["p", "x"], ["y"]),                                           # residual
], {"x": x}, {
    "w1": rand(8, 4, 1, 1, scale=0.5), "b1": rand(8), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32),
    "wd": rand(8, 1, 3, 3, scale=0.5), "bd": rand(8), "ws": rand(8, 8, 1, 1, scale=0.5), "bs": rand(8),
    "w2": rand(4, 8, 1, 1, scale=0.5), "b2": rand(4),
})
case("net_classifier_head", [
    N("GlobalAveragePool", ["x"], ["g"]),
    N("Flatten", ["g"], ["f"]),
    N("Gemm", ["f", "w", "b"], ["logits"], transB=1),
    N("Softmax", ["logits"], ["y"], axis=1),
], {"x": rand(2, 4, 5, 5)}, {"w": rand(10, 4), "b": rand(10)})

# Shapes the AVX2 build runs as direct convolutions (strips of 16 outputs, blocks of 6 channels;
# 7 and 20 channels leave a part block): results through a padded grid (same-size, valid, dilated),
# straight into the output (7x1 with a fused residual and Relu, a widening pointwise, batch 2), and
# strided along output rows; Clip clamps as results are stored, HardSwish runs after.
case("direct_same_3x3_clip", [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("Clip", ["c", "lo", "hi"], ["y"])],
     {"x": rand(1, 5, 20, 20)}, {"w": rand(7, 5, 3, 3, scale=0.3), "b": rand(7), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)})
case("direct_valid_3x3_hardswish_batch2", [N("Conv", ["x", "w", "b"], ["c"]), N("HardSwish", ["c"], ["y"])],
     {"x": rand(2, 4, 21, 21)}, {"w": rand(6, 4, 3, 3, scale=0.3), "b": rand(6)})
case("direct_dilated", [N("Conv", ["x", "w", "b"], ["y"], dilations=[2, 2], pads=[2, 2, 2, 2])],
     {"x": rand(1, 3, 40, 40)}, {"w": rand(4, 3, 3, 3, scale=0.3), "b": rand(4)})
case("direct_7x1_residual_relu", [N("Conv", ["x", "w", "b"], ["c"], pads=[3, 0, 3, 0]), N("Add", ["c", "r"], ["s"]), N("Relu", ["s"], ["y"])],
     {"x": rand(1, 3, 17, 17), "r": rand(1, 8, 17, 17)}, {"w": rand(8, 3, 7, 1, scale=0.3), "b": rand(8)})
case("direct_pointwise_widening_batch2", [N("Conv", ["x", "w", "b"], ["c"]), N("Relu", ["c"], ["y"])],
     {"x": rand(2, 8, 12, 12)}, {"w": rand(20, 8, 1, 1, scale=0.3), "b": rand(20)})
case("direct_stride2_rows", [N("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[0, 0, 1, 1])],
     {"x": rand(1, 3, 64, 64)}, {"w": rand(6, 3, 3, 3, scale=0.3), "b": rand(6)})
# Pointwise over small planes (7x7, 6x6), output channels in sixteens: the AVX2 build's direct
# kernel the other way round (6 positions by 16 channels), the last tile overlapping.
case("direct_transposed_7x7_residual_relu", [N("Conv", ["x", "w", "b"], ["c"]), N("Add", ["c", "r"], ["s"]), N("Relu", ["s"], ["y"])],
     {"x": rand(1, 24, 7, 7), "r": rand(1, 32, 7, 7)}, {"w": rand(32, 24, 1, 1, scale=0.3), "b": rand(32)})
case("direct_transposed_6x6_clip_batch2", [N("Conv", ["x", "w", "b"], ["c"]), N("Clip", ["c", "lo", "hi"], ["y"])],
     {"x": rand(2, 20, 6, 6)}, {"w": rand(48, 20, 1, 1, scale=0.3), "b": rand(48), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)})
case("direct_transposed_hardswish", [N("Conv", ["x", "w"], ["c"]), N("HardSwish", ["c"], ["y"])],
     {"x": rand(1, 8, 7, 7)}, {"w": rand(16, 8, 1, 1, scale=0.3)})

# Same-size pools whose window is taller and wider than the plane (taps shifted right off it):
# found by make fuzz, a crash before.
case("maxpool_window_wider_than_plane", [N("MaxPool", ["x"], ["y"], kernel_shape=[5, 7], pads=[2, 3, 2, 3])],
     {"x": rand(1, 3, 2, 1)})
case("avgpool_window_wider_than_plane", [N("AveragePool", ["x"], ["y"], kernel_shape=[7, 5], pads=[3, 2, 3, 2])],
     {"x": rand(2, 2, 1, 3)})

# Pooling an output row at a time (vectors of 8 at strides 1 and 2, the last overlapping, one at
# a time otherwise) and the same-size flat path with a window wider on one side, on planes wider
# than a vector.
case("maxpool_stride1_unpadded_large", [N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])], {"x": wave})
case("maxpool_dilated_stride1_large", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 2], dilations=[2, 3], pads=[1, 0, 2, 1])], {"x": wave})
case("avgpool_stride3_ceil_large", [N("AveragePool", ["x"], ["y"], kernel_shape=[4, 4], strides=[3, 3], pads=[0, 1, 0, 1], ceil_mode=1)],
     {"x": wave})
case("maxpool_same_asymmetric_large", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 4], pads=[0, 1, 2, 2])], {"x": wave})

# Models that combine the images of a batch: the session must run them whole, not image by image.
case("softmax_over_batch", [N("Softmax", ["x"], ["y"], axis=0)], {"x": rand(3, 5)})
case("reducemean_over_batch_added", [N("ReduceMean", ["x"], ["m"], axes=[0], keepdims=1), N("Add", ["x", "m"], ["y"])],
     {"x": rand(3, 4, 2)})

# Depthwise over small planes, 8 channels to a vector (the AVX2 build's lanes kernel): 20 channels
# leave a part block; a plane not a multiple of 8 makes the last 8 positions overlap; Clip clamps
# as results are stored, HardSwish runs after; a 3x3 plane is the smallest taken, a 2x2 output
# stays with the row-vectorised loop; dilation and asymmetric pads; batch 2.
case("depthwise_lanes_stride2_clip", [N("Conv", ["x", "w", "b"], ["c"], group=20, strides=[2, 2], pads=[2, 2, 2, 2]),
                                      N("Clip", ["c", "lo", "hi"], ["y"])],
     {"x": rand(1, 20, 14, 14)}, {"w": rand(20, 1, 5, 5, scale=0.3), "b": rand(20), "lo": np.array(0, np.float32),
                                  "hi": np.array(0.8, np.float32)})
case("depthwise_lanes_hardswish_batch2", [N("Conv", ["x", "w"], ["c"], group=12, pads=[1, 1, 1, 1]), N("HardSwish", ["c"], ["y"])],
     {"x": rand(2, 12, 7, 7) * 3}, {"w": rand(12, 1, 3, 3)})
case("depthwise_lanes_smallest_planes", [N("Conv", ["x", "w", "b"], ["c"], group=9, pads=[1, 1, 1, 1]),
                                         N("Conv", ["c", "v"], ["y"], group=9, strides=[2, 2])],
     {"x": rand(1, 9, 3, 3)}, {"w": rand(9, 1, 3, 3), "b": rand(9), "v": rand(9, 1, 2, 2)})
case("depthwise_lanes_dilated_asym", [N("Conv", ["x", "w", "b"], ["y"], group=16, dilations=[2, 1], strides=[1, 2], pads=[0, 3, 2, 1])],
     {"x": rand(1, 16, 10, 13)}, {"w": rand(16, 1, 3, 4), "b": rand(16)})

# Stride-2 padded copies with an odd left pad (the even columns go to the second phase), rows
# wider than one 16-float pass with an odd tail: a depthwise convolution too wide for the lanes
# kernel, and a direct convolution along output rows.
case("depthwise_stride2_odd_left_pad_wide", [N("Conv", ["x", "w", "b"], ["y"], group=4, strides=[2, 2], pads=[1, 1, 1, 1])],
     {"x": rand(1, 4, 9, 67)}, {"w": rand(4, 1, 3, 3), "b": rand(4)})
case("direct_stride2_odd_left_pad_wide", [N("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])],
     {"x": rand(1, 4, 9, 63)}, {"w": rand(6, 4, 3, 3, scale=0.3), "b": rand(6)})

# A direct convolution with more blocks of 6 output channels than read their strips' input in
# place (80 channels: 14 blocks, the last of 2), so each strip's input is packed into a panel.
case("direct_3x3_packed_part_block", [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["y"])],
     {"x": rand(1, 8, 11, 11)}, {"w": rand(80, 8, 3, 3, scale=0.3), "b": rand(80)})
# A padded direct convolution after one that left its results in the shared scratch (a valid
# 3x3's grid): the padded copy must zero its own padding there, the rest rewritten each call.
case("direct_padded_after_grid", [N("Conv", ["x", "w", "b"], ["c"]), N("Conv", ["c", "v", "d"], ["y"], pads=[1, 1, 1, 1])],
     {"x": rand(1, 4, 20, 20)}, {"w": rand(6, 4, 3, 3, scale=0.3), "b": rand(6) + 2, "v": rand(7, 6, 3, 3, scale=0.3), "d": rand(7)})

# Pointwise convolutions reading one input with the same activation run as one convolution whose
# output channels are sliced back apart: a and b (Relu) merge, c (Clip) and the 3x3 d do not; b's
# slice feeds a convolution, the slices a concatenation. With a batch mixed by Softmax over axis
# 0 the batch runs whole and the siblings stay apart.
case("pointwise_siblings_merged", [N("Conv", ["x", "wa"], ["ca"]), N("Relu", ["ca"], ["a"]),
                                   N("Conv", ["x", "wb", "bb"], ["cb"]), N("Relu", ["cb"], ["b"]),
                                   N("Conv", ["x", "wc", "bc"], ["cc"]), N("Clip", ["cc", "lo", "hi"], ["c"]),
                                   N("Conv", ["x", "wd", "bd"], ["d"], pads=[1, 1, 1, 1]),
                                   N("Conv", ["b", "we", "be"], ["e"], pads=[1, 1, 1, 1]),
                                   N("Concat", ["a", "e", "c", "d"], ["y"], axis=1)],
     {"x": rand(1, 8, 9, 9)}, {"wa": rand(5, 8, 1, 1, scale=0.3), "wb": rand(7, 8, 1, 1, scale=0.3), "bb": rand(7),
                               "wc": rand(4, 8, 1, 1, scale=0.3), "bc": rand(4), "lo": np.array(0, np.float32), "hi": np.array(0.5, np.float32),
                               "wd": rand(3, 8, 3, 3, scale=0.3), "bd": rand(3), "we": rand(6, 7, 3, 3, scale=0.3), "be": rand(6)})
case("pointwise_siblings_batch_softmax", [N("Conv", ["x", "wa", "ba"], ["ca"]), N("Relu", ["ca"], ["a"]),
                                          N("Conv", ["x", "wb", "bb"], ["cb"]), N("Relu", ["cb"], ["b"]),
                                          N("Concat", ["b", "a"], ["s"], axis=1), N("Softmax", ["s"], ["y"], axis=0)],
     {"x": rand(2, 6, 5, 5)}, {"wa": rand(3, 6, 1, 1, scale=0.5), "ba": rand(3), "wb": rand(4, 6, 1, 1, scale=0.5), "bb": rand(4)})

# Concat inputs computed in place: p, u and the nested inner Concat (q, r) are written straight
# into the outer Concat's output, the graph input x and the repeated q (already part of inner) are
# copied; q is read again after the Concat, and inner is a graph output inside the outer one. t,
# computed between p and the Concat and freed before it, must not take the place p was written to.
case("concat_in_place", [N("Conv", ["x", "wp", "bp"], ["cp"]), N("Relu", ["cp"], ["p"]),
                         N("Conv", ["x", "wq", "bq"], ["q"], pads=[1, 1, 1, 1]),
                         N("MaxPool", ["x"], ["r"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                         N("Concat", ["q", "r"], ["inner"], axis=1),
                         N("Conv", ["x", "wt", "bt"], ["t"], pads=[1, 1, 1, 1]),
                         N("Conv", ["t", "wu", "bu"], ["u"]),
                         N("Concat", ["p", "inner", "x", "q", "u"], ["outer"], axis=1),
                         N("Conv", ["q", "ws", "bs"], ["s"], pads=[1, 1, 1, 1]),
                         N("Conv", ["outer", "wy", "by"], ["y"])],
     {"x": rand(1, 4, 7, 7)}, {"wp": rand(5, 4, 1, 1, scale=0.5), "bp": rand(5), "wq": rand(3, 4, 3, 3, scale=0.3), "bq": rand(3),
                               "wt": rand(24, 4, 3, 3, scale=0.3), "bt": rand(24), "wu": rand(2, 24, 1, 1, scale=0.3), "bu": rand(2),
                               "ws": rand(2, 3, 3, 3, scale=0.3), "bs": rand(2), "wy": rand(6, 21, 1, 1, scale=0.3), "by": rand(6)},
     outputs=["y", "s", "inner"])

# Same-size average pooling over rows at least 8 wide: combined rows padded either side, then
# vectors along each row whose last ends at the row's end (8 wide: one vector a row).
case("avgpool_same_asymmetric_exclude_pad_large", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 5], pads=[0, 1, 2, 3])], {"x": wave})
case("avgpool_same_width8", [N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
     {"x": rand(1, 3, 6, 8)})
# The padding either side of each combined row is written for every plane: a maximum over
# negative values (a 0 left there would win), a sum after a convolution left its data in scratch.
case("maxpool_same_negative_wide", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
     {"x": -np.abs(rand(1, 2, 6, 11)) - 0.5})
case("avgpool_same_after_convolution", [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                                        N("AveragePool", ["c"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
     {"x": rand(1, 8, 12, 12)}, {"w": rand(4, 8, 3, 3, scale=0.3), "b": rand(4) + 3})

# A same-size AveragePool read only by a narrowing pointwise convolution runs after it, taking
# its bias and activation: include_pad with bias and Relu, exclude_pad (asymmetric) with Clip and
# no bias; the two moved convolutions then read x with no activation and merge as siblings.
case("avgpool_then_pointwise_swapped", [N("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
                                        N("Conv", ["a", "w", "b"], ["c"]), N("Relu", ["c"], ["y"]),
                                        N("AveragePool", ["x"], ["d"], kernel_shape=[3, 5], pads=[0, 1, 2, 3]),
                                        N("Conv", ["d", "v"], ["e"]), N("Clip", ["e", "lo", "hi"], ["z"])],
     {"x": rand(1, 12, 9, 10)}, {"w": rand(5, 12, 1, 1, scale=0.4), "b": rand(5), "v": rand(4, 12, 1, 1, scale=0.4),
                                 "lo": np.array(-0.2, np.float32), "hi": np.array(0.3, np.float32)},
     outputs=["y", "z"])
# Kept as they are: a widening convolution, a stride-2 pool, a pool also read as an output.
case("avgpool_then_pointwise_kept", [N("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                                     N("Conv", ["a", "w"], ["y"]),
                                     N("AveragePool", ["x"], ["b"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                     N("Conv", ["b", "v"], ["z"]),
                                     N("AveragePool", ["x"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
                                     N("Conv", ["c", "u"], ["t"])],
     {"x": rand(1, 4, 8, 9)}, {"w": rand(6, 4, 1, 1), "v": rand(2, 4, 1, 1), "u": rand(2, 4, 1, 1)}, outputs=["y", "z", "t", "c"])
# Direct convolutions whose padded rows share their padding columns (width + max(left, right)
# a row, min(left, right) zeros after the last): asymmetric pads either way round, and a 5x5
# whose last row's last taps read the trailing zeros, the input's values well away from zero.
case("direct_shared_padding_asymmetric", [N("Conv", ["x", "w", "b"], ["c"], pads=[0, 1, 2, 3]),
                                          N("Conv", ["x", "v"], ["d"], pads=[1, 3, 1, 0], kernel_shape=[3, 4]),
                                          N("Add", ["c", "d"], ["y"])],
     {"x": rand(1, 5, 11, 40) + 2}, {"w": rand(7, 5, 3, 5, scale=0.3), "b": rand(7), "v": rand(7, 5, 3, 4, scale=0.3)})
case("direct_shared_padding_5x5", [N("Conv", ["x", "w", "b"], ["y"], pads=[2, 2, 2, 2])],
     {"x": rand(1, 3, 10, 40) + 2}, {"w": rand(8, 3, 5, 5, scale=0.3), "b": rand(8)})



def parallel_branches():
    """Branches summed that merge into one convolution at load, and one pair that does not."""
    rng = np.random.default_rng(43)  # a generator of its own: the cases after it keep their values

    def r(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {}

    def conv(name, x, shape, **attributes):
        weights[f"{name}_w"], weights[f"{name}_b"] = r(*shape), r(shape[0])
        return N("Conv", [x, f"{name}_w", f"{name}_b"], [name], **attributes)

    def bn(name, x, channels):
        weights.update({f"{name}_g": r(channels) + 1, f"{name}_beta": r(channels), f"{name}_m": r(channels),
                        f"{name}_v": np.abs(r(channels)) + 0.5})
        return N("BatchNormalization", [x, f"{name}_g", f"{name}_beta", f"{name}_m", f"{name}_v"], [name], epsilon=1e-3)

    nodes = [
        # RepVGG, stride 1: 3x3 + 1x1 + a batch-normalised identity, then Relu.
        conv("a3", "x", (8, 8, 3, 3), pads=[1, 1, 1, 1]), conv("a1", "x", (8, 8, 1, 1)), bn("an", "x", 8),
        N("Add", ["a1", "a3"], ["as"]), N("Add", ["as", "an"], ["at"]), N("Relu", ["at"], ["ra"]),
        # RepVGG, stride 2 (no identity).
        conv("b3", "ra", (8, 8, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2]), conv("b1", "ra", (8, 8, 1, 1), strides=[2, 2]),
        N("Add", ["b3", "b1"], ["bs"]), N("Relu", ["bs"], ["rb"]),
        # MobileOne, depthwise: two 3x3 branches, a 1x1 and a batch-normalised identity.
        conv("c3", "rb", (8, 1, 3, 3), pads=[1, 1, 1, 1], group=8), conv("d3", "rb", (8, 1, 3, 3), pads=[1, 1, 1, 1], group=8),
        conv("c1", "rb", (8, 1, 1, 1), group=8), bn("cn", "rb", 8),
        N("Add", ["c3", "d3"], ["cs"]), N("Add", ["cs", "c1"], ["ct"]), N("Add", ["cn", "ct"], ["cu"]), N("Relu", ["cu"], ["rc"]),
        # FastViT's RepMixer: x + γ·((BN(x) + dw3x3(x)) − BN'(x)).
        bn("mn", "rc", 8), conv("m3", "rc", (8, 1, 3, 3), pads=[1, 1, 1, 1], group=8), bn("nn", "rc", 8),
        N("Add", ["mn", "m3"], ["mm"]), N("Sub", ["mm", "nn"], ["md"]), N("Mul", ["md", "gamma"], ["mg"]), N("Add", ["rc", "mg"], ["rm"]),
        # ACNet's asymmetric 1x3 and 3x1 beside a 3x3, two groups, and the plain identity.
        conv("e3", "rm", (8, 4, 3, 3), pads=[1, 1, 1, 1], group=2), conv("eh", "rm", (8, 4, 1, 3), pads=[0, 1, 0, 1], group=2),
        conv("ev", "rm", (8, 4, 3, 1), pads=[1, 0, 1, 0], group=2),
        N("Add", ["e3", "eh"], ["es"]), N("Add", ["es", "ev"], ["et"]), N("Add", ["et", "rm"], ["eu"]),
        # Not merged: a dilated 3x3 beside a 1x1.
        conv("f3", "eu", (8, 8, 3, 3), pads=[2, 2, 2, 2], dilations=[2, 2]), conv("f1", "eu", (8, 8, 1, 1)),
        N("Add", ["f3", "f1"], ["y"]),
    ]
    weights["gamma"] = r(8, 1, 1)
    case("parallel_branches", nodes, {"x": r(2, 8, 10, 9, scale=1)}, weights)


parallel_branches()


def linear_batchnorm():
    """LeViT's Linear + BatchNorm1d: MatMul → Flatten → BatchNormalization → Reshape to the MatMul's shape; Gemm → BatchNormalization
    (weights transposed, and not with a bias); and a BatchNormalization over the tokens of a 3-D MatMul's
    output (channels on axis 1: not the columns, so not folded)."""
    rng = np.random.default_rng(47)  # a generator of its own: the cases after it keep their values

    def r(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {"w": r(12, 16), "v": r(12, 16), "c": r(16), "u": r(12, 16), "t": r(5, 7)}
    nodes = [N("MatMul", ["x", "w"], ["m"]), N("Flatten", ["m"], ["f"], axis=2), N("BatchNormalization", ["f", "g", "b1", "m1", "v1"], ["n"]),
             N("Shape", ["m"], ["shape"]), N("Reshape", ["n", "shape"], ["y"]),  # reshape_as: Shape reads the MatMul's output
             N("Gemm", ["n", "v"], ["h"], transB=1), N("BatchNormalization", ["h", "g2", "b2", "m2", "v2"], ["hn"]),
             N("Gemm", ["hn", "u", "c"], ["k"]), N("BatchNormalization", ["k", "g3", "b3", "m3", "v3"], ["z"]),
             N("Transpose", ["x"], ["xt"], perm=[0, 2, 1]), N("MatMul", ["xt", "t"], ["q"]),
             N("BatchNormalization", ["q", "g4", "b4", "m4", "v4"], ["w4"])]
    for suffix, channels in (("1", 16), ("2", 12), ("3", 16), ("4", 12)):
        weights.update({f"g{suffix}" if suffix != "1" else "g": r(channels, scale=1) + 1, f"b{suffix}": r(channels), f"m{suffix}": r(channels),
                        f"v{suffix}": np.abs(r(channels)) + 0.5})
    case("linear_batchnorm", nodes, {"x": r(2, 5, 12, scale=1)}, weights, outputs=["y", "z", "w4"])


linear_batchnorm()

# Chains of pointwise and depthwise convolutions run on channel-blocked data (NCHW8c) in the AVX2
# build, moved in and out of blocks where a chain starts and ends. An MBConv block with its
# residual (the graph input moved into blocks once, for the first convolution and the Add), a
# 5x5 depthwise over a 7x7 plane (from padded copies), a stride-2 one with HardSwish after, a
# last pointwise of 3 blocks (one without a pair), batch 2.
RELU6 = {"lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
case("blocked_mbconv_residual_batch2", [
    N("Conv", ["x", "w1", "b1"], ["e"]), N("Clip", ["e", "lo", "hi"], ["e6"]),
    N("Conv", ["e6", "wd", "bd"], ["d"], group=48, pads=[2, 2, 2, 2]), N("Clip", ["d", "lo", "hi"], ["d6"]),
    N("Conv", ["d6", "w2", "b2"], ["p"]), N("Add", ["x", "p"], ["r"]),
    N("Conv", ["r", "ws"], ["s"], group=16, strides=[2, 2], pads=[1, 1, 1, 1]), N("HardSwish", ["s"], ["sh"]),
    N("Conv", ["sh", "w3", "b3"], ["y"]),
], {"x": rand(2, 16, 7, 7)}, {
    "w1": rand(48, 16, 1, 1, scale=0.3), "b1": rand(48), "wd": rand(48, 1, 5, 5, scale=0.3), "bd": rand(48),
    "w2": rand(16, 48, 1, 1, scale=0.2), "b2": rand(16), "ws": rand(16, 1, 3, 3, scale=0.5),
    "w3": rand(24, 16, 1, 1, scale=0.3), "b3": rand(24), **RELU6})
# A stem (3 channels into one block, 3x3/2 SAME_UPPER) over a plane of 9 positions, which tiles of
# 6 and 5 cannot cover (the last tile overlaps the one before), into a depthwise and a pointwise
# of one block; planes of 7 positions (one tile and an overlapping one) in a pair of blocks.
case("blocked_stem_overlapping_tiles", [
    N("Conv", ["x", "w0", "b0"], ["c"], strides=[2, 2], auto_pad="SAME_UPPER"), N("Relu", ["c"], ["cr"]),
    N("Conv", ["cr", "wd"], ["d"], group=8, pads=[1, 1, 1, 1]),
    N("Conv", ["d", "w1", "b1"], ["y"]),
], {"x": rand(1, 3, 6, 6)}, {"w0": rand(8, 3, 3, 3, scale=0.4), "b0": rand(8), "wd": rand(8, 1, 3, 3, scale=0.5),
                             "w1": rand(8, 8, 1, 1, scale=0.4), "b1": rand(8)})
case("blocked_plane7_pair", [N("Conv", ["x", "w1"], ["p"]), N("Relu", ["p"], ["pr"]), N("Conv", ["pr", "w2", "b2"], ["y"])],
     {"x": rand(1, 8, 1, 7)}, {"w1": rand(16, 8, 1, 1, scale=0.4), "w2": rand(16, 16, 1, 1, scale=0.3), "b2": rand(16)})
# A chain member whose plane is too small for blocked tiles (2x2): it runs on NCHW, the values
# moved out of blocks before it and back after; the depthwise between reads in place.
case("blocked_chain_small_plane", [
    N("Conv", ["x", "w1"], ["p"]), N("Conv", ["p", "wd", "bd"], ["d"], group=16, pads=[1, 1, 1, 1], dilations=[1, 1]),
    N("Conv", ["d", "w2"], ["y"]),
], {"x": rand(1, 8, 2, 2)}, {"w1": rand(16, 8, 1, 1, scale=0.4), "wd": rand(16, 1, 3, 3, scale=0.5), "bd": rand(16),
                             "w2": rand(8, 16, 1, 1, scale=0.3)})


# Global pooling reads channel blocks as they are (its output is the same in either layout): a
# chain's last value pooled both ways, batch 2.
case("blocked_global_pools_batch2", [
    N("Conv", ["x", "w1"], ["p"]), N("Conv", ["p", "wd", "bd"], ["d"], group=16, pads=[1, 1, 1, 1]),
    N("GlobalAveragePool", ["d"], ["mean"]), N("GlobalMaxPool", ["d"], ["max"]),
], {"x": rand(2, 8, 5, 5)}, {"w1": rand(16, 8, 1, 1, scale=0.4), "wd": rand(16, 1, 3, 3, scale=0.5), "bd": rand(16)},
     outputs=["mean", "max"])


# Convolutions of any window between channel blocks: a 3x3 into 3 blocks (a pair and a lone one)
# with Relu, 1x5 and 5x1, then a dilated 3x3 at stride 2 with asymmetric pads.
case("blocked_windows_chain", [
    N("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), N("Relu", ["c1"], ["r1"]),
    N("Conv", ["r1", "w2"], ["c2"], kernel_shape=[1, 5], pads=[0, 2, 0, 2]),
    N("Conv", ["c2", "w3", "b3"], ["c3"], kernel_shape=[5, 1], pads=[2, 0, 2, 0]),
    N("Conv", ["c3", "w4"], ["y"], kernel_shape=[3, 3], strides=[2, 2], dilations=[2, 2], pads=[2, 1, 1, 2]),
], {"x": rand(1, 8, 7, 9)}, {"w1": rand(24, 8, 3, 3, scale=0.3), "b1": rand(24), "w2": rand(8, 24, 1, 5, scale=0.2),
                            "w3": rand(16, 8, 5, 1, scale=0.3), "b3": rand(16), "w4": rand(8, 16, 3, 3, scale=0.2)})


# Merged siblings over a batch of 2, which runs image by image with the merge (whole blocks of
# channels: in the AVX2 build the merge, its slices and the Concat run in channel blocks).
case("pointwise_siblings_batch2", [N("Conv", ["x", "wa", "ba"], ["ca"]), N("Relu", ["ca"], ["a"]),
                                   N("Conv", ["x", "wb"], ["cb"]), N("Relu", ["cb"], ["b"]),
                                   N("Concat", ["b", "a"], ["y"], axis=1)],
     {"x": rand(2, 8, 5, 5)}, {"wa": rand(16, 8, 1, 1, scale=0.3), "ba": rand(16), "wb": rand(8, 8, 1, 1, scale=0.3)})


# Exporters' shape computations, folded at load, and tensor plumbing at run time.
I64 = lambda *v: np.array(v, np.int64)
INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
# torch.onnx.export of F.pad / nn.ZeroPad2d (EfficientNet's Conv2dStaticSamePadding): the pads
# list through Size, ConstantOfShape, Concat, Reshape, a reversing Slice and Transpose.
case("torch_static_padding_conv", [
    N("Constant", [], ["pad"], value=numpy_helper.from_array(I64(0, 1, 0, 1))),
    N("Shape", ["pad"], ["pad_shape"]),
    N("Gather", ["pad_shape", "zero"], ["pad_len"], axis=0),
    N("Shape", ["x"], ["x_shape"]),
    N("Size", ["x_shape"], ["rank"]),
    N("Mul", ["rank", "two"], ["rank2"]),
    N("Sub", ["rank2", "pad_len"], ["extension"]),
    N("Reshape", ["extension", "one_dim"], ["extension1"]),
    N("ConstantOfShape", ["extension1"], ["zeros"], value=numpy_helper.from_array(I64(0))),
    N("Concat", ["pad", "zeros"], ["pairs_flat"], axis=0),
    N("Reshape", ["pairs_flat", "pairs_shape"], ["pairs"]),
    N("Slice", ["pairs", "minus_one", "flip_end", "zero1", "minus_one"], ["flipped"]),
    N("Transpose", ["flipped"], ["by_side"], perm=[1, 0]),
    N("Reshape", ["by_side", "minus_one"], ["pads_any"]),
    N("Cast", ["pads_any"], ["pads"], to=TensorProto.INT64),
    N("Pad", ["x", "pads", "pad_value"], ["padded"], mode="constant"),
    N("Conv", ["padded", "w", "b"], ["y"], strides=[2, 2]),
], {"x": rand(1, 3, 8, 8)}, {"zero": np.array(0, np.int64), "two": np.array(2, np.int64), "one_dim": I64(1),
                            "pairs_shape": I64(-1, 2), "minus_one": I64(-1), "flip_end": I64(-INT64_MAX), "zero1": I64(0),
                            "pad_value": np.array(0, np.float32), "w": rand(4, 3, 3, 3, scale=0.3), "b": rand(4)}, opset=13)
# A flatten whose target shape is computed: batch kept, the rest multiplied out (ReduceProd of a
# Slice to INT64_MAX), a -1 turned into 1 by Where(Equal), through int32 and back.
case("shape_where_reduce_flatten", [
    N("Shape", ["x"], ["s"]),
    N("Slice", ["s", "zero1", "one1"], ["batch"]),
    N("Slice", ["s", "one1", "end_max"], ["rest"]),
    N("ReduceProd", ["rest"], ["features"], keepdims=1),
    N("Concat", ["batch", "features"], ["target"], axis=0),
    N("Equal", ["target", "minus_one"], ["is_unknown"]),
    N("Where", ["is_unknown", "one1", "target"], ["known"]),
    N("Cast", ["known"], ["known32"], to=TensorProto.INT32),
    N("Cast", ["known32"], ["known64"], to=TensorProto.INT64),
    N("Reshape", ["x", "known64"], ["flat"]),
    N("Gemm", ["flat", "w"], ["y"], transB=1),
], {"x": rand(2, 3, 4, 4)}, {"zero1": I64(0), "one1": I64(1), "end_max": I64(INT64_MAX), "minus_one": I64(-1),
                            "w": rand(5, 48, scale=0.2)}, opset=13)
# Integer arithmetic of every kind: Div, Mod, Min, Max, Neg, Abs, Not/And, Range, Tile on shapes.
case("shape_integer_arithmetic", [
    N("Shape", ["x"], ["s"]),                                   # [1, 6, 4, 10]
    N("Div", ["s", "two"], ["half"]),                           # [0, 3, 2, 5]
    N("Mod", ["s", "minus_three"], ["mod"]),                    # Python sign: [-2, 0, -2, -2]
    N("Neg", ["mod"], ["neg"]),                                 # [2, 0, 2, 2]
    N("Max", ["half", "neg", "one1"], ["biggest"]),             # [2, 3, 2, 5]
    N("Min", ["biggest", "four"], ["capped"]),                  # [2, 3, 2, 4]
    N("Abs", ["minus_four"], ["four0"]),
    N("Range", ["zero", "four0", "one0"], ["steps"]),           # [0, 1, 2, 3]
    N("Greater", ["capped", "two"], ["big"]),
    N("Not", ["big"], ["small"]),
    N("And", ["small", "small"], ["small2"]),
    N("Cast", ["small2"], ["small_i"], to=TensorProto.INT64),  # [1, 0, 1, 0]
    N("Add", ["capped", "small_i"], ["ends"]),                  # [3, 3, 3, 4]
    N("Slice", ["x", "steps", "ends", "steps"], ["y"]),          # x[0:3, 1:3, 2:3, 3:4] (axes 0 to 3)
], {"x": rand(1, 6, 4, 10)}, {"two": I64(2), "minus_three": np.array(-3, np.int64), "one1": I64(1), "four": I64(4),
                             "zero": np.array(0, np.int64), "minus_four": np.array(-4, np.int64), "one0": np.array(1, np.int64)}, opset=13)
# Mod of negative integers, with the divisor's sign (fmod 0, as Python) and the dividend's (fmod 1, as C).
case("shape_mod_tile", [
    N("Shape", ["x"], ["s"]),                                   # [1, 6, 4, 10]
    N("Sub", ["zero", "s"], ["negative"]),
    N("Mod", ["negative", "three"], ["python"]),                # [2, 0, 2, 2]
    N("Mod", ["negative", "three"], ["c"], fmod=1),             # [-1, 0, -1, -1]
    N("Neg", ["c"], ["c_positive"]),
    N("Add", ["python", "c_positive"], ["sum"]),
    N("Add", ["sum", "one"], ["repeats"]),                      # [4, 1, 4, 4]
    N("Tile", ["x", "repeats"], ["y"]),
], {"x": rand(1, 6, 4, 10)}, {"zero": np.array(0, np.int64), "three": np.array(3, np.int64), "one": np.array(1, np.int64)})
case("slice_last_axis_step2", [N("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])], {"x": rand(2, 3, 9)},
     {"starts": I64(1, 0), "ends": I64(9, 3), "axes": I64(2, 1), "steps": I64(2, 2)})
# Slices of a computed value of one image: whole channels (a run of it: an alias, no step; one a
# graph output, one read by a Relu, one by an Add of it with itself), and one that also cuts rows (a copy).
case("slice_channels_as_views", [
    N("Conv", ["x", "w"], ["c"]),
    N("Slice", ["c", "a_starts", "a_ends", "channel"], ["s1"]),
    N("Slice", ["c", "b_starts", "b_ends", "channel"], ["y2"]),
    N("Slice", ["c", "c_starts", "c_ends", "first_two"], ["s3"]),
    N("Slice", ["c", "d_starts", "d_ends", "channel_rows"], ["y4"]),
    N("Relu", ["s1"], ["y1"]),
    N("Add", ["s3", "s3"], ["y3"]),
], {"x": rand(1, 8, 5, 6)}, {"w": rand(12, 8, 1, 1, scale=0.3), "channel": I64(1), "first_two": I64(0, 1), "channel_rows": I64(1, 2),
                            "a_starts": I64(2), "a_ends": I64(7), "b_starts": I64(-4), "b_ends": I64(2**62), "c_starts": I64(0, 0),
                            "c_ends": I64(1, 3), "d_starts": I64(2, 1), "d_ends": I64(7, 4)}, outputs=["y1", "y2", "y3", "y4"])
# A scale broadcast to the input's shape by Expand of a computed shape, then multiplied.
case("expand_to_computed_shape", [
    N("Shape", ["x"], ["s"]),
    N("Expand", ["scale", "s"], ["scales"]),
    N("Mul", ["x", "scales"], ["y"]),
], {"x": rand(2, 3, 4, 5)}, {"scale": rand(3, 1, 1)})
# Tensor plumbing on run-time values.
case("slice_negative_steps_and_axes", [
    N("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
], {"x": rand(2, 5, 6, 7)}, {"starts": I64(-1, 1, INT64_MAX), "ends": I64(INT64_MIN, 6, 0), "axes": I64(-1, 2, 1),
                            "steps": I64(-2, 2, -3)})
case("pad_reflect", [N("Pad", ["x", "pads"], ["y"], mode="reflect")], {"x": rand(1, 2, 5, 6)}, {"pads": I64(0, 0, 2, 3, 0, 0, 4, 1)})
case("pad_edge_and_crop", [N("Pad", ["x", "pads"], ["y"], mode="edge")], {"x": rand(1, 2, 5, 6)}, {"pads": I64(0, 0, 3, -2, 0, 0, -1, 2)})
case("pad_wrap_axes", [N("Pad", ["x", "pads", "", "axes"], ["y"], mode="wrap")], {"x": rand(1, 2, 5, 6)},
     {"pads": I64(2, 1, 3, 4), "axes": I64(-1, 2)}, opset=19)
case("pad_constant_value", [N("Pad", ["x", "pads", "value"], ["y"])], {"x": rand(2, 3, 4)},
     {"pads": I64(0, 1, 2, 1, 0, 3), "value": np.array(-1.5, np.float32)})
case("tile", [N("Tile", ["x", "repeats"], ["y"])], {"x": rand(1, 3, 2, 4)}, {"repeats": I64(2, 1, 3, 2)})
case("expand_bidirectional", [N("Expand", ["x", "shape"], ["y"])], {"x": rand(3, 1, 5)}, {"shape": I64(2, 1, 4, 1)})
case("gather_data_axis1_2d_indices", [N("Gather", ["x", "idx"], ["y"], axis=1)], {"x": rand(2, 5, 3)}, {"idx": I64(4, -5, 2, 2).reshape(2, 2)})
# The class token of a vision transformer: x[:, 0] by a scalar Gather.
case("gather_class_token", [N("Gather", ["x", "zero"], ["t"], axis=1), N("Gemm", ["t", "w"], ["y"])],
     {"x": rand(2, 7, 6)}, {"zero": np.array(0, np.int64), "w": rand(6, 4)})
case("split_sizes_input", [N("Split", ["x", "sizes"], ["a", "b", "c"], axis=1), N("Sub", ["c", "a"], ["d"]), N("Concat", ["d", "b"], ["y"], axis=1)],
     {"x": rand(2, 7, 3)}, {"sizes": I64(2, 3, 2)})
case("split_num_outputs_uneven", [N("Split", ["x"], ["a", "b", "c"], axis=-1, num_outputs=3), N("Concat", ["c", "b", "a"], ["y"], axis=-1)],
     {"x": rand(2, 3, 8)}, opset=18)
case("split_equal_opset11", [N("Split", ["x"], ["a", "b"], axis=2), N("Mul", ["a", "b"], ["y"])], {"x": rand(1, 2, 6, 3)}, opset=11)
case("split_attribute_opset11", [N("Split", ["x"], ["a", "b"], axis=2, split=[2, 4]), N("Concat", ["b", "a"], ["y"], axis=2)],
     {"x": rand(1, 2, 6, 3)}, opset=11)
# Constants computed at load in float too: a weight cast, transposed, sliced and padded at load.
case("float_constant_chain", [
    N("Transpose", ["w"], ["wt"], perm=[1, 0]),
    N("Slice", ["wt", "zero1", "three1"], ["ws"]),
    N("Pad", ["ws", "pads"], ["wp"], mode="edge"),
    N("Abs", ["wp"], ["wa"]),
    N("MatMul", ["x", "wa"], ["y"]),
], {"x": rand(2, 4)}, {"w": rand(6, 5), "zero1": I64(0), "three1": I64(3), "pads": I64(1, 0, 0, 1)})

# Transformer and modern-CNN arithmetic at run time: LayerNormalization in both forms, GELU in
# both forms, functions of one value, Min/Max/Pow, reductions of every kind.
case("layernorm_opset17_last_axis", [N("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
     {"x": rand(2, 5, 8) * 3 + 1}, {"g": rand(8), "b": rand(8)})
case("layernorm_opset17_axis1_no_bias", [N("LayerNormalization", ["x", "g"], ["y"], axis=1, epsilon=1e-3)],
     {"x": rand(2, 3, 4, 5)}, {"g": rand(3, 4, 5)})
case("layernorm_decomposed", [
    N("ReduceMean", ["x"], ["mean"], axes=[-1]),
    N("Sub", ["x", "mean"], ["d"]),
    N("Pow", ["d", "two"], ["d2"]),
    N("ReduceMean", ["d2"], ["var"], axes=[-1]),
    N("Add", ["var", "eps"], ["ve"]),
    N("Sqrt", ["ve"], ["std"]),
    N("Div", ["d", "std"], ["n"]),
    N("Mul", ["n", "g"], ["s"]),
    N("Add", ["s", "b"], ["y"]),
], {"x": rand(1, 6, 16) * 2}, {"two": np.array(2, np.float32), "eps": np.array(1e-6, np.float32), "g": rand(16), "b": rand(16)}, opset=17)
case("gelu_erf_decomposed", [
    N("Div", ["x", "sqrt2"], ["xs"]), N("Erf", ["xs"], ["e"]), N("Add", ["e", "one"], ["e1"]),
    N("Mul", ["x", "e1"], ["m"]), N("Mul", ["m", "half"], ["y"]),
], {"x": rand(2, 3, 7) * 2}, {"sqrt2": np.array(np.sqrt(2), np.float32), "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)})
case("gelu_opset20_exact", [N("Gelu", ["x"], ["y"])], {"x": rand(2, 3, 7) * 2}, opset=20)
case("gelu_opset20_tanh", [N("Gelu", ["x"], ["y"], approximate="tanh")], {"x": rand(2, 3, 7) * 2}, opset=20)
case("conv_gelu_fused", [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("Gelu", ["c"], ["y"])],
     {"x": rand(1, 4, 6, 6)}, {"w": rand(8, 4, 3, 3, scale=0.3), "b": rand(8)}, opset=20)
case("functions_of_one_value", [
    N("Tanh", ["x"], ["t"]), N("Abs", ["x"], ["a"]), N("Add", ["a", "one"], ["a1"]), N("Log", ["a1"], ["l"]),
    N("Sqrt", ["a1"], ["s"]), N("Reciprocal", ["s"], ["r"]), N("Exp", ["t"], ["e"]), N("Neg", ["e"], ["n"]),
    N("Floor", ["x"], ["f"]), N("Ceil", ["x"], ["c"]), N("Softplus", ["x"], ["sp"]), N("Elu", ["x"], ["el"], alpha=0.7),
    N("Add", ["l", "r"], ["lr"]),
    N("Add", ["lr", "n"], ["p"]), N("Add", ["f", "c"], ["fc"]), N("Mul", ["p", "fc"], ["q"]),
    N("Add", ["sp", "el"], ["spel"]), N("Add", ["q", "spel"], ["y"]),
], {"x": rand(2, 3, 11) * 3}, {"one": np.array(1, np.float32)})
# Sin and Cos as positional encodings compute them (EdgeNeXt, XCiT), the rest of the trigonometric and
# hyperbolic family inside their domains, Sign (zeros among the values), Round (halves: to even), and
# the variadic Sum, Mean, Max and Min (tf2onnx writes Keras' AddN as Sum). A generator of its own: the
# cases after it keep their values.
case("trigonometric_sign_round", [
    N("Sin", ["x"], ["s"]), N("Cos", ["x"], ["c"]), N("Mul", ["s", "nine"], ["s9"]), N("Tan", ["s9"], ["t"]),
    N("Asin", ["s9"], ["as"]), N("Acos", ["s9"], ["ac"]), N("Atan", ["x"], ["at"]), N("Sinh", ["s"], ["sh"]),
    N("Cosh", ["c"], ["ch"]), N("Asinh", ["x"], ["ash"]), N("Abs", ["x"], ["a"]), N("Add", ["a", "one"], ["a1"]),
    N("Acosh", ["a1"], ["ach"]), N("Atanh", ["s9"], ["ath"]), N("Round", ["x"], ["r"]), N("Sign", ["r"], ["sg"]),
    N("Mean", ["s", "c", "at"], ["mn"]), N("Max", ["s", "c", "at"], ["mx"]), N("Min", ["t", "sh", "ch"], ["mi"]),
    N("Sum", ["s", "c", "t", "as", "ac", "at", "sh", "ch", "ash", "ach", "ath", "r", "sg", "mn", "mx", "mi"], ["y"]),
], {"x": np.concatenate([np.random.default_rng(41).standard_normal((2, 3, 11)).astype(np.float32) * 3, np.array([-2.5, -1.5, -0.5, 0, 0.5, 1.5, 2.5, 0.49], np.float32).reshape(2, 1, 4)
                         .repeat(3, 1).reshape(2, 3, 4)], axis=2)},
     {"one": np.array(1, np.float32), "nine": np.array(0.9, np.float32)})
# A positional encoding computed in the graph, as EdgeNeXt and XCiT write it: Sin and Cos of a Range
# of positions, expanded to the plane, then a convolution of that known value (run once at load).
case("positional_encoding_conv", [
    N("Range", ["start", "limit", "delta"], ["positions"]), N("Unsqueeze", ["positions", "zero"], ["row"]),
    N("Mul", ["frequencies", "row"], ["angles"]), N("Sin", ["angles"], ["sines"]), N("Cos", ["angles"], ["cosines"]),
    N("Concat", ["sines", "cosines"], ["encoding"], axis=0), N("Reshape", ["encoding", "plane"], ["flat"]),
    N("Expand", ["flat", "grid"], ["expanded"]), N("Conv", ["expanded", "w", "b"], ["projected"], pads=[1, 1, 1, 1]),
    N("Add", ["x", "projected"], ["y"]),
], {"x": np.random.default_rng(44).standard_normal((2, 6, 5, 7)).astype(np.float32)},
     {"start": np.array(0, np.float32), "limit": np.array(7, np.float32), "delta": np.array(1, np.float32), "zero": I64(0),
      "frequencies": np.array([[1.0], [0.3], [0.1], [0.03]], np.float32), "plane": I64(1, 8, 1, 7), "grid": I64(1, 8, 5, 7),
      "w": np.random.default_rng(45).standard_normal((6, 8, 3, 3)).astype(np.float32) * 0.3,
      "b": np.random.default_rng(46).standard_normal(6).astype(np.float32)}, opset=17)
case("min_max_pow", [
    N("Min", ["x", "hi"], ["lo_x"]), N("Max", ["lo_x", "lo"], ["clamped"]), N("Pow", ["clamped", "three"], ["cubed"]),
    N("Pow", ["x", "two"], ["squared"]), N("Max", ["cubed"], ["same"]), N("Add", ["same", "squared"], ["y"]),
], {"x": rand(2, 4, 5) * 2}, {"hi": rand(4, 1), "lo": np.array(-0.5, np.float32), "three": np.array(3, np.float32),
                               "two": np.array(2, np.float32)})
case("reduce_sum_max_min_prod", [
    N("ReduceSum", ["x", "axes"], ["s"], keepdims=1), N("ReduceMax", ["x"], ["m"], axes=[1, 3], keepdims=1),
    N("ReduceMin", ["x"], ["n"], axes=[1, 3], keepdims=1), N("ReduceProd", ["x"], ["p"], axes=[2], keepdims=1),
    N("Sub", ["m", "n"], ["mn"]), N("Mul", ["mn", "s"], ["mns"]), N("Mul", ["mns", "p"], ["y"]),
], {"x": rand(2, 3, 4, 5) * 0.5 + 1}, {"axes": I64(1, 3)}, opset=13)

# Transposes: NHWC <-> NCHW islands as tf2onnx writes them (tiles with ragged edges, batch 2),
# axes of one element dropped, and a permutation that is no batch of matrix transposes.
case("transpose_nhwc_island", [N("Transpose", ["x"], ["nhwc"], perm=[0, 2, 3, 1]), N("Relu", ["nhwc"], ["r"]),
                               N("Transpose", ["r"], ["y"], perm=[0, 3, 1, 2])], {"x": rand(2, 19, 7, 5)})
case("transpose_unit_axes", [N("Transpose", ["x"], ["y"], perm=[3, 1, 0, 2])], {"x": rand(1, 17, 1, 33)})
case("transpose_rank5_scrambled", [N("Transpose", ["x"], ["y"], perm=[2, 0, 4, 1, 3])], {"x": rand(2, 3, 4, 5, 6)})

# tf2onnx's NHWC islands around each convolution, with batch norm as Mul and Add, HardSwish and
# HardSigmoid as Add/Clip/Mul chains, squeeze-excitation's ReduceMean over H and W, an NHWC Pad
# and Concat: the Transposes cancel and the chains fold (LoadingTests counts the steps).
nhwc, nchw = [0, 2, 3, 1], [0, 3, 1, 2]
case("tf2onnx_nhwc_island", [
    N("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
    N("Transpose", ["c1"], ["t1"], perm=nhwc),
    N("Mul", ["t1", "scale"], ["bn_mul"]), N("Add", ["bn_mul", "shift"], ["bn"]),
    N("Add", ["bn", "three"], ["hs_add"]), N("Clip", ["hs_add", "zero", "six"], ["hs_clip"]),
    N("Mul", ["hs_clip", "sixth"], ["hs_gate"]), N("Mul", ["bn", "hs_gate"], ["hs"]),
    N("ReduceMean", ["hs"], ["se_mean"], axes=[1, 2], keepdims=1),
    N("Transpose", ["se_mean"], ["se_in"], perm=nchw),
    N("Conv", ["se_in", "w_se", "b_se"], ["se_conv"]),
    N("Transpose", ["se_conv"], ["se_t"], perm=nhwc),
    N("Add", ["se_t", "three"], ["hsig_add"]), N("Clip", ["hsig_add", "zero", "six"], ["hsig_clip"]),
    N("Div", ["hsig_clip", "six"], ["gate"]),
    N("Mul", ["hs", "gate"], ["excited"]),
    N("Pad", ["excited", "pads"], ["padded"]),
    N("Concat", ["padded", "padded"], ["joined"], axis=3),
    N("Transpose", ["joined"], ["t2"], perm=nchw),
    N("Conv", ["t2", "w2", "b2"], ["y"]),
], {"x": rand(1, 3, 9, 9)}, {"w1": rand(8, 3, 3, 3, scale=0.3), "scale": rand(8), "shift": rand(8),
                            "three": np.array(3, np.float32), "zero": np.array(0, np.float32), "six": np.array(6, np.float32),
                            "sixth": np.array(1 / 6, np.float32), "w_se": rand(8, 8, 1, 1, scale=0.3), "b_se": rand(8),
                            "pads": I64(0, 1, 1, 0, 0, 1, 1, 0), "w2": rand(4, 16, 3, 3, scale=0.2), "b2": rand(4)}, opset=13)
# EfficientNet's Swish as Sigmoid and Mul after a convolution; PyTorch's GELU through Erf after a MatMul.
case("conv_swish_chain", [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("Sigmoid", ["c"], ["s"]), N("Mul", ["s", "c"], ["y"])],
     {"x": rand(1, 4, 6, 6)}, {"w": rand(8, 4, 3, 3, scale=0.3), "b": rand(8)})
case("matmul_gelu_erf_chain", [
    N("MatMul", ["x", "w"], ["h"]), N("Div", ["h", "sqrt2"], ["hs"]), N("Erf", ["hs"], ["e"]), N("Add", ["e", "one"], ["e1"]),
    N("Mul", ["h", "e1"], ["m"]), N("Mul", ["m", "half"], ["y"]),
], {"x": rand(2, 5, 8)}, {"w": rand(8, 12, scale=0.4), "sqrt2": np.array(np.sqrt(2), np.float32),
                           "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)})

# A transformer's products: tokens by weights (one product, cut into bands of rows over threads) and
# attention's batched heads with a broadcast batch axis.
case("matmul_tokens_bands", [N("MatMul", ["x", "w"], ["y"])], {"x": rand(1, 45, 24)}, {"w": rand(24, 20, scale=0.3)})
case("matmul_heads_broadcast", [N("MatMul", ["x", "w"], ["y"])], {"x": rand(2, 3, 37, 8)}, {"w": rand(1, 3, 8, 37, scale=0.3)})

# ConvNeXt's LayerNorm over channels between Transposes, as the opset 17 operator and as
# torch.onnx.export's decomposed chain before opset 17 (both become one LayerNorm over the channel
# axis of the NCHW value); PyTorch dynamo's GELU after a Linear layer; Softmax rows longer than a vector.
case("layernorm_channels_between_transposes", [
    N("Transpose", ["x"], ["t"], perm=nhwc), N("LayerNormalization", ["t", "g", "b"], ["n"], axis=-1, epsilon=1e-6),
    N("Transpose", ["n"], ["y"], perm=nchw),
], {"x": rand(2, 12, 5, 7) * 2 + 0.5}, {"g": rand(12), "b": rand(12)})
case("layernorm_torch_decomposed_channels", [
    N("Transpose", ["x"], ["t"], perm=nhwc),
    N("ReduceMean", ["t"], ["mean"], axes=[-1]), N("Sub", ["t", "mean"], ["d"]), N("Pow", ["d", "two"], ["d2"]),
    N("ReduceMean", ["d2"], ["var"], axes=[-1]), N("Add", ["var", "eps"], ["ve"]), N("Sqrt", ["ve"], ["std"]),
    N("Div", ["d", "std"], ["n"]), N("Mul", ["n", "g"], ["s"]), N("Add", ["s", "b"], ["a"]),
    N("Transpose", ["a"], ["y"], perm=nchw),
], {"x": rand(1, 16, 6, 9) * 3}, {"two": np.array(2, np.float32), "eps": np.array(1e-6, np.float32), "g": rand(16), "b": rand(16)},
     opset=13)
case("linear_gelu_dynamo_chain", [
    N("MatMul", ["x", "w"], ["h0"]), N("Add", ["h0", "bias"], ["h"]), N("Div", ["h", "sqrt2"], ["hs"]), N("Erf", ["hs"], ["e"]),
    N("Add", ["e", "one"], ["e1"]), N("Mul", ["half", "e1"], ["g"]), N("Mul", ["h", "g"], ["y"]),
], {"x": rand(1, 9, 6)}, {"w": rand(6, 10, scale=0.5), "bias": rand(10), "sqrt2": np.array(np.sqrt(2), np.float32),
                           "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)}, opset=18)
case("softmax_long_rows", [N("Softmax", ["x"], ["y"], axis=-1)], {"x": rand(3, 4, 37) * 4})

# One value per leading index broadcast over the rest (squeeze-excitation's gate), on either side.
case("planes_broadcast_either_side", [N("Sub", ["gate", "x"], ["d"]), N("Div", ["d", "scale"], ["y"])],
     {"x": rand(2, 3, 4, 5)}, {"gate": rand(2, 3, 1, 1), "scale": rand(3, 1, 1) + 3})

# tf2onnx's approximate GELU of Keras: (0.5 · x) · (1 + Tanh(√(2/π) · (x + 0.044715 · x³))).
case("tf2onnx_tanh_gelu_chain", [
    N("MatMul", ["x", "w"], ["h"]), N("Mul", ["half", "h"], ["hh"]), N("Pow", ["h", "three"], ["cube"]),
    N("Mul", ["c1", "cube"], ["cc"]), N("Add", ["h", "cc"], ["inner"]), N("Mul", ["c2", "inner"], ["scaled"]),
    N("Tanh", ["scaled"], ["t"]), N("Add", ["one", "t"], ["t1"]), N("Mul", ["hh", "t1"], ["y"]),
], {"x": rand(1, 7, 6)}, {"w": rand(6, 12, scale=0.6), "half": np.array(0.5, np.float32), "three": np.array(3, np.float32),
                           "c1": np.array(0.044715, np.float32), "c2": np.array(0.7978846, np.float32), "one": np.array(1, np.float32)})

# Negative pads on one side with wrap or reflect on the other: the cropped extent is what pads.
case("pad_wrap_crop_then_pad", [N("Pad", ["x", "pads"], ["y"], mode="wrap")], {"x": rand(1, 2, 5, 6)},
     {"pads": I64(0, 0, -1, 2, 0, 0, 1, -2)}, opset=19)
case("pad_reflect_crop_then_pad", [N("Pad", ["x", "pads"], ["y"], mode="reflect")], {"x": rand(1, 2, 6, 7)},
     {"pads": I64(0, 0, -2, 2, 0, 0, 2, -3)})
# A Conv whose bias comes through an Identity (PyTorch's shared parameters), scaled after: the
# scale must not be folded into the weights alone.
case("conv_identity_bias_scaled", [N("Identity", ["b"], ["b2"]), N("Conv", ["x", "w", "b2"], ["c"]), N("Mul", ["c", "two"], ["y"])],
     {"x": rand(1, 3, 5, 5)}, {"w": rand(4, 3, 3, 3, scale=0.3), "b": rand(4), "two": np.array([[[2.0]]], np.float32)})
# tf2onnx's LayerNorm of Keras: GlobalAveragePool moments, Reciprocal(Sqrt), x·g + (−mean)·g.
case("tf2onnx_moments_layernorm", [
    N("GlobalAveragePool", ["x"], ["m"]), N("Neg", ["m"], ["nm"]), N("Sub", ["x", "m"], ["d"]), N("Mul", ["d", "d"], ["d2"]),
    N("GlobalAveragePool", ["d2"], ["v"]), N("Add", ["v", "eps"], ["ve"]), N("Sqrt", ["ve"], ["s"]), N("Reciprocal", ["s"], ["r"]),
    N("Mul", ["r", "gamma"], ["g"]), N("Mul", ["x", "g"], ["xg"]), N("Mul", ["nm", "g"], ["mg"]), N("Add", ["xg", "mg"], ["y"]),
], {"x": rand(1, 9, 16) * 2 + 1}, {"eps": np.array(1e-6, np.float32), "gamma": rand(1, 1, 16)})

# HGNetV2's learnable affine block after each activation: s·relu(z) + b with s > 0, s < 0 (the
# constant first), an Add alone, a Mul alone; then a Relu read twice, whose Mul stays as it is.
def relu_affine():
    rng = np.random.default_rng(52)  # a generator of its own: the cases after it keep their values
    w = {f"w{i}": (rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32) for i in range(5)}
    w.update({f"b{i}": (rng.standard_normal(8) * 0.3).astype(np.float32) for i in range(5)})
    w.update({"s0": np.array([0.7], np.float32), "c0": np.array([-0.3], np.float32), "s1": np.array(-1.3, np.float32),
              "c1": np.array([0.5], np.float32), "c2": np.array(0.2, np.float32), "s3": np.array([2.0], np.float32),
              "s4": np.array([0.6], np.float32)})
    conv = lambda i, x: N("Conv", [x, f"w{i}", f"b{i}"], [f"z{i}"], pads=[1, 1, 1, 1])
    case("relu_affine_after_conv", [
        conv(0, "x"), N("Relu", ["z0"], ["r0"]), N("Mul", ["r0", "s0"], ["m0"]), N("Add", ["m0", "c0"], ["a0"]),
        conv(1, "a0"), N("Relu", ["z1"], ["r1"]), N("Mul", ["s1", "r1"], ["m1"]), N("Add", ["c1", "m1"], ["a1"]),
        conv(2, "a1"), N("Relu", ["z2"], ["r2"]), N("Add", ["r2", "c2"], ["a2"]),
        conv(3, "a2"), N("Relu", ["z3"], ["r3"]), N("Mul", ["r3", "s3"], ["a3"]),
        conv(4, "a3"), N("Relu", ["z4"], ["r4"]), N("Mul", ["r4", "s4"], ["m4"]), N("Add", ["m4", "r4"], ["y"]),
    ], {"x": rng.standard_normal((2, 8, 6, 7)).astype(np.float32)}, w)


relu_affine()

# StarNet's star: the product of two pointwise branches (one through ReLU6) stays in channel
# blocks between them and the pointwise layer after; a Mul that broadcasts does not.
case("blocked_star_product_batch2", [
    N("Conv", ["x", "w1", "b1"], ["a"]), N("Clip", ["a", "lo", "hi"], ["a6"]), N("Conv", ["x", "w2", "b2"], ["b"]),
    N("Mul", ["a6", "b"], ["star"]), N("Conv", ["star", "w3", "b3"], ["c"]), N("Add", ["c", "x"], ["s"]),
    N("GlobalAveragePool", ["s"], ["p"]), N("Mul", ["s", "p"], ["y"]),
], {"x": np.random.default_rng(48).standard_normal((2, 16, 6, 7)).astype(np.float32)}, {
    "w1": np.random.default_rng(49).standard_normal((32, 16, 1, 1)).astype(np.float32) * 0.3,
    "w2": np.random.default_rng(50).standard_normal((32, 16, 1, 1)).astype(np.float32) * 0.3,
    "w3": np.random.default_rng(51).standard_normal((16, 32, 1, 1)).astype(np.float32) * 0.3,
    "b1": np.zeros(32, np.float32) + 0.1, "b2": np.zeros(32, np.float32) - 0.1, "b3": np.zeros(16, np.float32),
    "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)})

# ResNet's bottleneck: the Relu after the residual Add runs in the last convolution's epilogue
# (sums from bias + residual, then the activation); then a 1x1 beside its own input, summed, a
# Clip with bounds as inputs after (one convolution with the identity in its weights); the values
# stay in channel blocks from the first convolution to the last.
case("blocked_bottleneck_residual_relu_batch2", [
    N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]),
    N("Conv", ["ar", "w2", "b2"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["cr"]),
    N("Conv", ["cr", "w3", "b3"], ["e"]), N("Add", ["e", "x"], ["s"]), N("Relu", ["s"], ["sr"]),
    N("Conv", ["sr", "w4", "b4"], ["f"]), N("Add", ["sr", "f"], ["t"]), N("Clip", ["t", "lo", "hi"], ["t6"]),
    N("Conv", ["t6", "w5", "b5"], ["y"]),
], {"x": rand(2, 16, 8, 8)}, {
    "w1": rand(16, 16, 1, 1, scale=0.3), "b1": rand(16), "w2": rand(16, 16, 3, 3, scale=0.1), "b2": rand(16),
    "w3": rand(16, 16, 1, 1, scale=0.3), "b3": rand(16), "w4": rand(16, 16, 1, 1, scale=0.3), "b4": rand(16),
    "w5": rand(8, 16, 1, 1, scale=0.3), "b5": rand(8), **RELU6})

# DenseNet's layers: a per-channel Mul (tf2onnx's batch norm) and a Relu between convolutions in
# channel blocks run over the blocks, the Relu in the Mul's pass; the concatenation grows by a
# block; the model's output is a Relu of blocks, moved out at the end.
case("blocked_dense_scale_relu_batch2", [
    N("Conv", ["x", "wa", "ba"], ["a"]), N("Conv", ["a", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
    N("Mul", ["c0", "s1"], ["m1"]), N("Relu", ["m1"], ["r1"]),
    N("Conv", ["r1", "w1", "b1"], ["c1"]), N("Relu", ["c1"], ["r1b"]),
    N("Conv", ["r1b", "w2"], ["c2"], pads=[1, 1, 1, 1]), N("Concat", ["c0", "c2"], ["cat"], axis=1),
    N("Mul", ["cat", "s2"], ["m2"]), N("Relu", ["m2"], ["r2"]), N("Conv", ["r2", "w3", "b3"], ["c3"]),
    N("Conv", ["c3", "w4", "b4"], ["c4"], pads=[1, 1, 1, 1]), N("Mul", ["c4", "s3"], ["m3"]), N("Relu", ["m3"], ["y"]),
], {"x": rand(2, 8, 8, 8)}, {
    "wa": rand(16, 8, 1, 1, scale=0.3), "ba": rand(16), "w0": rand(16, 16, 3, 3, scale=0.1), "b0": rand(16),
    "s1": rand(1, 16, 1, 1), "w1": rand(32, 16, 1, 1, scale=0.3), "b1": rand(32), "w2": rand(8, 32, 3, 3, scale=0.1),
    "s2": rand(1, 24, 1, 1), "w3": rand(16, 24, 1, 1, scale=0.3), "b3": rand(16), "w4": rand(16, 16, 3, 3, scale=0.1),
    "b4": rand(16), "s3": rand(1, 16, 1, 1)})

# RegNet's grouped 3x3 convolutions, a group per channel block, between pointwise ones in blocks:
# stride 1 and stride 2, a Relu after each, batch 2.
case("blocked_groups_of_8_batch2", [
    N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]),
    N("Conv", ["ar", "wg", "bg"], ["g"], group=3, pads=[1, 1, 1, 1]), N("Relu", ["g"], ["gr"]),
    N("Conv", ["gr", "w2", "b2"], ["c"]),
    N("Conv", ["c", "ws"], ["s"], group=2, strides=[2, 2], pads=[1, 1, 1, 1]), N("Relu", ["s"], ["sr"]),
    N("Conv", ["sr", "w3", "b3"], ["y"]),
], {"x": rand(2, 8, 9, 9)}, {
    "w1": rand(24, 8, 1, 1, scale=0.3), "b1": rand(24), "wg": rand(24, 8, 3, 3, scale=0.2), "bg": rand(24),
    "w2": rand(16, 24, 1, 1, scale=0.3), "b2": rand(16), "ws": rand(16, 8, 3, 3, scale=0.2),
    "w3": rand(8, 16, 1, 1, scale=0.3), "b3": rand(8)})

# Weights in a file beside the model (saved so after the cases are built, below).
OWN = np.random.default_rng(7)  # its own generator: cases added above leave it unchanged
case("external_weights_conv", [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["y"])],
     {"x": OWN.standard_normal((1, 3, 6, 6)).astype(np.float32)},
     {"w": (OWN.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32), "b": OWN.standard_normal(4).astype(np.float32)})

# The operators today's exporters write beyond the convolutional families: every Reduce, CumSum,
# InstanceNormalization and GroupNormalization, Resize in each mode, Einsum in attention's forms.
# Their own generator, so that cases added above leave these unchanged and the other way round.
MORE = np.random.default_rng(40)


def more(*shape, scale=1.0):
    return (MORE.standard_normal(shape) * scale).astype(np.float32)


r4 = more(2, 3, 4, 5)
case("reduce_l1_l2_sumsquare_opset13", [
    N("ReduceL1", ["x"], ["l1"], axes=[1], keepdims=1), N("ReduceL2", ["x"], ["l2"], axes=[2, 3], keepdims=0),
    N("ReduceSumSquare", ["x"], ["ss"], axes=[0, 2], keepdims=1), N("ReduceL2", ["x"], ["all"], keepdims=0),
], {"x": r4}, opset=13, outputs=["l1", "l2", "ss", "all"])
case("reduce_logsum_logsumexp_opset18", [
    N("Abs", ["x"], ["ax"]), N("ReduceLogSum", ["ax", "a1"], ["ls"], keepdims=0),
    N("ReduceLogSumExp", ["big", "a3"], ["lse"], keepdims=1), N("ReduceLogSumExp", ["x", "a02"], ["lse2"], keepdims=0),
], {"x": r4, "big": more(2, 3, 4, 5, scale=40)}, {"a1": I64(-3), "a3": I64(3), "a02": I64(0, 2)}, opset=18,
     outputs=["ls", "lse", "lse2"])
case("reduce_family_axes_input_opset18", [
    N("ReduceMax", ["x", "a"], ["mx"], keepdims=0), N("ReduceMin", ["x", "a"], ["mn"], keepdims=1),
    N("ReduceProd", ["x", "b"], ["pr"]), N("ReduceMean", ["x", "a"], ["me"]), N("ReduceSum", ["x", "b"], ["su"], keepdims=0),
    N("ReduceL1", ["x"], ["everything"], keepdims=0),
], {"x": r4 * 0.5 + 1}, {"a": I64(0, -2), "b": I64(3, 1)}, opset=18, outputs=["mx", "mn", "pr", "me", "su", "everything"])
case("reduce_noop_with_empty_axes_opset18", [
    N("ReduceSum", ["x", "none"], ["s"], noop_with_empty_axes=1), N("ReduceMax", ["x"], ["m"], noop_with_empty_axes=1),
    N("Add", ["s", "m"], ["y"]),
], {"x": more(2, 3, 4)}, {"none": np.zeros(0, np.int64)}, opset=18)
c3 = more(2, 5, 3)
for exclusive in (0, 1):
    for reverse in (0, 1):
        case(f"cumsum_exclusive{exclusive}_reverse{reverse}", [N("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
             {"x": c3}, {"axis": np.array(1, np.int64)}, opset=14)
case("cumsum_negative_axis_int32", [N("CumSum", ["x", "axis"], ["y"])], {"x": more(3, 4, 6)}, {"axis": np.array(-1, np.int32)}, opset=11)
case("cumsum_positional_tokens", [N("CumSum", ["ones", "axis"], ["pos"]), N("Mul", ["pos", "x"], ["y"])],
     {"x": more(1, 7, 4)}, {"ones": np.ones((1, 7, 4), np.float32), "axis": np.array(1, np.int64)}, opset=14)
case("instancenorm_4d", [N("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
     {"x": more(2, 3, 5, 4) * 2 + 1}, {"s": more(3), "b": more(3)}, opset=11)
case("instancenorm_3d", [N("InstanceNormalization", ["x", "s", "b"], ["y"])], {"x": more(2, 4, 9)}, {"s": more(4), "b": more(4)}, opset=17)
case("groupnorm_opset21_4d", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, epsilon=1e-4)],
     {"x": more(2, 6, 3, 5) + 0.5}, {"s": more(6), "b": more(6)}, opset=21)
case("groupnorm_opset21_one_group_3d", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=1)],
     {"x": more(2, 4, 7)}, {"s": more(4), "b": more(4)}, opset=21)
case("groupnorm_opset18_scale_per_group", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)],
     {"x": more(2, 6, 4, 3)}, {"s": more(3), "b": more(3)}, opset=18)
case("groupnorm_opset21_channel_groups", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4)],
     {"x": more(1, 4, 6, 6)}, {"s": more(4), "b": more(4)}, opset=21)

# Resize: each mode, rounding, coordinate transformation, scales or sizes, axes, antialias, aspect policy.
img = more(1, 2, 5, 7)
F32 = lambda *v: np.array(v, np.float32)
EMPTY = np.zeros(0, np.float32)


def resize(name, attrs, scales=None, sizes=None, roi=None, x=img, opset=19):
    inputs = ["x", "roi" if roi is not None else "", "scales" if scales is not None else ""]
    initializers = {}
    if roi is not None:
        initializers["roi"] = roi
    if scales is not None:
        initializers["scales"] = scales
    if sizes is not None:
        inputs.append("sizes")
        initializers["sizes"] = sizes
    while inputs[-1] == "":
        inputs.pop()
    case(name, [N("Resize", inputs, ["y"], **attrs)], {"x": x}, initializers, opset=opset)


for rounding, transform, scale in [("round_prefer_floor", "half_pixel", 1.7), ("round_prefer_ceil", "align_corners", 2.3),
                                   ("floor", "asymmetric", 0.65), ("ceil", "pytorch_half_pixel", 1.5),
                                   ("round_prefer_floor", "half_pixel_symmetric", 0.7), ("floor", "asymmetric", 2.0)]:
    resize(f"resize_nearest_{rounding}_{transform}_{scale}".replace(".", "_"),
           dict(mode="nearest", nearest_mode=rounding, coordinate_transformation_mode=transform), scales=F32(1, 1, scale, scale))
resize("resize_nearest_tf_half_pixel_for_nn_opset11", dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn"),
       roi=EMPTY, scales=F32(1, 1, 1.65, 0.8), opset=11)
resize("resize_nearest_default_opset13_sizes", dict(mode="nearest"), sizes=I64(1, 2, 9, 4), opset=13)
for transform in ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"]:
    resize(f"resize_linear_{transform}_up", dict(mode="linear", coordinate_transformation_mode=transform), scales=F32(1, 1, 1.9, 2.5))
    resize(f"resize_linear_{transform}_down", dict(mode="linear", coordinate_transformation_mode=transform), scales=F32(1, 1, 0.65, 0.45))
resize("resize_linear_pytorch_half_pixel_to_one", dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
       sizes=I64(1, 2, 1, 11))
resize("resize_linear_tf_crop_and_resize", dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                                                 extrapolation_value=-2.5),
       roi=F32(0, 0, -0.2, 0.1, 1, 1, 0.9, 1.3), sizes=I64(1, 2, 6, 8))
resize("resize_nearest_tf_crop_and_resize", dict(mode="nearest", coordinate_transformation_mode="tf_crop_and_resize"),
       roi=F32(0, 0, 0.1, -0.1, 1, 1, 0.8, 1.2), sizes=I64(1, 2, 4, 9))
resize("resize_cubic_half_pixel_up", dict(mode="cubic"), scales=F32(1, 1, 1.9, 2.2))
resize("resize_cubic_align_corners_a05_exclude_outside", dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1,
                                                              coordinate_transformation_mode="align_corners"), scales=F32(1, 1, 1.45, 0.7))
resize("resize_cubic_asymmetric_down", dict(mode="cubic", coordinate_transformation_mode="asymmetric"), scales=F32(1, 1, 0.85, 0.5))
resize("resize_cubic_pytorch_half_pixel_exclude_outside", dict(mode="cubic", exclude_outside=1,
                                                               coordinate_transformation_mode="pytorch_half_pixel"), sizes=I64(1, 2, 8, 3))
big = more(1, 3, 16, 19)
resize("resize_linear_antialias_down", dict(mode="linear", antialias=1), scales=F32(1, 1, 0.45, 0.3), x=big, opset=18)
resize("resize_cubic_antialias_down", dict(mode="cubic", antialias=1), scales=F32(1, 1, 0.6, 0.35), x=big, opset=18)
resize("resize_linear_antialias_up_ignored", dict(mode="linear", antialias=1), scales=F32(1, 1, 1.5, 2), opset=18)
resize("resize_axes_scales", dict(mode="linear", axes=[2, 3]), scales=F32(1.5, 0.7), opset=18)
resize("resize_axes_last_only_sizes", dict(mode="nearest", axes=[-1]), sizes=I64(12), opset=18)
resize("resize_keep_aspect_not_larger", dict(mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger"),
       sizes=I64(8, 8), x=big, opset=18)
resize("resize_keep_aspect_not_smaller", dict(mode="cubic", keep_aspect_ratio_policy="not_smaller"),
       sizes=I64(1, 3, 6, 6), x=big, opset=18)
resize("resize_linear_3d_sequence", dict(mode="linear"), scales=F32(1, 1, 2.5), x=more(2, 3, 6))
resize("resize_nearest_opset11_scales", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
       roi=EMPTY, scales=F32(1, 1, 2, 2), opset=11)
# An HRNet's upsampling: scales of 2 then an Add with the finer branch.
case("resize_upsample_add", [N("Resize", ["low", "", "scales"], ["up"], mode="nearest"), N("Add", ["up", "high"], ["y"])],
     {"low": more(2, 4, 3, 4), "high": more(2, 4, 6, 8)}, {"scales": F32(1, 1, 2, 2)}, opset=13)

# Einsum as attention and linear layers export it.
q, k = more(2, 3, 5, 4), more(2, 3, 6, 4)
case("einsum_attention_scores", [N("Einsum", ["q", "k"], ["y"], equation="bhid,bhjd->bhij")], {"q": q, "k": k}, opset=12)
case("einsum_attention_values", [N("Einsum", ["a", "v"], ["y"], equation="bhij,bhjd->bhid")], {"a": more(2, 3, 5, 6), "v": k}, opset=12)
case("einsum_batched_matmul_spaces", [N("Einsum", ["a", "b"], ["y"], equation="bij, bjk -> bik")],
     {"a": more(2, 3, 4), "b": more(2, 4, 5)}, opset=12)
case("einsum_ellipsis", [N("Einsum", ["a", "b"], ["y"], equation="...id,...jd->...ij")], {"a": more(2, 2, 3, 4), "b": more(2, 2, 5, 4)}, opset=12)
case("einsum_linear_weight", [N("Einsum", ["x", "w"], ["y"], equation="bnd,dk->bnk")], {"x": more(2, 7, 6)}, {"w": more(6, 3)}, opset=12)
case("einsum_heads_to_tokens", [N("Einsum", ["x", "w"], ["y"], equation="bnhd,hdk->bnk")], {"x": more(1, 5, 2, 3)}, {"w": more(2, 3, 4)}, opset=12)
case("einsum_transpose", [N("Einsum", ["x"], ["y"], equation="bij->bji")], {"x": more(2, 3, 4)}, opset=12)
case("einsum_implicit_output", [N("Einsum", ["a", "b"], ["y"], equation="ij,jk")], {"a": more(3, 4), "b": more(4, 2)}, opset=12)
case("einsum_sum_out", [N("Einsum", ["x"], ["y"], equation="bij->bi")], {"x": more(2, 3, 4)}, opset=12)
case("einsum_outer_and_rel_pos", [N("Einsum", ["q", "r"], ["y"], equation="bhwc,hkc->bhwk")], {"q": more(1, 4, 3, 5)}, {"r": more(4, 6, 5)}, opset=12)
# RegNetX's grouped 3x3 convolutions of 16 and 24 channels a group between pointwise ones in blocks.
case("blocked_groups_of_16_and_24_batch2", [
    N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]),
    N("Conv", ["ar", "wg", "bg"], ["g"], group=3, pads=[1, 1, 1, 1]), N("Relu", ["g"], ["gr"]),
    N("Conv", ["gr", "w2", "b2"], ["c"]),
    N("Conv", ["c", "ws"], ["s"], group=2, strides=[2, 2], pads=[1, 1, 1, 1]), N("Sigmoid", ["s"], ["ss"]),
    N("Conv", ["ss", "w3", "b3"], ["y"]),
], {"x": more(2, 8, 9, 9)}, {
    "w1": more(48, 8, 1, 1, scale=0.3), "b1": more(48), "wg": more(48, 16, 3, 3, scale=0.2), "bg": more(48),
    "w2": more(48, 48, 1, 1, scale=0.2), "b2": more(48), "ws": more(48, 24, 3, 3, scale=0.2),
    "w3": more(8, 48, 1, 1, scale=0.3), "b3": more(8)})

# EfficientNet-B0's block: SiLU after the expansion and the depthwise convolution, squeeze-excitation
# (a Mul of the scale first, as torchvision writes it), a projection with its residual; batch 2.
case("blocked_squeeze_excitation_silu_batch2", [
    N("Conv", ["x", "we", "be"], ["e"]), N("Sigmoid", ["e"], ["es"]), N("Mul", ["e", "es"], ["ea"]),
    N("Conv", ["ea", "wd", "bd"], ["d"], group=32, pads=[1, 1, 1, 1]), N("Sigmoid", ["d"], ["ds"]), N("Mul", ["d", "ds"], ["da"]),
    N("GlobalAveragePool", ["da"], ["p"]), N("Conv", ["p", "w1", "b1"], ["q"]), N("Sigmoid", ["q"], ["qs"]), N("Mul", ["q", "qs"], ["qa"]),
    N("Conv", ["qa", "w2", "b2"], ["r"]), N("Sigmoid", ["r"], ["scale"]), N("Mul", ["scale", "da"], ["excited"]),
    N("Conv", ["excited", "wp", "bp"], ["proj"]), N("Add", ["proj", "x"], ["y"]),
], {"x": more(2, 16, 10, 10)}, {
    "we": more(32, 16, 1, 1, scale=0.3), "be": more(32), "wd": more(32, 1, 3, 3, scale=0.3), "bd": more(32),
    "w1": more(8, 32, 1, 1, scale=0.3), "b1": more(8), "w2": more(32, 8, 1, 1, scale=0.3), "b2": more(32),
    "wp": more(16, 32, 1, 1, scale=0.2), "bp": more(16)})

# A Linear layer as TorchScript's exporter writes a shared bias: Add(Identity(bias), MatMul(x, W)).
case("linear_bias_through_identity", [N("MatMul", ["x", "w"], ["m"]), N("Identity", ["b"], ["bi"]), N("Add", ["bi", "m"], ["y"])],
     {"x": more(1, 7, 12)}, {"w": more(12, 5, scale=0.3), "b": more(5)}, opset=17)

# F.normalize as TorchScript exports it (Swin V2's attention): x / Expand(max(ReduceL2(x), eps), Shape(x)).
case("normalize_expand_as", [
    N("ReduceL2", ["x"], ["n"], axes=[-1], keepdims=1), N("Clip", ["n", "eps", ""], ["c"]), N("Shape", ["x"], ["s"]),
    N("Expand", ["c", "s"], ["e"]), N("Div", ["x", "e"], ["y"]),
], {"x": more(2, 3, 5, 8)}, {"eps": np.array(1e-12, np.float32)}, opset=13)

# LayerNormalization from axis 0 mixes a batch's images (run whole, not image by image); a Resize
# that shrinks one axis and grows another (the shrinking pass first).
case("layernorm_axis0_batch2", [N("LayerNormalization", ["x", "g"], ["y"], axis=0)], {"x": more(2, 4) * 3 + 1},
     {"g": np.array([1.5], np.float32)}, opset=17)
resize("resize_shrink_rows_grow_columns", dict(mode="linear"), sizes=I64(1, 2, 4, 30), x=more(1, 2, 40, 3))

# GatherND and ScatterND with indices known at load: Swin's relative position table and attention mask.
case("gathernd_relative_position_table", [N("GatherND", ["table", "idx"], ["bias"]), N("Add", ["x", "bias"], ["y"])],
     {"x": more(3, 4, 2)}, {"table": more(5, 2), "idx": np.array([[[0], [2], [4], [1]], [[3], [3], [0], [2]], [[1], [4], [2], [0]]], np.int64)},
     opset=13)
case("gathernd_element_tuples", [N("GatherND", ["x", "idx"], ["y"])], {"x": more(2, 3, 4)},
     {"idx": np.array([[0, 1, 3], [1, -1, 0], [0, 0, 0]], np.int64)}, opset=13)
case("scatternd_attention_mask", [N("ScatterND", ["zeros", "idx", "u"], ["mask"]), N("Add", ["x", "mask"], ["y"])],
     {"x": more(4, 3, 3), "u": more(2, 3, 3)}, {"zeros": np.zeros((4, 3, 3), np.float32), "idx": np.array([[1], [3]], np.int64)}, opset=13)
case("scatternd_add_reduction", [N("ScatterND", ["x", "idx", "u"], ["y"], reduction="add")], {"x": more(3, 4), "u": more(3)},
     {"idx": np.array([[0, 1], [2, 3], [0, 1]], np.int64)}, opset=16)

# Windowed attention's arithmetic as Swin writes it: a relative position bias broadcast over the
# windows, a mask over the heads, Softmax over rows of 13 (a vector and a tail); many short Softmax
# rows (shared out in runs); LayerNorm rows with a tail, with and without a bias; the heads'
# Transpose of a rank-5 qkv product.
case("attention_window_bias_mask_softmax", [N("Add", ["x", "bias"], ["biased"]), N("Add", ["biased", "mask"], ["masked"]),
                                            N("Softmax", ["masked"], ["y"], axis=-1)],
     {"x": more(1, 4, 2, 13, 13) * 3}, {"bias": more(2, 13, 13), "mask": np.where(more(4, 1, 13, 13) > 1, -100, 0).astype(np.float32)})
case("softmax_many_short_rows", [N("Softmax", ["x"], ["y"], axis=-1)], {"x": more(3000, 3) * 5})
case("layernorm_rows_with_tail", [N("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, epsilon=1e-5),
                                  N("LayerNormalization", ["n", "g2"], ["y"], axis=-2, epsilon=1e-6)],
     {"x": more(2, 5, 37) * 2 + 1}, {"g": more(37), "b": more(37), "g2": more(5, 37)})
case("transpose_qkv_heads", [N("Transpose", ["x"], ["y"], perm=[2, 0, 3, 1, 4])], {"x": more(3, 7, 3, 2, 8)})

# Products by a constant B, packed into panels of 16 columns at load: Gemm with alpha, beta and
# transB, its C one row or one value, then a Relu clamped as stored; a Gemm whose C is a whole
# matrix (sgemm as before); a MatMul of few rows, a depth over 256 (passes) and a bias and GELU
# chain after it, its 70 columns 4 panels and a tail.
case("gemm_packed_alpha_beta_transb", [N("Gemm", ["x", "w", "c"], ["g"], alpha=0.5, beta=2.0, transB=1), N("Relu", ["g"], ["y"])],
     {"x": more(5, 20)}, {"w": more(37, 20), "c": more(37)})
case("gemm_packed_one_row_c", [N("Gemm", ["x", "w", "c"], ["y"])], {"x": more(3, 12)}, {"w": more(12, 17), "c": more(1, 17)})
case("gemm_whole_c_matrix", [N("Gemm", ["x", "w", "c"], ["y"], beta=0.5)], {"x": more(4, 6)}, {"w": more(6, 9), "c": more(4, 9)})
case("matmul_packed_deep_gelu", [
    N("MatMul", ["x", "w"], ["h0"]), N("Add", ["h0", "bias"], ["h"]), N("Div", ["h", "sqrt2"], ["hs"]), N("Erf", ["hs"], ["e"]),
    N("Add", ["e", "one"], ["e1"]), N("Mul", ["half", "e1"], ["g"]), N("Mul", ["h", "g"], ["y"]),
], {"x": more(1, 7, 300)}, {"w": more(300, 70, scale=0.1), "bias": more(70), "sqrt2": np.array(np.sqrt(2), np.float32),
                            "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)}, opset=18)
# Empty products by a constant B: no depth (zeros plus the bias), no columns.
case("matmul_constant_no_depth", [N("Slice", ["x", "zero", "zero", "one"], ["empty"]), N("MatMul", ["empty", "w"], ["m"]),
                                  N("Add", ["m", "bias"], ["y"])],
     {"x": more(2, 4)}, {"zero": I64(0), "one": I64(1), "w": np.zeros((0, 3), np.float32), "bias": more(3)})
case("matmul_constant_no_columns", [N("MatMul", ["x", "w"], ["y"])], {"x": more(12, 8)}, {"w": np.zeros((8, 0), np.float32)})
# Squeeze-excitation whose channels are not whole blocks of 8 (EfficientNet-B0's squeeze to 10,
# 20, ... channels): its 1x1 convolutions of a 1x1 plane run as products of rows, one per image,
# a Relu clamped as stored and a Sigmoid after.
case("squeeze_excitation_rows_batch2", [
    N("GlobalAveragePool", ["x"], ["p"]), N("Conv", ["p", "w1", "b1"], ["q"]), N("Relu", ["q"], ["qa"]),
    N("Conv", ["qa", "w2", "b2"], ["r"]), N("Sigmoid", ["r"], ["scale"]), N("Mul", ["scale", "x"], ["y"]),
], {"x": more(2, 12, 6, 6)}, {"w1": more(5, 12, 1, 1, scale=0.5), "b1": more(5), "w2": more(12, 5, 1, 1, scale=0.5), "b2": more(12)})

def squeeze_excitation_in_blocks():
    """timm's squeeze-excitation inside a chain of convolutions on channel blocks (whole blocks of 8
    channels): a ReduceMean over the plane, its 1x1 convolutions of a 1x1 plane as products of rows
    (not unrolled into panels of 16 positions, 15 of them wasted), a HardSigmoid gate, batch 2."""
    rng = np.random.default_rng(53)  # a generator of its own: the cases after it keep their values

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    case("squeeze_excitation_in_blocks_batch2", [
        N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]),
        N("Conv", ["ar", "wd", "bd"], ["d"], group=32, pads=[1, 1, 1, 1]), N("Relu", ["d"], ["dr"]),
        N("ReduceMean", ["dr"], ["p"], axes=[2, 3], keepdims=1), N("Conv", ["p", "wr", "br"], ["q"]), N("Relu", ["q"], ["qr"]),
        N("Conv", ["qr", "we", "be"], ["r"]), N("HardSigmoid", ["r"], ["gate"], alpha=1 / 6, beta=0.5), N("Mul", ["dr", "gate"], ["s"]),
        N("Conv", ["s", "w2", "b2"], ["y"]),
    ], {"x": r(2, 16, 9, 8)}, {
        "w1": r(32, 16, 1, 1, scale=0.3), "b1": r(32), "wd": r(32, 1, 3, 3, scale=0.3), "bd": r(32),
        "wr": r(8, 32, 1, 1, scale=0.4), "br": r(8), "we": r(32, 8, 1, 1, scale=0.5), "be": r(32),
        "w2": r(16, 32, 1, 1, scale=0.3), "b2": r(16)})


squeeze_excitation_in_blocks()


def identity_copies_of_blocks():
    """GhostNet's module: a pointwise convolution and a depthwise one of it concatenated on channel
    blocks, then a Slice of all the channels (and a Pad of nothing, an Expand to the same shape):
    each the value itself, no copy and no move out of blocks for the pointwise convolutions after
    it; the slice a graph output too, batch 2."""
    rng = np.random.default_rng(59)  # a generator of its own: the cases after it keep their values

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    I64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    case("identity_copies_of_blocks_batch2", [
        N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]),
        N("Conv", ["ar", "wd", "bd"], ["d"], group=16, pads=[1, 1, 1, 1]),
        N("Concat", ["ar", "d"], ["cat"], axis=1), N("Slice", ["cat", "starts", "ends", "axes"], ["z"]),
        N("Pad", ["z", "pads"], ["zp"]), N("Expand", ["zp", "shape"], ["ze"]),
        N("Conv", ["ze", "w2", "b2"], ["e"]), N("Conv", ["e", "w3"], ["y"]),
    ], {"x": r(2, 8, 7, 9)}, {
        "w1": r(16, 8, 1, 1, scale=0.3), "b1": r(16), "wd": r(16, 1, 3, 3, scale=0.3), "bd": r(16),
        "starts": I64(0), "ends": I64(32), "axes": I64(1), "pads": I64(0, 0, 0, 0, 0, 0, 0, 0), "shape": I64(1, 32, 1, 1),
        "w2": r(16, 32, 1, 1, scale=0.3), "b2": r(16), "w3": r(8, 16, 1, 1, scale=0.3)}, outputs=["y", "z"])


identity_copies_of_blocks()


def direct_pointwise_tails():
    """RexNet's pointwise layers: channels not whole blocks of 8 over a 7x7 plane (three strips of 16
    and a tail of one position), a residual Add after the second, batch 2."""
    rng = np.random.default_rng(61)  # a generator of its own: the cases after it keep their values

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    case("direct_pointwise_tails_batch2", [
        N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]), N("Conv", ["ar", "w2", "b2"], ["c"]), N("Add", ["c", "x"], ["y"]),
    ], {"x": r(2, 20, 7, 7)}, {"w1": r(36, 20, 1, 1, scale=0.3), "b1": r(36), "w2": r(20, 36, 1, 1, scale=0.3), "b2": r(20)})


direct_pointwise_tails()


def fusion_beside_an_alias():
    """A Relu read through an Identity's name right after the MatMul it follows, whose product a
    Slice of all its columns (an alias of it) also reads: the Relu must not run in the MatMul's store."""
    rng = np.random.default_rng(67)  # a generator of its own: the cases after it keep their values
    I64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    case("fusion_beside_an_alias", [
        N("MatMul", ["x", "w"], ["m"]), N("Identity", ["m"], ["d"]), N("Slice", ["m", "starts", "ends", "axes"], ["z"]),
        N("Relu", ["d"], ["r"]),
    ], {"x": (rng.standard_normal((3, 20)) * 2).astype(np.float32)}, {
        "w": (rng.standard_normal((20, 24)) * 0.5).astype(np.float32), "starts": I64(0), "ends": I64(24), "axes": I64(1)},
        outputs=["z", "r"])


fusion_beside_an_alias()


def blocked_pointwise_short_runs():
    """Pointwise chains on channel blocks whose planes are not whole runs of 8 positions (the
    AVX-512 build's): 7x7 (a last run of 5 over one position left), 2x7 (a last run of 6) and 14x14
    (on 2 and 3 threads chunks of whole runs, the last of 6s and 5s); pairs of output blocks taken
    two at once, one alone, and a lone last block (40 channels); a residual Add; batch 2 on 7x7."""
    rng = np.random.default_rng(71)  # a generator of its own: the cases after it keep their values

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    case("blocked_pointwise_short_runs", [
        N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]), N("Conv", ["ar", "w2", "b2"], ["c"]), N("Add", ["c", "x"], ["y1"]),
        N("Conv", ["z", "v1", "c1"], ["d"]), N("Relu", ["d"], ["dr"]), N("Conv", ["dr", "v2", "c2"], ["y2"]),
        N("Conv", ["u", "t1", "e1"], ["f"]), N("Relu", ["f"], ["fr"]), N("Conv", ["fr", "t2", "e2"], ["y3"]),
    ], {"x": r(2, 48, 7, 7), "z": r(1, 32, 14, 14), "u": r(1, 32, 2, 7)}, {
        "w1": r(40, 48, 1, 1, scale=0.2), "b1": r(40), "w2": r(48, 40, 1, 1, scale=0.2), "b2": r(48),
        "v1": r(48, 32, 1, 1, scale=0.2), "c1": r(48), "v2": r(32, 48, 1, 1, scale=0.2), "c2": r(32),
        "t1": r(32, 32, 1, 1, scale=0.2), "e1": r(32), "t2": r(40, 32, 1, 1, scale=0.2), "e2": r(40)},
        outputs=["y1", "y2", "y3"])


blocked_pointwise_short_runs()


def residual_add_passes_the_chain():
    """MobileNetV4's end: a residual Add of a projection's output and the block's input feeds a last expansion read
    only by a global pooling; the expansion stays on channel blocks (no move before it), batch 2."""
    rng = np.random.default_rng(73)  # a generator of its own: the cases after it keep their values

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    case("residual_add_passes_the_chain_batch2", [
        N("Conv", ["x", "w1", "b1"], ["a"]), N("Relu", ["a"], ["ar"]), N("Conv", ["ar", "wd", "bd"], ["d"], group=24, pads=[1, 1, 1, 1]),
        N("Conv", ["d", "w2", "b2"], ["c"]), N("Add", ["c", "ar"], ["s"]),
        N("Conv", ["s", "w3", "b3"], ["e"]), N("Relu", ["e"], ["er"]), N("GlobalAveragePool", ["er"], ["y"]),
    ], {"x": r(2, 16, 7, 7)}, {
        "w1": r(24, 16, 1, 1, scale=0.3), "b1": r(24), "wd": r(24, 1, 3, 3, scale=0.3), "bd": r(24),
        "w2": r(24, 24, 1, 1, scale=0.3), "b2": r(24), "w3": r(64, 24, 1, 1, scale=0.3), "b3": r(64)})


residual_add_passes_the_chain()

# 3x3 stride-1 convolutions between channel blocks by Winograd's F(4x4, 3x3): planes not whole
# tiles (13x11 and a valid window's 11x9), asymmetric pads, 40 output channels (a panel and a
# half), a residual Add then Relu in the epilogue, a SiLU after the last, batch 2; 16 input
# channels (fewer than the transforms pay for) stay on the direct kernels.
case("winograd_tiles_residual_silu_batch2", [
    N("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 0, 1, 2]), N("Relu", ["a"], ["ar"]),
    N("Conv", ["ar", "w2"], ["c"], pads=[1, 1, 1, 1]), N("Add", ["c", "x"], ["s"]), N("Relu", ["s"], ["sr"]),
    N("Conv", ["sr", "w3", "b3"], ["e"]), N("Sigmoid", ["e"], ["es"]), N("Mul", ["e", "es"], ["f"]),
    N("Conv", ["f", "w4", "b4"], ["y"], pads=[1, 1, 1, 1]),
], {"x": more(2, 24, 13, 11)}, {
    "w1": more(40, 24, 3, 3, scale=0.1), "b1": more(40), "w2": more(24, 40, 3, 3, scale=0.1),
    "w3": more(16, 24, 3, 3, scale=0.1), "b3": more(16), "w4": more(8, 16, 3, 3, scale=0.2), "b4": more(8)})

# A model whose output is all rounding: one 3x3 convolution less the same convolution written as
# 5x5 with a zero frame (no Winograd for it), on the direct kernels exactly 0. Winograd's rounding
# would be the whole output: the session's probe at load keeps the direct kernels.
w3 = more(24, 24, 3, 3, scale=0.1)
case("winograd_probe_rounding_only", [
    N("Conv", ["x", "w0"], ["t"]), N("Conv", ["t", "w3"], ["a"], pads=[1, 1, 1, 1]), N("Conv", ["t", "w5"], ["b"], pads=[2, 2, 2, 2]),
    N("Sub", ["a", "b"], ["y"]),
], {"x": more(1, 24, 12, 12)}, {"w0": more(24, 24, 1, 1, scale=0.2), "w3": w3, "w5": np.pad(w3, ((0, 0), (0, 0), (1, 1), (1, 1)))},
     outputs=["y", "b"])  # b an output too: the two branches stay apart (not merged into one convolution)

# Winograd's edges: an output narrower than a tile (7x2), and pads of 2 (the output larger than
# the input, 5x10 from 3x9), each after a pointwise layer so that they chain in blocks.
case("winograd_narrow_and_wide_pads", [
    N("Conv", ["x", "w0"], ["t"]), N("Conv", ["t", "w1", "b1"], ["y"], pads=[1, 1, 1, 1]),
    N("Conv", ["u", "w2"], ["v"]), N("Conv", ["v", "w3"], ["z"], pads=[2, 1, 2, 2]),
], {"x": more(1, 24, 7, 2), "u": more(1, 24, 3, 9)}, {
    "w0": more(24, 24, 1, 1, scale=0.2), "w1": more(32, 24, 3, 3, scale=0.1), "b1": more(32),
    "w2": more(32, 24, 1, 1, scale=0.2), "w3": more(24, 32, 3, 3, scale=0.1)}, outputs=["y", "z"])

# 1-D convolutions (ECA-Net's attention over the channels: one channel, kernel 3), strided, dilated
# and grouped with a bias and asymmetric pads, and with auto_pad, kernel_shape omitted.
case("conv1d_rows", [
    N("Conv", ["s", "w1"], ["y1"], kernel_shape=[3], pads=[1, 1]),
    N("Conv", ["t", "w2", "b2"], ["y2"], strides=[2], dilations=[2], pads=[2, 1], group=2),
    N("Conv", ["t", "w3"], ["y3"], auto_pad="SAME_UPPER", strides=[3]),
], {"s": more(2, 1, 16), "t": more(2, 6, 17)}, {"w1": more(1, 1, 3), "w2": more(4, 3, 3, scale=0.3), "b2": more(4),
                                                 "w3": more(5, 6, 4, scale=0.3)}, outputs=["y1", "y2", "y3"])
# BatchNormalization in training mode on weights known at load (NF-Nets' weight standardisation),
# over two "images" (each channel's statistics span both), its running mean and variance outputs
# too (momentum 0.9), then a 1x1 convolution by the normalised weights.
case("batchnorm_training_weights", [
    N("BatchNormalization", ["w", "gain", "beta", "m0", "v0"], ["ws", "rm", "rv"], epsilon=1e-5, momentum=0.9, training_mode=1),
    N("Reshape", ["ws", "wshape"], ["w4"]), N("Conv", ["x", "w4"], ["y"]),
], {"x": more(1, 3, 5, 4)}, {"w": more(2, 4, 3), "gain": more(4), "beta": more(4), "m0": more(4), "v0": np.abs(more(4)) + 0.5,
                             "wshape": np.array([8, 3, 1, 1], np.int64)}, outputs=["y", "rm", "rv"])
# A B computed at run time with batch axes of 1 (GCNet's context: [1,1,C,HW] x [1,1,HW,1]) or none.
case("matmul_runtime_single_b", [N("MatMul", ["a", "b"], ["y1"]), N("MatMul", ["c", "d"], ["y2"])],
     {"a": more(2, 1, 5, 7), "b": more(1, 1, 7, 4), "c": more(3, 6, 5), "d": more(5, 9)}, outputs=["y1", "y2"])
# Linear layers over an axis moved last and back, as convolutions over axis 1: CaiT's talking heads
# (perm [0,2,3,1], a 3x5 MatMul, its bias Add written bias first, the Transpose back, Softmax, a
# 5x3 MatMul and Add); MLP-Mixer's token MLP on a rank-3 value (perm [0,2,1], MatMul, Add, Relu,
# MatMul, Add, the Transpose back); a chain whose Add comes before its MatMul (the Transpose
# moves past that Add first); and one whose Relu output is also a graph output (left as it is).
case("linears_over_moved_axis", [
    N("Transpose", ["a"], ["at"], perm=[0, 2, 3, 1]), N("MatMul", ["at", "h1"], ["am"]), N("Add", ["hb1", "am"], ["aa"]),
    N("Transpose", ["aa"], ["ab"], perm=[0, 3, 1, 2]), N("Softmax", ["ab"], ["as"], axis=-1),
    N("Transpose", ["as"], ["at2"], perm=[0, 2, 3, 1]), N("MatMul", ["at2", "h2"], ["am2"]), N("Add", ["am2", "hb2"], ["aa2"]),
    N("Transpose", ["aa2"], ["y1"], perm=[0, 3, 1, 2]),
    N("Transpose", ["t"], ["tt"], perm=[0, 2, 1]), N("MatMul", ["tt", "m1"], ["tm"]), N("Add", ["tm", "mb1"], ["ta"]),
    N("Relu", ["ta"], ["tr"]), N("MatMul", ["tr", "m2"], ["tm2"]), N("Add", ["tm2", "mb2"], ["ta2"]),
    N("Transpose", ["ta2"], ["y2"], perm=[0, 2, 1]),
    N("Transpose", ["t"], ["ut"], perm=[0, 2, 1]), N("Add", ["ut", "ub"], ["ua"]), N("MatMul", ["ua", "m1"], ["um"]),
    N("Transpose", ["um"], ["y3"], perm=[0, 2, 1]),
    N("Transpose", ["t"], ["vt"], perm=[0, 2, 1]), N("MatMul", ["vt", "m1"], ["vm"]), N("Relu", ["vm"], ["y4"]),
    N("MatMul", ["y4", "m2"], ["vm2"]), N("Transpose", ["vm2"], ["y5"], perm=[0, 2, 1]),
], {"a": more(2, 3, 6, 7), "t": more(2, 9, 5)}, {"h1": more(3, 5, scale=0.5), "hb1": more(5), "h2": more(5, 3, scale=0.5), "hb2": more(3),
                                                 "m1": more(9, 12, scale=0.3), "mb1": more(12), "m2": more(12, 9, scale=0.3), "mb2": more(9),
                                                 "ub": more(9)}, outputs=["y1", "y2", "y3", "y4", "y5"])


# 1-D pooling (Next-ViT's token pooling: AveragePool of kernel and stride 16 over [N, C, L]) with
# odd lengths: average with pads, ceil_mode and count_include_pad both ways, max dilated and strided.
case("pool1d_rows", [
    N("AveragePool", ["t"], ["y1"], kernel_shape=[4], strides=[4]),
    N("AveragePool", ["t"], ["y2"], kernel_shape=[3], strides=[2], pads=[1, 0], ceil_mode=1, count_include_pad=0),
    N("AveragePool", ["t"], ["y3"], kernel_shape=[3], strides=[2], pads=[1, 1], count_include_pad=1),
    N("MaxPool", ["t"], ["y4"], kernel_shape=[3], strides=[2], dilations=[2], pads=[2, 1]),
    N("MaxPool", ["t"], ["y5", ""], kernel_shape=[2], ceil_mode=1),
], {"t": more(2, 5, 17)}, outputs=["y1", "y2", "y3", "y4", "y5"])
# 3-D convolutions whose kernel spans one value of the last axis (LambdaNet's position lambdas,
# kernel [r, r, 1] over [N, 1, H, W, K]); strided, dilated and grouped with a bias and asymmetric pads.
case("conv3d_unit_last_axis", [
    N("Conv", ["v", "w1", "b1"], ["y1"], kernel_shape=[5, 5, 1], pads=[2, 2, 0, 2, 2, 0]),
    N("Conv", ["u", "w2", "b2"], ["y2"], strides=[2, 1, 1], dilations=[2, 3, 1], pads=[1, 2, 0, 3, 1, 0], group=2),
], {"v": more(2, 1, 7, 6, 5), "u": more(1, 4, 9, 8, 3)}, {"w1": more(6, 1, 5, 5, 1, scale=0.3), "b1": more(6),
                                                          "w2": more(4, 2, 3, 2, 1, scale=0.3), "b2": more(4)}, outputs=["y1", "y2"])
# Col2Im (PyTorch's Fold, VOLO's outlook attention: 3x3 blocks, stride 2, padding 1) on an odd
# image, and with dilations, asymmetric pads and strides that leave rows and columns uncovered.
case("col2im_blocks_opset18", [
    N("Col2Im", ["c", "image1", "block1"], ["y1"], strides=[2, 2], pads=[1, 1, 1, 1]),
    N("Col2Im", ["d", "image2", "block2"], ["y2"], strides=[3, 2], dilations=[2, 1], pads=[0, 1, 2, 0]),
], {"c": more(2, 3 * 9, 16), "d": more(1, 2 * 6, 9)}, {
    "image1": np.array([7, 8], np.int64), "block1": np.array([3, 3], np.int64),
    "image2": np.array([9, 6], np.int64), "block2": np.array([2, 3], np.int64)}, opset=18, outputs=["y1", "y2"])


# LSTM (Sequencer's bidirectional LSTMs over rows and columns): bidirectional with both biases,
# peepholes and initial states computed at run time, all three outputs; reverse with clip,
# input_forget, HardSigmoid / Tanh / Relu activations (alpha and beta in order), no bias, only Y_h;
# forward at opset 14 (its layout attribute 0), zero initial states by default.
hid = 6
case("lstm_bidirectional_peepholes", [
    N("Tanh", ["h0"], ["h0t"]),
    N("LSTM", ["x", "w", "r", "b", "", "h0t", "c0", "p"], ["y", "yh", "yc"], hidden_size=hid, direction="bidirectional"),
], {"x": more(5, 3, 4), "h0": more(2, 3, hid), "c0": more(2, 3, hid)},
   {"w": more(2, 4 * hid, 4, scale=0.4), "r": more(2, 4 * hid, hid, scale=0.4), "b": more(2, 8 * hid, scale=0.3),
    "p": more(2, 3 * hid, scale=0.3)}, outputs=["y", "yh", "yc"])
case("lstm_reverse_clip_activations", [
    N("LSTM", ["x", "w", "r"], ["", "yh"], hidden_size=hid, direction="reverse", clip=0.8, input_forget=1,
      activations=["HardSigmoid", "Tanh", "Relu"], activation_alpha=[0.3], activation_beta=[0.4]),
], {"x": more(7, 2, 5)}, {"w": more(1, 4 * hid, 5, scale=0.6), "r": more(1, 4 * hid, hid, scale=0.6)}, outputs=["yh"])
case("lstm_forward_opset14", [
    N("LSTM", ["x", "w", "r", "b"], ["y", "", "yc"], hidden_size=hid, layout=0),
], {"x": more(3, 4, 5)}, {"w": more(1, 4 * hid, 5, scale=0.5), "r": more(1, 4 * hid, hid, scale=0.5), "b": more(1, 8 * hid, scale=0.3)},
   opset=14, outputs=["y", "yc"])


# Rotary position embedding as timm's RoPE ViT and EVA export it: pairs taken apart by Slices of
# step 2 along the last axis, the odd ones negated, stacked along a new last axis (a Concat of
# chunks of one float) and reshaped back, then x·cos + rotated·sin; with a reversed strided Slice
# (step -3) and a Concat of a single-float chunk beside a wider one.
case("rope_rotate_pairs", [
    N("Slice", ["x", "one", "big", "last", "two"], ["odd"]), N("Neg", ["odd"], ["negated"]),
    N("Slice", ["x", "zero", "big", "last", "two"], ["even"]),
    N("Unsqueeze", ["negated", "last"], ["a"]), N("Unsqueeze", ["even", "last"], ["b"]), N("Concat", ["a", "b"], ["stacked"], axis=-1),
    N("Reshape", ["stacked", "shape"], ["rotated"]), N("Mul", ["x", "cos"], ["xc"]), N("Mul", ["rotated", "sin"], ["rs"]), N("Add", ["xc", "rs"], ["y1"]),
    N("Slice", ["x", "minus1", "minusbig", "last", "minus3"], ["backwards"]), N("Abs", ["backwards"], ["y2"]),
    N("Slice", ["x", "zero", "one", "last"], ["first"]), N("Concat", ["first", "x"], ["y3"], axis=-1),
], {"x": more(2, 3, 5, 8)}, {"one": np.array([1], np.int64), "zero": np.array([0], np.int64), "big": np.array([1 << 30], np.int64),
                             "last": np.array([-1], np.int64), "two": np.array([2], np.int64), "shape": np.array([2, 3, 5, 8], np.int64),
                             "cos": more(5, 8), "sin": more(5, 8), "minus1": np.array([-1], np.int64),
                             "minusbig": np.array([-(1 << 30)], np.int64), "minus3": np.array([-3], np.int64)}, outputs=["y1", "y2", "y3"])


# An LSTM named "lstm" whose left-out outputs would be named like values the model has
# ("lstm#output0", "lstm#output1"): the names given must be new ones.
case("lstm_outputs_left_out_named_apart", [
    N("Relu", ["h"], ["lstm#output0"]), N("Tanh", ["h"], ["lstm#output1"]),
    N("LSTM", ["x", "w", "r"], ["", "", "yc"], hidden_size=3, name="lstm"),
    N("Add", ["lstm#output1", "yc"], ["y1"]), N("Mul", ["lstm#output0", "yc"], ["y2"]),
], {"x": more(4, 2, 3), "h": more(1, 2, 3)}, {"w": more(1, 12, 3, scale=0.5), "r": more(1, 12, 3, scale=0.5)}, outputs=["y1", "y2"])


def bad_models(directory):
    """Models the engine must refuse with a clear error (the tests name the expected message)."""
    directory.mkdir(parents=True, exist_ok=True)

    def model(nodes, inputs, initializers=(), opset=17, elem_type=TensorProto.FLOAT):
        graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info(k, elem_type, v) for k, v in inputs.items()],
                                  [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)], list(initializers))
        result = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        result.ir_version = 8
        return result

    onnx.save(model([N("NonMaxSuppression", ["x"], ["y"], name="nms_1")], {"x": [1, 4]}), directory / "unsupported_operator.onnx")
    onnx.save(model([N("Relu", ["x"], ["y"])], {"x": [1, 4]}, opset=9), directory / "old_opset.onnx")
    onnx.save(model([N("Relu", ["x"], ["y"])], {"x": [1, 4]}, elem_type=TensorProto.INT64), directory / "int_input.onnx")
    weight = numpy_helper.from_array(rand(4, 4), "w")
    weight.data_location = TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    onnx.save(model([N("MatMul", ["x", "w"], ["y"])], {"x": [1, 4]}, [weight]), directory / "external_data.onnx")
    entry.value = "../../../etc/passwd"
    onnx.save(model([N("MatMul", ["x", "w"], ["y"])], {"x": [1, 4]}, [weight]), directory / "external_data_escape.onnx")
    onnx.save(model([N("MatMul", ["x", "w"], ["y"], name="mm")], {"x": [1, 5]}, [numpy_helper.from_array(rand(4, 3), "w")]),
              directory / "mismatched_shapes.onnx")
    # Hostile shape computations: each refused when the session is built, naming the node.
    def const(name, value):
        return numpy_helper.from_array(np.array(value, np.int64), name)

    hostile = {
        "constant_of_shape_huge": ([N("ConstantOfShape", ["big"], ["z"], name="cos"), N("Add", ["x", "z"], ["y"])],
                                   [const("big", [1 << 40, 1 << 40])]),
        "tile_huge": ([N("Tile", ["x", "r"], ["y"], name="tile")], [const("r", [1 << 31, 1 << 31, 1])]),
        "range_too_long": ([N("Range", ["a", "b", "c"], ["r"], name="range"), N("Reshape", ["x", "r"], ["y"])],
                           [const("a", 0), const("b", np.iinfo(np.int64).max), const("c", 1)]),
        "slice_step_zero": ([N("Slice", ["x", "s", "e", "a", "st"], ["y"], name="slice")],
                            [const("s", [0]), const("e", [2]), const("a", [1]), const("st", [0])]),
        "integer_overflow": ([N("Mul", ["m", "two"], ["p"], name="mul"), N("Reshape", ["x", "p"], ["y"])],
                             [const("m", [np.iinfo(np.int64).max]), const("two", [2])]),
        "integer_division_by_zero": ([N("Shape", ["x"], ["s"]), N("Div", ["s", "zero"], ["q"], name="div"), N("Reshape", ["x", "q"], ["y"])],
                                     [const("zero", [0])]),
        "gather_out_of_range": ([N("Gather", ["x", "i"], ["y"], axis=1, name="gather")], [const("i", [7])]),
        "equal_at_run_time": ([N("Equal", ["x", "x"], ["e"], name="eq"), N("Cast", ["e"], ["y"], to=TensorProto.FLOAT)], []),
        # Found by make fuzz: abs(INT64_MIN) in the pads' check; a malformed perm after a Transpose;
        # an axis of 6 billion beside an empty one (its index map alone 51 GB).
        "pad_int64_min": ([N("Pad", ["x", "p"], ["y"], name="pad")], [const("p", [0, np.iinfo(np.int64).min, 0, 0, 0, 0])]),
        "tile_empty_huge_axis": ([N("Tile", ["x", "r"], ["y"], name="tile")], [const("r", [0, 1 << 31, 1])]),
        # Found by review: a Conv of no output channels before a Mul (a division by zero in the
        # fold), a float Range of -1e30 steps, a Concat of 64 16M-element constants.
        "conv_no_channels_scaled": ([N("Conv", ["x4", "w0"], ["c"], name="conv"), N("Mul", ["c", "two"], ["y"], name="mul")],
                                    [numpy_helper.from_array(np.zeros((0, 3, 1, 1), np.float32), "w0"),
                                     numpy_helper.from_array(np.array(2, np.float32), "two")]),
        "range_float_far_below": ([N("Range", ["a", "b", "c"], ["r"], name="range"), N("Add", ["x", "r"], ["y"])],
                                  [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in (("a", 0), ("b", -1e30), ("c", 1))]),
        "concat_of_huge_constants": ([N("ConstantOfShape", ["s"], ["z"]), N("Concat", ["z"] * 64, ["big"], axis=0, name="concat"),
                                      N("Add", ["x", "big"], ["y"])], [const("s", [4096, 4096])]),
        "transpose_bad_perm": ([N("Transpose", ["x"], ["t"], perm=[0, 2, 1]), N("Transpose", ["t"], ["y"], perm=[5, 0, 1], name="bad")], []),
        "cast_to_string": ([N("Shape", ["x"], ["s"]), N("Cast", ["s"], ["t"], to=TensorProto.STRING, name="cast"),
                            N("Reshape", ["x", "t"], ["y"])], []),
        # Found by make fuzz: sibling 1x1 convolutions whose weights do not fit the input they share
        # (both reading 5 channels of an input of 3) were stacked before any check (a crash on the
        # stacked tensor's size).
        "siblings_mismatched_weights": ([N("Conv", ["x4", "wa"], ["a"], name="conv_a"), N("Conv", ["x4", "wb"], ["b"], name="conv_b"),
                                         N("Concat", ["a", "b"], ["y"], axis=1)],
                                        [numpy_helper.from_array(np.ones((4, 5, 1, 1), np.float32), "wa"),
                                         numpy_helper.from_array(np.ones((4, 5, 1, 1), np.float32), "wb")]),
        # The operators of today's families: forms still refused, and sizes no image has.
        "einsum_diagonal": ([N("Einsum", ["x"], ["y"], equation="bii->bi", name="einsum")], []),
        "resize_bad_mode": ([N("Resize", ["x", "", "s"], ["y"], mode="bilinear", name="resize")],
                            [numpy_helper.from_array(np.array([1, 1, 2], np.float32), "s")]),
        "resize_huge_scale": ([N("Resize", ["x", "", "s"], ["y"], mode="linear", name="resize")],
                              [numpy_helper.from_array(np.array([1, 1, 1e30], np.float32), "s")]),
        # Found by review: an antialiased crop of a millionth of a scale (a window of billions of taps
        # per output), an Einsum whose output is 2^32 values, an empty Einsum operand broadcast as if of 1.
        "resize_antialias_huge_window": ([N("Resize", ["x", "roi", "s"], ["y"], mode="linear", antialias=1,
                                            coordinate_transformation_mode="tf_crop_and_resize", name="resize")],
                                         [numpy_helper.from_array(np.array([0, 0, -1e6, 1, 1, 1e6], np.float32), "roi"),
                                          numpy_helper.from_array(np.array([1, 1, 2e-7], np.float32), "s")]),
        "einsum_output_too_large": ([N("Einsum", ["x", "w"], ["y"], equation="bi,cj->bicj", name="einsum")],
                                    [numpy_helper.from_array(np.ones((1, 65536), np.float32), "w")]),
        "einsum_empty_operand": ([N("Einsum", ["w", "x"], ["y"], equation="bij,bij->bij", name="einsum")],
                                 [numpy_helper.from_array(np.ones((0, 3, 4), np.float32), "w")]),
        # BatchNormalization in training mode normalises by its input's statistics: at run time, refused.
        "batchnorm_training_at_run_time": ([N("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], training_mode=1, name="bn")],
                                           [numpy_helper.from_array(np.ones(3, np.float32), k) for k in "gbv"]
                                           + [numpy_helper.from_array(np.zeros(3, np.float32), "m")]),
        # A Conv of 1-D weights on a 4-D input: refused, as ONNX Runtime refuses it.
        "conv1d_weights_on_planes": ([N("Conv", ["x4", "w"], ["y"], name="conv")], [numpy_helper.from_array(np.ones((2, 3, 3), np.float32), "w")]),
        # A 3-D convolution whose kernel spans more than one value of the last axis: refused at the Conv.
        "conv3d_kernel_over_last_axis": ([N("Unsqueeze", ["x4", "a"], ["x5"]), N("Conv", ["x5", "w"], ["y"], name="conv")],
                                         [const("a", [1]), numpy_helper.from_array(np.ones((2, 1, 1, 2, 2), np.float32), "w")]),
        # An LSTM with an activation the engine has not (ScaledTanh), and one with a shorter sequence.
        "lstm_scaled_tanh": ([N("LSTM", ["x", "w", "r"], ["y"], hidden_size=2, activations=["Sigmoid", "ScaledTanh", "Tanh"], name="lstm")],
                             [numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "w"), numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "r")]),
        "lstm_short_sequence": ([N("LSTM", ["x", "w", "r", "", "n"], ["y"], hidden_size=2, name="lstm")],
                                [numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "w"), numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "r"),
                                 numpy_helper.from_array(np.array([1, 3, 3], np.int32), "n")]),
        # An LSTM whose clip is not positive (ONNX Runtime refuses it too).
        "lstm_clip_zero": ([N("LSTM", ["x", "w", "r"], ["y"], hidden_size=2, clip=0.0, name="lstm")],
                           [numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "w"), numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "r")]),
        # An LSTM over batch-first data (layout 1), which ONNX Runtime refuses too.
        "lstm_batch_first": ([N("LSTM", ["x", "w", "r"], ["y"], hidden_size=2, layout=1, name="lstm")],
                             [numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "w"), numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "r")]),
        # Pads of 2^62 (their sums overflowed and trapped): refused, for a convolution and a Col2Im.
        "conv_huge_pads": ([N("Conv", ["x4", "w"], ["y"], pads=[1 << 62] * 4, name="conv")], [numpy_helper.from_array(np.ones((1, 3, 2, 2), np.float32), "w")]),
        "col2im_huge_pads": ([N("Col2Im", ["x", "i", "b"], ["y"], pads=[1 << 62, 0, 1 << 62, 0], name="fold")], [const("i", [3, 3]), const("b", [2, 2])]),
        # Col2Im whose columns are not one a block position: refused with the count.
        "col2im_columns_mismatched": ([N("Col2Im", ["x", "i", "b"], ["y"], name="fold")], [const("i", [3, 3]), const("b", [2, 2])]),
        # A convolution of a value known at load is evaluated at load: not one of billions of multiply-adds.
        "conv_of_huge_known_value": ([N("ConstantOfShape", ["s"], ["z"]), N("Conv", ["z", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                                      N("GlobalAveragePool", ["c"], ["p"]), N("Add", ["x", "p"], ["y"])],
                                     [const("s", [1, 32, 512, 512]), numpy_helper.from_array(np.ones((64, 32, 3, 3), np.float32), "w")]),
    }
    for name, (nodes, initializers) in hostile.items():
        inputs = {"x4": [1, 3, 4, 4]} if name in ("conv_no_channels_scaled", "siblings_mismatched_weights", "conv1d_weights_on_planes",
                                                                "conv3d_kernel_over_last_axis", "conv_huge_pads") else {"x": [1, 3, 4]}
        inputs = {"x": [1, 3, 3]} if name == "einsum_diagonal" else {"x": [1, 65536]} if name == "einsum_output_too_large" else inputs
        inputs = {"x": [1, 4, 3]} if name in ("col2im_columns_mismatched", "col2im_huge_pads") else {"x": [3, 3, 4]} if name.startswith("lstm") else inputs
        onnx.save(model(nodes, inputs, initializers, opset=18 if name.startswith("col2im") else 17), directory / f"{name}.onnx")
    whole = (OUT / "conv_basic" / "model.onnx").read_bytes()
    (directory / "truncated.onnx").write_bytes(whole[: len(whole) // 2])
    (directory / "not_onnx.onnx").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(RNG.integers(0, 256, 200, dtype=np.uint8)))
    (directory / "empty.onnx").write_bytes(b"")


def large_cases():
    """Unrolled inputs of 4.7 MB and more (the engine unrolls and multiplies them in bands),
    depthwise convolutions over wide planes with fused activations, and direct convolutions deep
    enough for several passes over the input channels, wide enough for several groups of output
    channels, with tail strips."""
    rng = np.random.default_rng(29)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    x = normal(1, 32, 64, 64)
    return [
        ("conv_banded_same_clip", [N("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                                   N("Clip", ["c", "lo", "hi"], ["y"])],
         {"x": x}, {"w": normal(24, 32, 3, 3, scale=0.2), "b": normal(24), "lo": np.array(0, np.float32),
                    "hi": np.array(6, np.float32)}, 17, None),
        ("conv_banded_valid", [N("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])], {"x": x},
         {"w": normal(16, 32, 3, 3, scale=0.2)}, 17, None),
        # Depthwise with fused activations: Relu clamped in registers, HardSwish applied after.
        ("depthwise_relu_wide", [N("Conv", ["x", "w", "b"], ["c"], group=32, kernel_shape=[5, 5], strides=[2, 2], pads=[2, 2, 2, 2]),
                                 N("Relu", ["c"], ["y"])], {"x": x}, {"w": normal(32, 1, 5, 5, scale=0.3), "b": normal(32)}, 17, None),
        ("depthwise_hardswish_wide", [N("Conv", ["x", "w"], ["c"], group=32, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                                      N("HardSwish", ["c"], ["y"])], {"x": x}, {"w": normal(32, 1, 3, 3, scale=0.3)}, 17, None),
        # A residual Add (then Relu, as in ResNet) fused into a banded convolution; batch 2.
        ("conv_banded_residual_relu", [N("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                                       N("Add", ["x", "c"], ["s"]), N("Relu", ["s"], ["y"])],
         {"x": normal(2, 32, 64, 64)}, {"w": normal(32, 32, 3, 3, scale=0.1), "b": normal(32)}, 17, None),
        ("conv_banded_stride2_batch2", [N("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 0])],
         {"x": normal(2, 32, 128, 130)}, {"w": normal(8, 32, 3, 3, scale=0.2), "b": normal(8)}, 17, None),
        # Direct: 2 passes over 512 channels, 2 groups of output channels, a tail (625 positions).
        ("direct_pointwise_passes_groups", [N("Conv", ["x", "w", "b"], ["y"])],
         {"x": normal(1, 512, 25, 25)}, {"w": normal(300, 512, 1, 1, scale=0.05), "b": normal(300)}, 17, None),
        # Direct: 2 passes (40 x 7 taps), a tail, the residual added and Relu after.
        ("direct_7x1_passes_residual", [N("Conv", ["x", "w", "b"], ["c"], kernel_shape=[7, 1], pads=[3, 0, 3, 0]),
                                        N("Add", ["c", "r"], ["s"]), N("Relu", ["s"], ["y"])],
         {"x": normal(1, 40, 17, 17), "r": normal(1, 48, 17, 17)}, {"w": normal(48, 40, 7, 1, scale=0.1), "b": normal(48)}, 17, None),
        # Channel-blocked chains over wide rows (depthwise read in place): a stem into 2 blocks
        # with Clip; a stride-2 depthwise with asymmetric pads and a dilated one, HardSwish after;
        # a last pointwise of 5 blocks (one without a pair), batch 2.
        ("blocked_wide_rows_batch2", [
            N("Conv", ["x", "w0", "b0"], ["c"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), N("Clip", ["c", "lo", "hi"], ["c6"]),
            N("Conv", ["c6", "wd1", "bd1"], ["d1"], group=16, kernel_shape=[3, 3], pads=[1, 1, 1, 1]), N("Relu", ["d1"], ["d1r"]),
            N("Conv", ["d1r", "w1"], ["e"], kernel_shape=[1, 1]),
            N("Conv", ["e", "wd2"], ["d2"], group=32, kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0]),
            N("Conv", ["d2", "wd3", "bd3"], ["d3"], group=32, kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 1, 2, 3]),
            N("HardSwish", ["d3"], ["d3h"]),
            N("Conv", ["d3h", "w2", "b2"], ["y"], kernel_shape=[1, 1]),
        ], {"x": normal(2, 3, 140, 134)}, {
            "w0": normal(16, 3, 3, 3, scale=0.4), "b0": normal(16), "wd1": normal(16, 1, 3, 3, scale=0.4), "bd1": normal(16),
            "w1": normal(32, 16, 1, 1, scale=0.3), "wd2": normal(32, 1, 3, 3, scale=0.4), "wd3": normal(32, 1, 3, 3, scale=0.4),
            "bd3": normal(32), "w2": normal(40, 32, 1, 1, scale=0.3), "b2": normal(40),
            "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}, 17, None),
        # InceptionV3's windows between channel blocks over 35x35, batch 2: 3x3 with Relu, 5x5,
        # 1x7 and 7x1, and a 3x3/2 into 5 blocks (one without a pair).
        ("blocked_windows_batch2", [
            N("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), N("Relu", ["c1"], ["r1"]),
            N("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
            N("Conv", ["c2", "w3"], ["c3"], kernel_shape=[1, 7], pads=[0, 3, 0, 3]),
            N("Conv", ["c3", "w4", "b4"], ["c4"], kernel_shape=[7, 1], pads=[3, 0, 3, 0]), N("Relu", ["c4"], ["r4"]),
            N("Conv", ["r4", "w5", "b5"], ["y"], kernel_shape=[3, 3], strides=[2, 2]),
        ], {"x": normal(2, 32, 35, 35)}, {
            "w1": normal(48, 32, 3, 3, scale=0.1), "b1": normal(48), "w2": normal(64, 48, 5, 5, scale=0.05), "b2": normal(64),
            "w3": normal(32, 64, 1, 7, scale=0.08), "w4": normal(48, 32, 7, 1, scale=0.1), "b4": normal(48),
            "w5": normal(40, 48, 3, 3, scale=0.1), "b5": normal(40)}, 17, None),
        # Window poolings between channel blocks, batch 2: MaxPool 3x3/2 with ceil_mode and a
        # dilated one; a same-size AveragePool (count_include_pad 0) that a narrowing 1x1 convolution
        # with bias and Relu runs before; AveragePool 2x2/1 with padding counted; their Concat.
        ("blocked_pools_batch2", [
            N("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), N("Relu", ["c1"], ["r1"]),
            N("MaxPool", ["r1"], ["m1"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
            N("Conv", ["m1", "w2"], ["c2"], kernel_shape=[1, 1]),
            N("AveragePool", ["c2"], ["a1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0),
            N("Conv", ["a1", "w3", "b3"], ["c3"], kernel_shape=[1, 1]), N("Relu", ["c3"], ["r3"]),
            N("AveragePool", ["c2"], ["a2"], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1], count_include_pad=1),
            N("MaxPool", ["a2"], ["m2"], kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 2, 1, 2]),
            N("Concat", ["r3", "m2"], ["cat"], axis=1),
            N("Conv", ["cat", "w4"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        ], {"x": normal(2, 16, 20, 21)}, {
            "w1": normal(32, 16, 3, 3, scale=0.1), "b1": normal(32), "w2": normal(24, 32, 1, 1, scale=0.2),
            "w3": normal(16, 24, 1, 1, scale=0.2), "b3": normal(16), "w4": normal(16, 40, 3, 3, scale=0.1)}, 17, None),
        # Direct along output rows (stride 2): 2 passes, a tail in every row, batch 2.
        ("direct_stride2_passes_batch2", [N("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1])],
         {"x": normal(2, 32, 60, 60)}, {"w": normal(20, 32, 3, 3, scale=0.1), "b": normal(20)}, 17, None),
        # Copies and broadcasts shared out over threads: a Transpose of many rows in runs (its last
        # axis contiguous, and strided), rows of an Add longer than a piece, with a broadcast row.
        ("transpose_qkv_runs", [N("Transpose", ["x"], ["y"], perm=[2, 0, 3, 1, 4])], {"x": normal(16, 49, 3, 3, 32)}, {}, 17, None),
        ("transpose_reversed_runs", [N("Transpose", ["x"], ["y"], perm=[2, 1, 0])], {"x": normal(20, 30, 40)}, {}, 17, None),
        ("add_long_rows_in_pieces", [N("Add", ["x", "row"], ["s"]), N("Mul", ["s", "scale"], ["y"])], {"x": normal(2, 3, 20000)},
         {"row": normal(20000), "scale": normal(2, 3, 1)}, 17, None),
        # A product by packed panels over two bands of rows and three passes of depth, a bias and a Relu after it.
        ("matmul_packed_passes_bands", [N("MatMul", ["x", "w"], ["m"]), N("Add", ["m", "bias"], ["s"]), N("Relu", ["s"], ["y"])],
         {"x": normal(1, 250, 600)}, {"w": normal(600, 40, scale=0.05), "bias": normal(40)}, 17, None),
        # Winograd over bands of tile rows (64 channels over 102x106: 26 tile rows, 4 a band, the
        # last 2) with bias and Relu, then 320 input channels (two passes of the products' depth)
        # into 40 over 51x53 (13 tile rows, 2 a band, the last 1).
        ("winograd_bands_passes", [
            N("Conv", ["x", "w1", "b1"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), N("Relu", ["a"], ["ar"]),
            N("Conv", ["ar", "w2"], ["c"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
            N("Conv", ["c", "w3", "b3"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        ], {"x": normal(1, 64, 102, 106)}, {
            "w1": normal(64, 64, 3, 3, scale=0.05), "b1": normal(64), "w2": normal(320, 64, 3, 3, scale=0.05),
            "w3": normal(40, 320, 3, 3, scale=0.02), "b3": normal(40)}, 17, None),
    ]


def quantized_cases():
    """(name, float model nodes, inputs, initializers, activation type) for quantize_static."""
    from onnxruntime.quantization import QuantType
    rng = np.random.default_rng(20261124)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    # Every operator a photo classifier quantizes: a strided stem with Relu, a depthwise
    # convolution with Clip(0, 6), pooling, a pointwise convolution, Add of two quantized values,
    # global pooling, Flatten and Gemm.
    nodes = [
        N("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]), N("Relu", ["c1"], ["r1"]),
        N("Conv", ["r1", "w2", "b2"], ["c2"], group=16, pads=[1, 1, 1, 1]), N("Clip", ["c2", "lo", "hi"], ["r2"]),
        N("MaxPool", ["r2"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        N("Conv", ["m", "w3", "b3"], ["c3"]), N("Conv", ["m", "w4"], ["c4"], pads=[1, 1, 1, 1]),
        N("Add", ["c3", "c4"], ["a"]), N("AveragePool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        N("GlobalAveragePool", ["p"], ["g"]), N("Flatten", ["g"], ["f"]), N("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    initializers = {
        "w1": normal(16, 3, 3, 3, scale=0.3), "b1": normal(16, scale=0.1), "w2": normal(16, 1, 3, 3, scale=0.3),
        "b2": normal(16, scale=0.1), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32),
        "w3": normal(24, 16, 1, 1, scale=0.2), "b3": normal(24, scale=0.1), "w4": normal(24, 16, 3, 3, scale=0.1),
        "wf": normal(10, 24, scale=0.3), "bf": normal(10, scale=0.1),
    }
    # The integer kernels' other shapes: a pointwise convolution of odd channel counts, a 5x5
    # stride-2 depthwise one over channels that are not whole groups of 16, a dilated 3x3, and a
    # MatMul with constant weights (quantized along its output axis).
    shapes = [
        N("Conv", ["x", "v1", "c1b"], ["e1"]), N("Relu", ["e1"], ["e2"]),
        N("Conv", ["e2", "v2", "c2b"], ["d1"], group=24, kernel_shape=[5, 5], strides=[2, 2], pads=[2, 2, 2, 2]),
        N("Clip", ["d1", "lo", "hi"], ["d2"]),
        N("Conv", ["d2", "v3", "c3b"], ["k1"], dilations=[2, 2], pads=[2, 2, 2, 2]),
        N("GlobalAveragePool", ["k1"], ["g"]), N("Flatten", ["g"], ["f"]), N("MatMul", ["f", "v4"], ["y"]),
    ]
    shape_initializers = {
        "v1": normal(24, 13, 1, 1, scale=0.3), "c1b": normal(24, scale=0.1), "v2": normal(24, 1, 5, 5, scale=0.2),
        "c2b": normal(24, scale=0.1), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32),
        "v3": normal(21, 24, 3, 3, scale=0.1), "c3b": normal(21, scale=0.1), "v4": normal(21, 10, scale=0.3),
    }
    return [
        ("qdq_classifier_uint8", nodes, {"x": normal(2, 3, 32, 32)}, initializers, QuantType.QUInt8),
        ("qdq_classifier_int8", nodes, {"x": normal(2, 3, 32, 32)}, initializers, QuantType.QInt8),
        ("qdq_kernel_shapes_uint8", shapes, {"x": normal(2, 13, 17, 17)}, shape_initializers, QuantType.QUInt8),
        # ONNX's operator form (QOperator): QLinearConv and QLinearMatMul between QuantizeLinear and
        # DequantizeLinear. ONNX Runtime runs these operators on its own kernels even unoptimised, and
        # on AVX2 without VNNI those add uint8 x int8 pairs in 16 bits and saturate on full 8-bit
        # weights: the fixtures use 7-bit weights (reduce_range), where its outputs are exact.
        ("qop_convs_uint8", [N("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]), N("Relu", ["c1"], ["r1"]),
                             N("Conv", ["r1", "w2", "b2"], ["c2"], group=16, pads=[1, 1, 1, 1]), N("Conv", ["c2", "w3", "b3"], ["y"])],
         {"x": normal(2, 3, 20, 20)}, {"w1": normal(16, 3, 3, 3, scale=0.3), "b1": normal(16, scale=0.1), "w2": normal(16, 1, 3, 3, scale=0.3),
                                       "b2": normal(16, scale=0.1), "w3": normal(24, 16, 1, 1, scale=0.3), "b3": normal(24, scale=0.1)},
         QuantType.QUInt8, "QOperator"),
        ("qop_matmuls_uint8", [N("MatMul", ["x", "m1"], ["h"]), N("Relu", ["h"], ["r"]), N("MatMul", ["r", "m2"], ["y"])],
         {"x": normal(4, 16)}, {"m1": normal(16, 32, scale=0.3), "m2": normal(32, 10, scale=0.3)}, QuantType.QUInt8, "QOperator"),
        # MaxPool on levels: int8 activations below zero where padding must take no part, asymmetric
        # pads with ceil_mode, a dilated window, 20 channels (not whole groups of 16).
        ("qdq_maxpool_edges_int8",
         [N("Conv", ["x", "p1", "q1"], ["t1"], pads=[1, 1, 1, 1]),
          N("MaxPool", ["t1"], ["m1"], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 2, 2], ceil_mode=1),
          N("Conv", ["m1", "p2", "q2"], ["t2"]),
          N("MaxPool", ["t2"], ["m2"], kernel_shape=[3, 2], dilations=[2, 2], pads=[1, 0, 1, 1]),
          N("Conv", ["m2", "p3", "q3"], ["y"])],
         {"x": normal(2, 5, 19, 17)}, {"p1": normal(20, 5, 3, 3, scale=0.3), "q1": normal(20, scale=0.1) - 1.0,
                                       "p2": normal(20, 20, 1, 1, scale=0.3), "q2": normal(20, scale=0.1) - 1.0,
                                       "p3": normal(7, 20, 1, 1, scale=0.3), "q3": normal(7, scale=0.1)},
         QuantType.QInt8),
        depthwise_case(),
        grouped_case(),
    ]


def depthwise_case():
    """The integer depthwise loops' paths: 40 channels (two groups of 16 and 8 left over), output
    rows two at a time (stride and dilation 1 down) and one at a time, bands of an odd number of
    rows, blocks of four outputs and fewer along rows 13 and 7 wide, windows of 3x3 and 5x5 (their
    own loops) and 2x3, 7x7/2 and a dilated 3x3 (the general one), asymmetric pads wider than the
    window's half, all read through the zero-padded rows."""
    from onnxruntime.quantization import QuantType
    rng = np.random.default_rng(20261127)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    nodes = [
        N("Conv", ["x", "u1", "a1"], ["e1"]), N("Relu", ["e1"], ["e2"]),
        N("Conv", ["e2", "u2", "a2"], ["d1"], group=40, pads=[1, 1, 1, 1]), N("Clip", ["d1", "lo", "hi"], ["d2"]),
        N("Conv", ["d2", "u3", "a3"], ["d3"], group=40, kernel_shape=[5, 5], pads=[2, 1, 2, 3]),
        N("Conv", ["d3", "u4", "a4"], ["d4"], group=40, kernel_shape=[2, 3], pads=[0, 1, 1, 1]),
        N("Conv", ["d4", "u5", "a5"], ["d5"], group=40, dilations=[2, 2], pads=[2, 2, 2, 2]), N("Relu", ["d5"], ["d6"]),
        N("Conv", ["d6", "u6", "a6"], ["y"], group=40, kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3]),
    ]
    initializers = {
        "u1": normal(40, 5, 1, 1, scale=0.4), "a1": normal(40, scale=0.1), "u2": normal(40, 1, 3, 3, scale=0.3),
        "a2": normal(40, scale=0.1), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32),
        "u3": normal(40, 1, 5, 5, scale=0.2), "a3": normal(40, scale=0.1), "u4": normal(40, 1, 2, 3, scale=0.4),
        "a4": normal(40, scale=0.1), "u5": normal(40, 1, 3, 3, scale=0.3), "a5": normal(40, scale=0.1),
        "u6": normal(40, 1, 7, 7, scale=0.15), "a6": normal(40, scale=0.1),
    }
    return ("qdq_depthwise_paths_int8", nodes, {"x": normal(2, 5, 15, 13)}, initializers, QuantType.QInt8)


def grouped_case():
    """The integer grouped convolutions: groups of 4 channels (ResNeXt's first stage), of 16 with
    stride 2 (RegNetX's), of 8 dilated (RegNetY's), two groups of 24 inputs and 20 outputs each (a
    tile and 4 channels) with asymmetric pads, a grouped 1x1 of 3 outputs a group, a depthwise layer
    with three outputs per channel (a group of one input channel), and two groups of 8 outputs; a
    plane of 11x9, then 6x5. Groups of fewer than 16 outputs run several to a product
    (IntegerConvolutionKernel.merged): products of 4 groups, 2, 5 and the last of 3, 5 and the last
    of 4, and one product of both groups of 8 (a window row of whole positions). One image, so that
    on 2 threads the layers' own work is shared (a batch runs an image a thread)."""
    from onnxruntime.quantization import QuantType
    rng = np.random.default_rng(20261128)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    nodes = [
        N("Conv", ["x", "g1", "h1"], ["e1"]), N("Relu", ["e1"], ["e2"]),
        N("Conv", ["e2", "g2", "h2"], ["f1"], group=12, pads=[1, 1, 1, 1]), N("Relu", ["f1"], ["f2"]),
        N("Conv", ["f2", "g3", "h3"], ["f3"], group=3, strides=[2, 2], pads=[1, 1, 1, 1]), N("Relu", ["f3"], ["f4"]),
        N("Conv", ["f4", "g4", "h4"], ["f5"], group=6, dilations=[2, 2], pads=[2, 2, 2, 2]),
        N("Conv", ["f5", "g5", "h5"], ["f6"], group=2, pads=[0, 1, 1, 0]), N("Relu", ["f6"], ["f7"]),
        N("Conv", ["f7", "g6", "h6"], ["f8"], group=8),
        N("Conv", ["f8", "g7", "h7"], ["f9"], group=24, pads=[1, 1, 1, 1]),
        N("Conv", ["f9", "g8", "h8"], ["y"], group=2, pads=[1, 1, 1, 1]),
    ]
    initializers = {
        "g1": normal(48, 6, 1, 1, scale=0.4), "h1": normal(48, scale=0.1), "g2": normal(48, 4, 3, 3, scale=0.3),
        "h2": normal(48, scale=0.1), "g3": normal(48, 16, 3, 3, scale=0.12), "h3": normal(48, scale=0.1),
        "g4": normal(48, 8, 3, 3, scale=0.15), "h4": normal(48, scale=0.1), "g5": normal(40, 24, 2, 2, scale=0.15),
        "h5": normal(40, scale=0.1), "g6": normal(24, 5, 1, 1, scale=0.3), "h6": normal(24, scale=0.1),
        "g7": normal(72, 1, 3, 3, scale=0.3), "h7": normal(72, scale=0.1), "g8": normal(16, 36, 3, 3, scale=0.1),
        "h8": normal(16, scale=0.1),
    }
    return ("qdq_grouped_int8", nodes, {"x": normal(1, 6, 19, 17)}, initializers, QuantType.QInt8)


def build_quantized(name, nodes, inputs, initializers, activation_type, quant_format="QDQ"):
    """quant_format QOperator also reduces the weights' range to 7 bits (see quantized_cases)."""
    import tempfile
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    model = float_model(name, nodes, inputs, initializers, 17, [nodes[-1].output[0]])

    class Calibration(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(7)
            self.batches = iter([{k: rng.standard_normal(v.shape).astype(np.float32) for k, v in inputs.items()} for _ in range(8)])

        def get_next(self):
            return next(self.batches, None)

    with tempfile.TemporaryDirectory() as scratch:
        source, target = pathlib.Path(scratch) / "float.onnx", pathlib.Path(scratch) / "qdq.onnx"
        onnx.save(model, source)
        quantize_static(str(source), str(target), Calibration(), quant_format=QuantFormat[quant_format], per_channel=True,
                        reduce_range=quant_format == "QOperator",
                        activation_type=activation_type, weight_type=QuantType.QInt8)
        quantized = onnx.load(target)
    outputs = [o.name for o in quantized.graph.output]
    results = plain_outputs(quantized, outputs, inputs)
    directory = save_case(name, quantized, inputs, results)
    scales = {i.name: numpy_helper.to_array(i) for i in quantized.graph.initializer}
    last = {n.output[0]: n for n in quantized.graph.node if n.op_type == "DequantizeLinear"}
    for i, output in enumerate(outputs):
        np.save(directory / f"step_{i}.npy", np.asarray(scales[last[output].input[1]], dtype=np.float32).reshape(1))


def f32(a):
    return np.asarray(a, np.float32)


def Q(x, s, z, y):
    return N("QuantizeLinear", [x, s, z], [y])


def D(x, s, z, y, **kw):
    return N("DequantizeLinear", [x, s, z], [y], **kw)


def save_handmade(name, nodes, init, shape, rng, outputs, steps, spread=None):
    """A hand-written QDQ case: opset 17, input x of `shape` (drawn from `rng`; with `spread`, image
    i's values times spread[i][0] plus spread[i][1]), ONNX Runtime's plain outputs as expected, and
    each output's tolerance step."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None) for y in outputs],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in init.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    inputs = {"x": rng.standard_normal(tuple(shape)).astype(np.float32)}
    for image, (scale, shift) in enumerate(spread or []):
        inputs["x"][image] = inputs["x"][image] * scale + shift
    directory = save_case(name, model, inputs, plain_outputs(model, outputs, inputs))
    for index, step in enumerate(steps):
        np.save(directory / f"step_{index}.npy", np.array([step], np.float32))


def handmade_quantized_case():
    """A QDQ model written by hand for what quantize_static never writes: a Clip with only its
    lower bound between a convolution and its QuantizeLinear, an Add of two quantized activations
    that broadcasts ([1,8,6,6] + [1,8,1,1]), and a MatMul of a quantized 3-D activation (not a
    matrix product of rows: it stays on the float kernels)."""
    rng = np.random.default_rng(20261125)
    init = {
        "s0": f32(0.02), "z0": np.uint8(128), "s1": f32(0.03), "z1": np.uint8(0), "s2": f32(0.01), "z2": np.uint8(120),
        "s3": f32(0.04), "z3": np.uint8(100), "s4": f32(0.05), "z4": np.uint8(90), "s5": f32(0.03), "z5": np.uint8(128),
        "w1": rng.integers(-127, 128, (8, 4, 3, 3)).astype(np.int8), "w1s": f32(rng.uniform(0.002, 0.01, 8)),
        "w1z": np.zeros(8, np.int8), "w2": rng.integers(-127, 128, (8, 4, 1, 1)).astype(np.int8),
        "w2s": f32(rng.uniform(0.01, 0.05, 8)), "w2z": np.zeros(8, np.int8), "lo": f32(0.0),
        "shape": np.array([1, 8, 36], np.int64), "w3": rng.integers(-127, 128, (36, 5)).astype(np.int8), "w3s": f32(0.01),
        "w3z": np.int8(0),
    }
    nodes = [
        Q("x", "s0", "z0", "q0"), D("q0", "s0", "z0", "d0"),
        D("w1", "w1s", "w1z", "w1f", axis=0), N("Conv", ["d0", "w1f"], ["c1"], pads=[1, 1, 1, 1]),
        N("Clip", ["c1", "lo", ""], ["r1"]), Q("r1", "s1", "z1", "q1"), D("q1", "s1", "z1", "d1"),
        N("GlobalAveragePool", ["d0"], ["g"]), Q("g", "s2", "z2", "qg"), D("qg", "s2", "z2", "dg"),
        D("w2", "w2s", "w2z", "w2f", axis=0), N("Conv", ["dg", "w2f"], ["c2"]), Q("c2", "s3", "z3", "q2"), D("q2", "s3", "z3", "d2"),
        N("Add", ["d1", "d2"], ["a"]), Q("a", "s4", "z4", "qa"), D("qa", "s4", "z4", "y1"),
        N("Reshape", ["d1", "shape"], ["m"]), Q("m", "s5", "z5", "qm"), D("qm", "s5", "z5", "dm"),
        D("w3", "w3s", "w3z", "w3f"), N("MatMul", ["dm", "w3f"], ["y2"]),
    ]
    # y1 is quantized (its scale is a step); y2 is a float product, compared to 1e-3.
    save_handmade("qdq_handmade_edges", nodes, init, [1, 4, 6, 6], rng, ["y1", "y2"], steps=[0.05, 1e-3])


def handmade_maxpool_case():
    """MaxPool between levels of other scales and zero points than its input's (as `kiroku quantize`
    writes them; quantize_static gives both sides the input's): one to a finer scale, where levels
    clamp, one with ceil_mode to a coarser scale."""
    rng = np.random.default_rng(20261127)
    weights = lambda *shape: rng.integers(-127, 128, shape).astype(np.int8)
    init = {
        "s0": f32(0.02), "z0": np.uint8(128), "s1": f32(0.03), "z1": np.uint8(100), "s2": f32(0.02), "z2": np.uint8(90),
        "s3": f32(0.04), "z3": np.uint8(110), "s4": f32(0.05), "z4": np.uint8(128), "s5": f32(0.05), "z5": np.uint8(120),
        "w1": weights(18, 4, 3, 3), "w1s": f32(rng.uniform(0.002, 0.01, 18)), "w1z": np.zeros(18, np.int8),
        "w2": weights(18, 18, 1, 1), "w2s": f32(rng.uniform(0.002, 0.01, 18)), "w2z": np.zeros(18, np.int8),
        "w3": weights(5, 18, 1, 1), "w3s": f32(rng.uniform(0.002, 0.01, 5)), "w3z": np.zeros(5, np.int8),
    }
    nodes = [
        Q("x", "s0", "z0", "q0"), D("q0", "s0", "z0", "d0"),
        D("w1", "w1s", "w1z", "w1f", axis=0), N("Conv", ["d0", "w1f"], ["c1"], pads=[1, 1, 1, 1]), Q("c1", "s1", "z1", "q1"),
        D("q1", "s1", "z1", "d1"), N("MaxPool", ["d1"], ["m1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        Q("m1", "s2", "z2", "q2"), D("q2", "s2", "z2", "d2"),
        D("w2", "w2s", "w2z", "w2f", axis=0), N("Conv", ["d2", "w2f"], ["c2"]), Q("c2", "s3", "z3", "q3"), D("q3", "s3", "z3", "d3"),
        N("MaxPool", ["d3"], ["m2"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1), Q("m2", "s4", "z4", "q4"), D("q4", "s4", "z4", "d4"),
        D("w3", "w3s", "w3z", "w3f", axis=0), N("Conv", ["d4", "w3f"], ["c3"]), Q("c3", "s5", "z5", "q5"), D("q5", "s5", "z5", "y"),
    ]
    save_handmade("qdq_maxpool_rescaled", nodes, init, [1, 4, 9, 11], rng, ["y"], steps=[0.05])


def handmade_depthwise_to_float_case():
    """Depthwise convolutions whose outputs are floats (no QuantizeLinear after them, as before a
    HardSwish or a squeeze-excitation in MobileNetV3): 40 channels (two groups of 16 and 8 left
    over), a 3x3 at stride 1 (output rows two at a time) read by a HardSwish, and a 5x5 at stride 2
    with asymmetric pads (one row at a time) as an output of its own; and a grouped convolution
    writing floats (8 groups of 5 inputs and 3 outputs: products of 5 groups and of 3). One image,
    so that on 2 threads the layers' own work is shared (a batch runs an image a thread)."""
    rng = np.random.default_rng(20261129)
    weights = lambda *shape: rng.integers(-127, 128, shape).astype(np.int8)
    init = {
        "s0": f32(0.02), "z0": np.int8(0), "s1": f32(0.03), "z1": np.int8(-20), "s2": f32(0.05), "z2": np.int8(5),
        "w1": weights(40, 5, 1, 1), "w1s": f32(rng.uniform(0.002, 0.01, 40)), "w1z": np.zeros(40, np.int8),
        "w2": weights(40, 1, 3, 3), "w2s": f32(rng.uniform(0.002, 0.01, 40)), "w2z": np.zeros(40, np.int8),
        "b2": f32(rng.normal(0, 0.1, 40)),
        "w3": weights(40, 1, 5, 5), "w3s": f32(rng.uniform(0.002, 0.01, 40)), "w3z": np.zeros(40, np.int8),
        "w4": weights(24, 5, 3, 3), "w4s": f32(rng.uniform(0.002, 0.01, 24)), "w4z": np.zeros(24, np.int8),
    }
    nodes = [
        Q("x", "s0", "z0", "q0"), D("q0", "s0", "z0", "d0"),
        D("w1", "w1s", "w1z", "w1f", axis=0), N("Conv", ["d0", "w1f"], ["c1"]), Q("c1", "s1", "z1", "q1"), D("q1", "s1", "z1", "d1"),
        D("w2", "w2s", "w2z", "w2f", axis=0), N("Conv", ["d1", "w2f", "b2"], ["c2"], group=40, pads=[1, 1, 1, 1]),
        N("HardSwish", ["c2"], ["y1"]), Q("c2", "s2", "z2", "q2"), D("q2", "s2", "z2", "d2"),
        D("w3", "w3s", "w3z", "w3f", axis=0), N("Conv", ["d2", "w3f"], ["y2"], group=40, strides=[2, 2], pads=[2, 1, 1, 2]),
        D("w4", "w4s", "w4z", "w4f", axis=0), N("Conv", ["d2", "w4f"], ["y3"], group=8, pads=[1, 1, 1, 1]),
    ]
    save_handmade("qdq_depthwise_to_float", nodes, init, [1, 5, 23, 21], rng, ["y1", "y2", "y3"], steps=[1e-3, 1e-3, 1e-3])


def handmade_gated_case():
    """Integer convolutions that compute a SiLU (Sigmoid and Mul, as exporters write it) or a
    HardSwish before their store, as in EfficientNet and MobileNetV3: a 3x3 stride-2 stem (24
    channels: a whole tile and one of 8) and a pointwise layer of 40 channels to levels; a
    depthwise 3x3 whose SiLU output is read twice (quantized for its squeeze-excitation's pooling,
    and as floats by the excitation's Mul), so it stays floats; the excitation's 1x1 layers on a
    pooled position (SiLU to levels, its Mul reading the Sigmoid first, then Sigmoid); a depthwise
    5x5 at stride 2 with HardSwish to levels; and a pointwise layer of 20 channels with HardSwish
    to floats, an output of the model. One image, so that on 2 threads the layers' own work is shared."""
    rng = np.random.default_rng(20261130)
    weights = lambda *shape: rng.integers(-127, 128, shape).astype(np.int8)
    scales = lambda count: f32(rng.uniform(0.002, 0.01, count))
    init = {
        "s0": f32(0.02), "z0": np.int8(0), "s1": f32(0.02), "z1": np.int8(-100), "s2": f32(0.03), "z2": np.int8(-90),
        "s3": f32(0.02), "z3": np.int8(-110), "s4": f32(0.0137), "z4": np.int8(-80), "s5": f32(0.02), "z5": np.int8(-100),
        "s6": f32(0.01), "z6": np.int8(-5), "s7": f32(0.04), "z7": np.int8(3), "s8": f32(0.03), "z8": np.int8(-100),
        "w1": weights(24, 5, 3, 3), "w1s": scales(24), "w1z": np.zeros(24, np.int8), "b1": f32(rng.normal(0, 0.3, 24)),
        "w2": weights(40, 24, 1, 1), "w2s": scales(40), "w2z": np.zeros(40, np.int8), "b2": f32(rng.normal(0, 0.3, 40)),
        "w3": weights(40, 1, 3, 3), "w3s": scales(40), "w3z": np.zeros(40, np.int8), "b3": f32(rng.normal(0, 0.3, 40)),
        "w4": weights(8, 40, 1, 1), "w4s": scales(8), "w4z": np.zeros(8, np.int8), "b4": f32(rng.normal(0, 0.3, 8)),
        "w5": weights(40, 8, 1, 1), "w5s": scales(40), "w5z": np.zeros(40, np.int8), "b5": f32(rng.normal(0, 0.3, 40)),
        "w6": weights(16, 40, 1, 1), "w6s": scales(16), "w6z": np.zeros(16, np.int8),
        "w7": weights(40, 1, 5, 5), "w7s": scales(40), "w7z": np.zeros(40, np.int8), "b7": f32(rng.normal(0, 0.3, 40)),
        "w8": weights(20, 24, 1, 1), "w8s": scales(20), "w8z": np.zeros(20, np.int8), "b8": f32(rng.normal(0, 0.3, 20)),
    }

    def conv(x, w, out, bias=None, **kw):
        return [D(w, w + "s", w + "z", w + "f", axis=0), N("Conv", [x, w + "f"] + ([bias] if bias else []), [out], **kw)]

    def silu(x, out, gate_first=False):
        return [N("Sigmoid", [x], [x + "_sigmoid"]), N("Mul", [x + "_sigmoid", x] if gate_first else [x, x + "_sigmoid"], [out])]

    nodes = [
        Q("x", "s0", "z0", "q0"), D("q0", "s0", "z0", "d0"),
        *conv("d0", "w1", "c1", "b1", strides=[2, 2], pads=[1, 1, 1, 1]), *silu("c1", "a1"), Q("a1", "s1", "z1", "q1"), D("q1", "s1", "z1", "d1"),
        *conv("d1", "w2", "c2", "b2"), N("HardSwish", ["c2"], ["a2"]), Q("a2", "s2", "z2", "q2"), D("q2", "s2", "z2", "d2"),
        *conv("d2", "w3", "c3", "b3", group=40, pads=[1, 1, 1, 1]), *silu("c3", "a3"), Q("a3", "s3", "z3", "q3"), D("q3", "s3", "z3", "d3"),
        N("GlobalAveragePool", ["d3"], ["g"]), Q("g", "s4", "z4", "qg"), D("qg", "s4", "z4", "dg"),
        *conv("dg", "w4", "c4", "b4"), *silu("c4", "a4", gate_first=True), Q("a4", "s5", "z5", "q4"), D("q4", "s5", "z5", "d4"),
        *conv("d4", "w5", "c5", "b5"), N("Sigmoid", ["c5"], ["e"]), N("Mul", ["e", "a3"], ["m"]), Q("m", "s6", "z6", "qm"), D("qm", "s6", "z6", "dm"),
        *conv("dm", "w6", "c6"), Q("c6", "s7", "z7", "q6"), D("q6", "s7", "z7", "y1"),
        *conv("d2", "w7", "c7", "b7", group=40, strides=[2, 2], pads=[2, 2, 2, 2]), N("HardSwish", ["c7"], ["a7"]),
        Q("a7", "s8", "z8", "q7"), D("q7", "s8", "z8", "y2"),
        *conv("d1", "w8", "c8", "b8"), N("HardSwish", ["c8"], ["y3"]),
    ]
    save_handmade("qdq_gated", nodes, init, [1, 5, 23, 21], rng, ["y1", "y2", "y3"], steps=[0.04, 0.03, 1e-3])


def excitation_graph(seed, channels, gate, product, more_weights=()):
    """The squeeze-excitation graph both excitation cases share: x quantized, a pointwise layer of
    `channels` with SiLU, its activation rounded (q1 / d1), pooled, a 1x1 layer with Relu, a 1x1
    layer through `gate` (a node from c3 to e), the Mul `product` (its inputs), quantized, and a
    pointwise layer to y; scales s0-s5 and weights w1-w4, then `more_weights` (name, shape), all
    drawn from `seed` in that order. Returns the nodes, the initializers, the rng and conv()."""
    rng = np.random.default_rng(seed)
    weights = lambda *shape: rng.integers(-127, 128, shape).astype(np.int8)
    scales = lambda count: f32(rng.uniform(0.002, 0.01, count))
    init = {
        "s0": f32(0.02), "z0": np.int8(0), "s1": f32(0.02), "z1": np.int8(-100), "s2": f32(0.015), "z2": np.int8(-60),
        "s3": f32(0.02), "z3": np.int8(-128), "s4": f32(0.01), "z4": np.int8(-20), "s5": f32(0.05), "z5": np.int8(0),
    }
    for name, shape in [("w1", (channels, 6)), ("w2", (8, channels)), ("w3", (channels, 8)), ("w4", (12, channels)), *more_weights]:
        init.update({name: weights(*shape, 1, 1), name + "s": scales(shape[0]), name + "z": np.zeros(shape[0], np.int8),
                     "b" + name[1:]: f32(rng.normal(0, 0.3, shape[0]))})

    def conv(x, w, out, bias):
        return [D(w, w + "s", w + "z", w + "f", axis=0), N("Conv", [x, w + "f", bias], [out])]

    nodes = [
        Q("x", "s0", "z0", "q0"), D("q0", "s0", "z0", "d0"),
        *conv("d0", "w1", "c1", "b1"), N("Sigmoid", ["c1"], ["c1_sigmoid"]), N("Mul", ["c1", "c1_sigmoid"], ["a1"]),
        Q("a1", "s1", "z1", "q1"), D("q1", "s1", "z1", "d1"),
        N("GlobalAveragePool", ["d1"], ["g"]), Q("g", "s2", "z2", "qg"), D("qg", "s2", "z2", "dg"),
        *conv("dg", "w2", "c2", "b2"), N("Relu", ["c2"], ["r2"]), Q("r2", "s3", "z3", "q2"), D("q2", "s3", "z3", "d2"),
        *conv("d2", "w3", "c3", "b3"), gate, N("Mul", product, ["m"]),
        Q("m", "s4", "z4", "qm"), D("qm", "s4", "z4", "dm"),
        *conv("dm", "w4", "c4", "b4"), Q("c4", "s5", "z5", "q4"), D("q4", "s5", "z5", "y"),
    ]
    return nodes, init, rng, conv


def handmade_excitation_case():
    """A squeeze-excitation between integer layers, on a batch of 2 (run image by image, each its own excitation):
    a pointwise layer with SiLU to floats (the excitation's Mul reads them unrounded, its pooling
    quantized), the excitation (pooling, a 1x1 layer with Relu, a 1x1 layer, Sigmoid), its Mul with
    the scale first, then the QuantizeLinear and a pointwise layer of levels: the Mul joins that
    Quantize step, multiplying by the image's factors as it quantizes."""
    nodes, init, rng, _ = excitation_graph(20261128, 24, N("Sigmoid", ["c3"], ["e"]), ["e", "a1"])
    # The two images far apart, so that each image's factors differ from the other's.
    save_handmade("qdq_excitation_batch2", nodes, init, [2, 6, 9, 11], rng, ["y"], steps=[0.05], spread=[(1, -1.5), (2, 1.5)])


def handmade_excitation_levels_case():
    """A squeeze-excitation whose Mul reads the rounded activation its pooling reads (as `kiroku
    quantize` writes it), on a batch of 2 far apart: a pointwise layer with SiLU to levels of 45
    channels (32, 8 and 5) over 9x11 positions, their pooling (each channel's mean of
    the levels), the excitation (1x1 layers, Relu, HardSigmoid), its Mul with the levels first,
    then a pointwise layer; beside it a Mul of the same levels by one factor per position (a
    ReduceMean over channels through a Sigmoid: not one per channel), quantized for a second
    pointwise layer."""
    nodes, init, rng, conv = excitation_graph(20261129, 45, N("HardSigmoid", ["c3"], ["e"], alpha=1 / 6, beta=0.5), ["d1", "e"],
                                              more_weights=[("w5", (5, 45))])
    init.update({"s6": f32(0.012), "z6": np.int8(-30)})
    nodes += [
        N("ReduceMean", ["d1"], ["spatial_mean"], axes=[1], keepdims=1), N("Sigmoid", ["spatial_mean"], ["spatial"]),
        N("Mul", ["spatial", "d1"], ["n"]), Q("n", "s6", "z6", "qn"), D("qn", "s6", "z6", "dn"),
        *conv("dn", "w5", "c5", "b5"), Q("c5", "s5", "z5", "q5"), D("q5", "s5", "z5", "y2"),
    ]
    save_handmade("qdq_excitation_levels_batch2", nodes, init, [2, 6, 9, 11], rng, ["y", "y2"], steps=[0.05, 0.05],
                  spread=[(1, -1.5), (2, 1.5)])


def handmade_direct_case():
    """Integer convolutions that run direct (ungrouped windows over whole quads of channels, read in
    place from padded rows of bytes, six positions at a time across output rows): a 3x3 of 8
    channels to 20 (a whole tile and one of 4; 1395 positions, three past the last six), a 3x3 at
    stride 2 with asymmetric pads and a SiLU to 36 levels (a pair of tiles and an odd one), a
    dilated 3x3 writing floats, a 5x5 of 36 channels to 12 without padding, a 2x2 at strides 16 and
    22 (4 positions: fewer than six), and a 3x3 at stride 10 to 96 levels (3 rows of 5: on 2 threads
    its three tile pairs split in two parts, each padding the band). One image, so that on 2
    threads its bands are shared out."""
    rng = np.random.default_rng(20261202)
    weights = lambda *shape: rng.integers(-127, 128, shape).astype(np.int8)
    scales = lambda count: f32(rng.uniform(0.002, 0.01, count))
    init = {
        "s0": f32(0.02), "z0": np.int8(0), "s1": f32(0.03), "z1": np.int8(-10), "s2": f32(0.02), "z2": np.int8(-100),
        "s4": f32(0.04), "z4": np.uint8(120), "s5": f32(0.05), "z5": np.int8(7),
        "w1": weights(20, 8, 3, 3), "w1s": scales(20), "w1z": np.zeros(20, np.int8), "b1": f32(rng.normal(0, 0.3, 20)),
        "w2": weights(36, 20, 3, 3), "w2s": scales(36), "w2z": np.zeros(36, np.int8), "b2": f32(rng.normal(0, 0.3, 36)),
        "w3": weights(16, 8, 3, 3), "w3s": scales(16), "w3z": np.zeros(16, np.int8),
        "w4": weights(12, 36, 5, 5), "w4s": scales(12), "w4z": np.zeros(12, np.int8), "b4": f32(rng.normal(0, 0.3, 12)),
        "w5": weights(8, 8, 2, 2), "w5s": scales(8), "w5z": np.zeros(8, np.int8),
        "w6": weights(96, 8, 3, 3), "w6s": scales(96), "w6z": np.zeros(96, np.int8), "s6": f32(0.05), "z6": np.int8(-3),
    }

    def conv(x, w, out, bias=None, **kw):
        return [D(w, w + "s", w + "z", w + "f", axis=0), N("Conv", [x, w + "f"] + ([bias] if bias else []), [out], **kw)]

    # Each layer reads the input's levels or at most two layers' (a value a hair from a rounding
    # boundary may land a level over, and a float output reading it would move by a weight's worth).
    nodes = [
        Q("x", "s0", "z0", "q0"), D("q0", "s0", "z0", "d0"),
        *conv("d0", "w1", "c1", "b1", pads=[1, 1, 1, 1]), Q("c1", "s1", "z1", "q1"), D("q1", "s1", "z1", "d1"),
        *conv("d1", "w2", "c2", "b2", strides=[2, 2], pads=[0, 1, 2, 0]), N("Sigmoid", ["c2"], ["g2"]), N("Mul", ["c2", "g2"], ["a2"]),
        Q("a2", "s2", "z2", "q2"), D("q2", "s2", "z2", "y1"),
        *conv("d0", "w3", "y2", dilations=[2, 2], pads=[2, 2, 2, 2]),
        *conv("y1", "w4", "c4", "b4"), Q("c4", "s4", "z4", "q4"), D("q4", "s4", "z4", "y3"),
        *conv("d0", "w5", "c5", strides=[16, 22]), Q("c5", "s5", "z5", "q5"), D("q5", "s5", "z5", "y4"),
        *conv("d0", "w6", "c6", strides=[10, 10]), Q("c6", "s6", "z6", "q6"), D("q6", "s6", "z6", "y5"),
    ]
    save_handmade("qdq_direct_windows", nodes, init, [1, 8, 31, 45], rng, ["y1", "y2", "y3", "y4", "y5"],
                  steps=[0.02, 1e-3, 0.04, 0.05, 0.05])


def handmade_maxpool_padding_case():
    """A MaxPool window wholly in padding (taps at columns -1 and 3 of 3), rescaled: its max is a
    float -inf, whose level is the lowest at either scale."""
    rng = np.random.default_rng(20261128)
    init = {
        "s0": f32(0.02), "z0": np.int8(0), "s1": f32(0.04), "z1": np.int8(0), "s2": f32(0.05), "z2": np.int8(0),
        "s3": f32(0.05), "z3": np.int8(3),
        "w1": rng.integers(-127, 128, (6, 3, 3, 3)).astype(np.int8), "w1s": f32(rng.uniform(0.002, 0.01, 6)), "w1z": np.zeros(6, np.int8),
        "w2": rng.integers(-127, 128, (4, 6, 1, 1)).astype(np.int8), "w2s": f32(rng.uniform(0.002, 0.01, 4)), "w2z": np.zeros(4, np.int8),
    }
    nodes = [
        Q("x", "s0", "z0", "q0"), D("q0", "s0", "z0", "d0"),
        D("w1", "w1s", "w1z", "w1f", axis=0), N("Conv", ["d0", "w1f"], ["c1"], pads=[1, 1, 1, 1]), Q("c1", "s1", "z1", "q1"),
        D("q1", "s1", "z1", "d1"), N("MaxPool", ["d1"], ["m1"], kernel_shape=[1, 2], dilations=[1, 4], pads=[0, 1, 0, 1]),
        Q("m1", "s2", "z2", "q2"), D("q2", "s2", "z2", "d2"),
        D("w2", "w2s", "w2z", "w2f", axis=0), N("Conv", ["d2", "w2f"], ["c2"]), Q("c2", "s3", "z3", "q3"), D("q3", "s3", "z3", "y"),
    ]
    save_handmade("qdq_maxpool_padding", nodes, init, [1, 3, 5, 3], rng, ["y"], steps=[0.05])


def bad_quantized_models(directory):
    """Quantized models the engine must refuse: an integer output, a 32-bit quantization."""
    directory.mkdir(parents=True, exist_ok=True)
    def model(zero_point, name):
        q = N("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")
        graph = helper.make_graph([q], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                                  [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(zero_point.dtype), None)],
                                  [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(zero_point, "z")])
        result = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        result.ir_version = 10
        onnx.save(result, directory / f"{name}.onnx")
    model(np.array(128, np.uint8), "qdq_integer_output")
    model(np.array(0, np.int32), "qdq_int32")


if __name__ == "__main__":
    if QUANTIZED:
        for spec in quantized_cases():
            build_quantized(*spec)
        handmade_quantized_case()
        handmade_maxpool_case()
        handmade_maxpool_padding_case()
        handmade_depthwise_to_float_case()
        handmade_gated_case()
        handmade_excitation_case()
        handmade_excitation_levels_case()
        handmade_direct_case()
        bad_quantized_models(OUT.parent / "BadModels")
        print(f"make-inference-fixtures: {len(quantized_cases()) + 8} quantized cases in {OUT}")
        sys.exit(0)
    if LARGE:
        for spec in large_cases():
            build(*spec)
        print(f"make-inference-fixtures: {len(large_cases())} large cases in {OUT}")
        sys.exit(0)
    for spec in CASES:
        build(*spec)
    # Weights in a file beside the model, as torch.onnx.export(dynamo=True) writes them.
    external = OUT / "external_weights_conv"
    model = onnx.load(external / "model.onnx")
    (external / "model.onnx.data").unlink(missing_ok=True)  # onnx appends to an existing data file
    onnx.save_model(model, external / "model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=0)
    bad_models(OUT.parent / "BadModels")
    print(f"make-inference-fixtures: {len(CASES)} cases in {OUT}, refused models in {OUT.parent / 'BadModels'}")
