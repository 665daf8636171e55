#!/usr/bin/env bash
# Regenerates Sources/KirokuInference/ONNX/onnx.pb.swift from the ONNX schema. Run it only when
# moving to a new ONNX schema; the generated file is committed, so builds never need protoc.
#   - the schema: onnx/onnx.proto from the `onnx` PyPI wheel (ONNX_VERSION)
#   - protoc: Debian's protobuf-compiler (installed if missing)
#   - protoc-gen-swift: built from the swift-protobuf version Package.swift pins
set -euo pipefail
cd "$(dirname "$0")/.."
ONNX_VERSION=${ONNX_VERSION:-1.23.2}
SWIFT_PROTOBUF_VERSION=$(sed -n 's|.*apple/swift-protobuf", exact: "\([0-9.]*\)".*|\1|p' Package.swift)
work=.build-protoc
mkdir -p "$work"

command -v protoc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler; }

if [ ! -x "$work/swift-protobuf/.build/release/protoc-gen-swift" ]; then
    rm -rf "$work/swift-protobuf"
    git clone -q --branch "$SWIFT_PROTOBUF_VERSION" https://github.com/apple/swift-protobuf "$work/swift-protobuf"
    (cd "$work/swift-protobuf" && swift build -c release --product protoc-gen-swift)
fi

python3 -m pip download --quiet --no-deps --only-binary :all: -d "$work/wheels" "onnx==$ONNX_VERSION"
python3 - "$work" <<'PY'
import pathlib, sys, zipfile
work = pathlib.Path(sys.argv[1])
wheel = sorted(work.glob("wheels/onnx-*.whl"))[-1]
with zipfile.ZipFile(wheel) as archive:
    (work / "onnx.proto").write_bytes(archive.read("onnx/onnx.proto"))
PY

protoc --plugin=protoc-gen-swift="$work/swift-protobuf/.build/release/protoc-gen-swift" \
    --proto_path="$work" --swift_opt=Visibility=Internal \
    --swift_out=Sources/KirokuInference/ONNX "$work/onnx.proto"
echo "generated Sources/KirokuInference/ONNX/onnx.pb.swift from onnx $ONNX_VERSION (swift-protobuf $SWIFT_PROTOBUF_VERSION)"
