#!/usr/bin/env python3
"""Exports the model zoo of `make zoo`: Keras applications with random weights (and a small vision
transformer built from Keras layers) through tf2onnx at the given opsets, NCHW input, logits out.

    python3 scripts/zoo-export.py OUT_DIR [--opsets 13,17] [--models ResNet50,...]

Needs tensorflow-cpu and tf2onnx (scripts/zoo.sh installs them in a virtual environment).
Writes OUT_DIR/<Model>_opset<N>.onnx; a model that fails to export is reported and skipped.
"""
import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402
import tf2onnx  # noqa: E402
import onnx  # noqa: E402

# ConvNeXtTiny is left out: tf2onnx 1.17 cannot convert Keras 3's ConvNeXt (StatefulPartitionedCall
# and Erfc remain), and VGG16 too: folding its constants takes more than this machine's 24 GB; Keras 3
# has no RegNet. The zoo's ConvNeXt, VGG16 and RegNet are PyTorch's (scripts/zoo-export-torch.py).
KERAS = ["ResNet50", "DenseNet121", "Xception", "MobileNetV3Large", "EfficientNetV2B0", "NASNetMobile", "InceptionResNetV2"]


def vision_transformer():
    """A small ViT: 16x16 patches of a 224x224 image, class token, 4 blocks of 192 wide, 3 heads."""
    inputs = tf.keras.Input((224, 224, 3))
    patches = tf.keras.layers.Conv2D(192, 16, strides=16)(inputs)
    tokens = tf.keras.layers.Reshape((196, 192))(patches)

    class ClassToken(tf.keras.layers.Layer):
        def build(self, shape):
            self.token = self.add_weight(shape=(1, 1, shape[-1]), initializer="random_normal")
            self.position = self.add_weight(shape=(1, shape[1] + 1, shape[-1]), initializer="random_normal")

        def call(self, x):
            token = tf.repeat(self.token, tf.shape(x)[0], axis=0)
            return tf.concat([token, x], axis=1) + self.position

    x = ClassToken()(tokens)
    for _ in range(4):
        y = tf.keras.layers.LayerNormalization(epsilon=1e-6)(x)
        y = tf.keras.layers.MultiHeadAttention(num_heads=3, key_dim=64)(y, y)
        x = x + y
        y = tf.keras.layers.LayerNormalization(epsilon=1e-6)(x)
        # The tanh form: tf2onnx 1.17 writes Keras 3's exact GELU with Erfc, which is no ONNX operator.
        y = tf.keras.layers.Dense(768, activation=lambda v: tf.keras.activations.gelu(v, approximate=True))(y)
        y = tf.keras.layers.Dense(192)(y)
        x = x + y
    x = tf.keras.layers.LayerNormalization(epsilon=1e-6)(x)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(1000)(x[:, 0]))


def build(name):
    tf.keras.utils.set_random_seed(0)
    if name == "ViT":
        return vision_transformer()
    kwargs = {"weights": None, "input_shape": (224, 224, 3), "classifier_activation": None}
    if name.startswith(("MobileNetV3", "EfficientNetV2", "ConvNeXt")):
        kwargs["include_preprocessing"] = False
    return getattr(tf.keras.applications, name)(**kwargs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--opsets", default="13,17")
    parser.add_argument("--models", default=",".join(KERAS + ["ViT"]))
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        model = build(name)
        function = tf.function(lambda x: model(x, training=False))
        spec = (tf.TensorSpec((None, 224, 224, 3), tf.float32, name="input"),)
        for opset in map(int, args.opsets.split(",")):
            target = out / f"{name}_opset{opset}.onnx"
            start = time.time()
            try:
                proto, _ = tf2onnx.convert.from_function(function, input_signature=spec, opset=opset, inputs_as_nchw=["input"])
            except Exception as error:  # noqa: BLE001 - reported, the zoo goes on
                print(f"zoo-export: {name} opset {opset} failed: {type(error).__name__}: {error}", file=sys.stderr)
                continue
            onnx.save(proto, target)
            print(f"zoo-export: {target.name}: {len(proto.graph.node)} nodes, {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
