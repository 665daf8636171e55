#!/usr/bin/env python3
"""torchvision's classifiers for `make zoo`, or timm's (`--library timm`: a set of other families, held out
from the engine's tuning, measured as a user bringing a model would; `--library timm-second` and
`timm-third`: a second and a third such set): each built without pretrained weights (seeded), its
BatchNorm statistics calibrated on the project's photos (a forward pass in training mode with a
cumulative average), then exported by torch.onnx.export's TorchScript exporter at opset 17 (its
default fixed batch of 1) and by the dynamo exporter (opset 18, batch dynamic).

    python3 scripts/zoo-export-torchvision.py PHOTOS_DIR OUT_DIR [--library torchvision|timm|timm-second|timm-third] [--models a,b] [--exporters torchscript,dynamo | dynamo/torchscript]

Needs torch (CPU) and torchvision, and timm for its set (scripts/zoo.sh installs them). Prints one line per file written
and one per export that failed (the zoo goes on).
"""
import argparse
import pathlib
import sys

import torch
from PIL import Image

# PyPI's torchvision is built for CUDA, so its operator library does not load beside the CPU torch;
# the classifiers need none of its operators, but importing it registers two that must exist.
_OPERATORS = torch.library.Library("torchvision", "DEF")
for _name in ("nms", "qnms"):
    _OPERATORS.define(f"{_name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
import torchvision  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

# name: input side. Families: CNNs (ResNet, DenseNet, MobileNet, EfficientNet, RegNet, ShuffleNet,
# SqueezeNet, GoogLeNet, MNASNet), modern CNNs (ConvNeXt), transformers (ViT, Swin) and hybrids (MaxViT).
MODELS = {
    "resnet18": 224, "resnext50_32x4d": 224, "densenet121": 224, "mobilenet_v2": 224, "mobilenet_v3_small": 224,
    "mobilenet_v3_large": 224, "efficientnet_b0": 224, "efficientnet_v2_s": 384, "regnet_y_400mf": 224,
    "regnet_x_800mf": 224, "shufflenet_v2_x1_0": 224, "squeezenet1_1": 224, "googlenet": 224, "mnasnet1_0": 224,
    "convnext_tiny": 224, "swin_t": 224, "swin_v2_t": 256, "maxvit_t": 224, "vit_b_16": 224, "inception_v3": 299,
}

# timm's families that torchvision's set has not (input side from each model's configuration): CNNs
# (DLA, RepVGG, GhostNet, ReXNet, MixNet, FBNet, TinyNet, LCNet, HardCoReNAS, CSPNet, Res2Net, ResNeSt,
# VoVNet, SelecSLS, HGNetV2, MobileOne, RegNetZ, DPN, GENet, StarNet, MobileNetV4, HRNet, ConvNeXt V2,
# EdgeNeXt), transformers and hybrids (DeiT, LeViT, EfficientFormer, MobileViT, PoolFormer, CoaT, PiT,
# XCiT, EfficientViT, FastViT, TinyViT, GCViT, ResMLP).
TIMM = [
    "dla34", "repvgg_a0", "ghostnet_100", "rexnet_100", "mixnet_s", "fbnetc_100", "tinynet_a", "lcnet_100", "hardcorenas_a",
    "cspresnet50", "res2net50_26w_4s", "resnest14d", "ese_vovnet19b_dw", "selecsls42b", "hgnetv2_b0", "mobileone_s0",
    "regnetz_b16", "dpn68", "gernet_s", "starnet_s1", "mobilenetv4_conv_small", "hrnet_w18_small", "convnextv2_atto",
    "edgenext_xx_small", "deit_tiny_patch16_224", "levit_128s", "efficientformer_l1", "mobilevit_xs", "poolformer_s12",
    "coat_lite_tiny", "pit_ti_224", "xcit_nano_12_p16_224", "efficientvit_b0", "fastvit_t8", "tiny_vit_5m_224",
    "gcvit_xxtiny", "resmlp_12_224",
]


# A second held-out set, of families neither set above has, first measured at 5b8334c (22 of 24
# export; HaloNet's Unfold and EVA-02's attention fail in the exporter): ECA-Net, SKNet, GCNet,
# BlurPool ResNet, CSPDarkNet, NF-RegNet, InceptionNeXt, RepGhost, GhostNetV2, RepViT,
# EfficientFormerV2, MobileViTV2, PVT v2, ConViT, CrossViT, CaiT, MLP-Mixer, gMLP, EfficientViT
# (MSRA), MambaOut, Visformer, BoTNet.
TIMM_SECOND = [
    "ecaresnet26t", "skresnet18", "gcresnet33ts", "resnetblur18", "cs3darknet_s", "nf_regnet_b0", "inception_next_atto",
    "repghostnet_050", "ghostnetv2_100", "repvit_m1", "efficientformerv2_s0", "mobilevitv2_050", "pvt_v2_b0", "convit_tiny",
    "crossvit_tiny_240", "cait_xxs24_224", "mixer_s16_224", "gmlp_ti16_224", "efficientvit_m0", "mambaout_femto", "visformer_tiny",
    "sebotnet33ts_256", "halonet26t", "eva02_tiny_patch14_224",
]


# A third held-out set, of families none of the sets above has, chosen and first measured at c37cccd,
# exported by the dynamo exporter (the sets above by TorchScript): Xception, TResNet, Twins, NesT,
# Sequencer, VOLO, CoAtNet, DaViT, FocalNet, Hiera, MViTv2, TNT, LambdaNet, RDNet, SHViT, FasterNet,
# BiT, ViTamin, MobileNetV1, ConvMixer, Next-ViT, BAT (non-local ResNeXt), RoPE ViT, SwiftFormer, CAFormer.
TIMM_THIRD = [
    "xception41", "tresnet_m", "twins_svt_small", "nest_tiny", "sequencer2d_s", "volo_d1_224", "coatnet_nano_rw_224",
    "davit_tiny", "focalnet_tiny_srf", "hiera_tiny_224", "mvitv2_tiny", "tnt_s_patch16_224", "lambda_resnet26t", "rdnet_tiny",
    "shvit_s1", "fasternet_t0", "resnetv2_50x1_bit", "vitamin_small_224", "mobilenetv1_100", "convmixer_1024_20_ks9_p14",
    "nextvit_small", "bat_resnext26ts", "vit_small_patch16_rope_224", "swiftformer_xs", "caformer_s18",
]


def photos(directory, side):
    """The photos as a normalised batch, resized and centre-cropped to side x side."""
    transform = v2.Compose([v2.PILToTensor(), v2.Resize(side, antialias=True), v2.CenterCrop(side), v2.ToDtype(torch.float32, scale=True),
                            v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    images = [transform(Image.open(path).convert("RGB")) for path in sorted(pathlib.Path(directory).glob("*.jpg"))]
    return torch.stack(images)


def created(library, name):
    """The model with random weights, and its input side."""
    torch.manual_seed(0)
    if library == "timm":
        import timm  # after the operators above: timm imports torchvision
        model = timm.create_model(name, pretrained=False)
        return model, model.pretrained_cfg.get("input_size", (3, 224, 224))[-1]
    kwargs = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    return getattr(torchvision.models, name)(weights=None, **kwargs), MODELS[name]


def calibrated(model, batch):
    """The model with BatchNorm statistics measured on `batch`."""
    # torchvision starts some heads at zero (ViT's): all logits would be 0 and every comparison equal.
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and not module.weight.any():
            torch.nn.init.normal_(module.weight, std=0.02)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the calibration passes
    if norms:
        model.train()
        with torch.no_grad():
            # Chunks of at most 8, none of 1 (a BatchNorm after a global pooling needs two values a channel).
            for chunk in batch.tensor_split(-(-len(batch) // 8)):
                model(chunk)
    return model.eval()


def main():
    # The TorchScript exporter has no symbolic for the fused attention of nn.MultiheadAttention's fast path.
    torch.backends.mha.set_fastpath_enabled(False)
    parser = argparse.ArgumentParser()
    parser.add_argument("photos")
    parser.add_argument("out")
    parser.add_argument("--library", choices=["torchvision", "timm", "timm-second", "timm-third"], default="torchvision")
    parser.add_argument("--models", help="comma-separated (default: the library's set above)")
    parser.add_argument("--exporters", default="torchscript,dynamo")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    prefix, names = {"timm": ("timm", TIMM), "timm-second": ("timm", TIMM_SECOND), "timm-third": ("timm", TIMM_THIRD)}.get(args.library, ("tv", list(MODELS)))
    for name in args.models.split(",") if args.models else names:
        try:
            model, side = created("timm" if prefix == "timm" else args.library, name)
            batch = photos(args.photos, side)
            model = calibrated(model, batch)
        except Exception as error:  # noqa: BLE001 - reported, the zoo goes on
            print(f"zoo-export-torchvision: {name} failed to build: {type(error).__name__}: {str(error)[:300]}", file=sys.stderr)
            continue
        for choice in args.exporters.split(","):
            for exporter in choice.split("/"):  # "dynamo/torchscript": TorchScript where dynamo fails
                if exported(model, batch, exporter, out / f"{prefix}_{name}_{exporter}_opset{17 if exporter == 'torchscript' else 18}.onnx"):
                    break


def exported(model, batch, exporter, target):
    """Whether `exporter` wrote `model` to `target` (a failure is reported, and the zoo goes on)."""
    try:
        with torch.no_grad():
            example = batch[:2] if exporter == "dynamo" else batch[:1]  # a batch of 1 would fix the batch axis
            torch.onnx.export(model, (example,), str(target), opset_version=17 if exporter == "torchscript" else 18,
                              dynamo=exporter == "dynamo", input_names=["input"], output_names=["logits"],
                              **({"dynamic_shapes": ({0: torch.export.Dim("batch", max=64)},)} if exporter == "dynamo" else {}))
    except Exception as error:  # noqa: BLE001 - reported, the zoo goes on
        print(f"zoo-export-torchvision: {target.name} failed: {type(error).__name__}: {str(error)[:300]}", file=sys.stderr)
        return False
    print(f"zoo-export-torchvision: {target.name}", flush=True)
    return True


if __name__ == "__main__":
    main()
