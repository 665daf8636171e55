#!/usr/bin/env python3
"""A legacy inference service joined to Kiroku's queue through SQL only.

The reference for teams whose own service (a GPU fleet, a Python process on ONNX Runtime) should
serve a Kiroku pool beside Kiroku's workers during the move: it registers itself with its
instance type, claims jobs with kiroku.claim, classifies them with its own pipeline (ONNX Runtime,
Pillow decoding the full image), and finishes each with kiroku.complete_many or kiroku.fail. It
never reports a speed: the advisor measures the pool from its jobs' busy time.

    python3 legacy_worker.py --database-url postgresql://... --pool gpu \\
        --model models/efficientnet-lite0.onnx --instance-type g4dn.xlarge --file-root /srv/photos

Needs: psycopg (3), onnxruntime, numpy, pillow.
"""
import argparse
import hashlib
import io
import json
import os
import pathlib
import socket
import sys
import time
import uuid
from urllib.parse import unquote, urlparse

import numpy as np
import onnxruntime
import psycopg
from PIL import Image, ImageOps

MAX_PIXELS = 100_000_000


class Refused(Exception):
    """A job this service cannot run; its message is a category, never bytes of the content."""


def load_model(path):
    """One session, loaded once and reused for every job; the sidecar's identity with the file's hash."""
    sidecar = json.loads(pathlib.Path(path).with_suffix(".json").read_text())
    sidecar["sha256"] = hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session, sidecar


def image_bytes(inline, uri, root):
    """The job's image: inline bytes, or a file:// URI inside --file-root (nothing else)."""
    if inline is not None:
        return bytes(inline)
    parsed = urlparse(uri)
    if parsed.scheme != "file" or root is None:
        raise Refused("unsupported image uri scheme")
    path = pathlib.Path(unquote(parsed.path)).resolve()
    if not path.is_relative_to(root):
        raise Refused("image uri outside the file root")
    try:
        return path.read_bytes()
    except OSError:
        raise Refused("image file unreadable")


def preprocess(data, sidecar, decode):
    """Decode (in full, or at a reduced DCT scale as Kiroku does), upright, centre crop, bicubic
    resize, normalise: NCHW float32."""
    spec, pre = sidecar["input"], sidecar["preprocessing"]
    width, height = spec["width"], spec["height"]
    try:
        image = Image.open(io.BytesIO(data))
        if image.width * image.height > MAX_PIXELS:
            raise Refused("image too large")
        if decode == "reduced":
            # libjpeg's DCT scaling: the smallest scale whose shorter side still covers the crop.
            need = int(np.ceil(min(width, height) / pre["crop_fraction"]))
            image.draft("RGB", (need, need))
        image = ImageOps.exif_transpose(image).convert("RGB")
    except Refused:
        raise
    except Exception:
        raise Refused("not an image")
    side = int(pre["crop_fraction"] * min(image.size))
    left, top = (image.width - side) // 2, (image.height - side) // 2
    image = image.crop((left, top, left + side, top + side)).resize((width, height), Image.BICUBIC)
    pixels = np.asarray(image, dtype=np.float32)
    pixels = (pixels - np.array(pre["mean"], np.float32)) / np.array(pre["std"], np.float32)
    return pixels.transpose(2, 0, 1)[None]


def classify(session, sidecar, tensor, top=5):
    logits = session.run(None, {sidecar["input"]["name"]: tensor})[0][0].astype(np.float64)
    scores = np.exp(logits - logits.max())
    scores /= scores.sum()
    best = np.argsort(-scores)[:top]
    food_score = float(scores[sidecar["food_classes"]].sum())
    return {
        "top": [{"index": int(i), "label": sidecar["labels"][i], "score": float(scores[i])} for i in best],
        "food": food_score >= 0.5,
        "food_score": food_score,
        "model": {"name": sidecar["name"], "sha256": sidecar["sha256"]},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("KIROKU_DATABASE_URL"), help="a login role granted kiroku_worker")
    parser.add_argument("--pool", default="gpu")
    parser.add_argument("--model", required=True, help="an ONNX file with its .json sidecar beside it")
    parser.add_argument("--instance-type", help="recorded with kiroku.report_worker_speed, so the advisor prices the pool")
    parser.add_argument("--file-root", help="file:// images are read only under this directory")
    parser.add_argument("--decode", choices=["full", "reduced"], default="full")
    parser.add_argument("--lease", type=int, default=60, help="seconds; a job must finish within it (no heartbeat here)")
    parser.add_argument("--idle-exit", type=float, help="stop after this many seconds without a job")
    args = parser.parse_args()
    if not args.database_url:
        parser.error("give --database-url or set KIROKU_DATABASE_URL")

    session, sidecar = load_model(args.model)
    root = pathlib.Path(args.file_root).resolve() if args.file_root else None
    worker_id = f"legacy-{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.database_url, autocommit=True, application_name="kiroku-legacy-example") as db:
        db.execute("SELECT kiroku.register_worker(%s, %s, %s, %s, %s, %s)",
                   (worker_id, socket.gethostname(), args.pool, sidecar["name"], os.cpu_count(), "legacy-example"))
        if args.instance_type:
            db.execute("SELECT kiroku.report_worker_speed(%s, %s, NULL)", (worker_id, args.instance_type))
        idle_since, done = time.monotonic(), 0
        try:
            while True:
                job = db.execute("SELECT job_id, lease_token, image, image_uri FROM kiroku.claim(%s, %s, 1, make_interval(secs => %s))",
                                 (worker_id, args.pool, args.lease)).fetchone()
                if job is None:
                    if args.idle_exit is not None and time.monotonic() - idle_since > args.idle_exit:
                        break
                    time.sleep(0.2)
                    continue
                job_id, token, inline, uri = job
                try:
                    result = classify(session, sidecar, preprocess(image_bytes(inline, uri, root), sidecar, args.decode))
                    result["decode"] = args.decode
                    db.execute("SELECT * FROM kiroku.complete_many(%s, %s, %s::jsonb[])", ([job_id], [token], [json.dumps(result)]))
                except Refused as refusal:
                    db.execute("SELECT kiroku.fail(%s, %s, %s, false)", (job_id, token, str(refusal)))
                done += 1
                idle_since = time.monotonic()
        finally:
            db.execute("SELECT kiroku.deregister_worker(%s)", (worker_id,))
    print(f"{worker_id}: {done} jobs finished in pool {args.pool}", file=sys.stderr)


if __name__ == "__main__":
    main()
