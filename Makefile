# Kiroku: make setup | build | release | demo | test | test-all | image | container-test | bench | zoo | zoo-heldout | zoo-heldout2 | zoo-heldout3 | clean
SHELL := /bin/bash
SWIFT ?= swift
FUZZ_SEEDS := Tests/KirokuInferenceTests/Fixtures Tests/KirokuInferenceTests/BadModels
IMAGE_FUZZ_SEEDS := .kiroku/vision-fixtures/cases .kiroku/vision-fixtures/photos
APT_PACKAGES := pkg-config libpq-dev libopenblas-dev libturbojpeg0-dev postgresql python3 libonnx-testdata chromium \
	buildah debootstrap prometheus
IMAGE ?= localhost/kiroku:latest

.PHONY: setup build release model demo test test-all image container-test fuzz bench zoo zoo-heldout zoo-heldout2 zoo-heldout3 clean

## setup: install the system packages the build and tests need (skips what is installed)
setup:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	else echo "setup: all of $(APT_PACKAGES) installed"; fi
	@python3 -c 'import kubernetes_validate' 2>/dev/null || python3 -m pip install --quiet kubernetes-validate
	@python3 -c 'import psycopg' 2>/dev/null || python3 -m pip install --quiet psycopg

## build: debug build of everything
build:
	$(SWIFT) build

## release: optimised build (benchmarks, deployment)
release:
	$(SWIFT) build -c release

## demo: the README's first command: the move in small (legacy pool beside a Kiroku pool, shadow, plan), all removed
demo:
	scripts/demo.sh

## model: the default model (EfficientNet-Lite0, real ImageNet weights) in models/
model:
	scripts/make-model.sh

# A crash in the tests prints its message and the crashed thread's frames last, without the
# registers and loaded images that would push them out of a CI log's tail.
TEST_BACKTRACE = enable=yes,threads=crashed,registers=none,images=none

## test: build, start a throwaway PostgreSQL, run every test against it, remove it
test: setup model
	scripts/fetch-photos.sh .kiroku/photos
	python3 scripts/make-vision-fixtures.py models/efficientnet-lite0.onnx .kiroku/photos .kiroku/vision-fixtures
	python3 scripts/make-inference-fixtures.py --large .kiroku/inference-fixtures-large
	$(SWIFT) build --build-tests
	mkdir -p .build/test-attachments
	SWIFT_BACKTRACE=$(TEST_BACKTRACE) scripts/with-postgres.sh $(SWIFT) test --skip-build --attachments-path .build/test-attachments
	python3 scripts/validate-deploy.py
	$$($(SWIFT) build --show-bin-path)/kiroku-fuzz-model 3000 $(FUZZ_SEEDS)
	$$($(SWIFT) build --show-bin-path)/kiroku-fuzz-image 2000 $(IMAGE_FUZZ_SEEDS)

## test-all: make test, then the container image built and run against PostgreSQL
test-all: test container-test

## image: the container image (Deploy/Dockerfile) built here with buildah: the runtime base image
## made with debootstrap when no registry answers, the binary built on the host (static Swift
## runtime) and passed in with KIROKU_BUILD=prebuilt, the default model baked in
image: model
	scripts/make-base-image.sh
	$(SWIFT) build -c release --static-swift-stdlib --product kiroku --scratch-path .build-image
	install -D -s -m 0755 .build-image/release/kiroku .build-image/stage/kiroku
	buildah bud --isolation chroot --format docker --quiet -f Deploy/Dockerfile \
		--build-arg KIROKU_BUILD=prebuilt --build-arg BAKE_MODEL=true -t $(IMAGE) .

## container-test: the image's migrate and worker (--once, then SIGTERM) against a test PostgreSQL
container-test: image
	scripts/fetch-photos.sh .kiroku/photos
	scripts/with-postgres.sh scripts/container-test.sh $(IMAGE) .kiroku/photos .build-image/stage/kiroku

## fuzz: 100,000 mutated models through the loader, compiler and kernels, and 100,000 mutated
## JPEGs through decoding and preprocessing (release build)
fuzz:
	$(SWIFT) build -c release --product kiroku-fuzz-model
	$(SWIFT) build -c release --product kiroku-fuzz-image
	$$($(SWIFT) build -c release --show-bin-path)/kiroku-fuzz-model 100000 $(FUZZ_SEEDS)
	$$($(SWIFT) build -c release --show-bin-path)/kiroku-fuzz-image 100000 $(IMAGE_FUZZ_SEEDS)

## zoo: Keras applications (tf2onnx) and PyTorch exports (EfficientNet-Lite0, ConvNeXt, ViT, VGG16, RegNet) against
## ONNX Runtime, outputs and speed (not in CI: installs TensorFlow and PyTorch in .kiroku/zoo-venv)
zoo:
	scripts/zoo.sh

## zoo-heldout: timm's classifiers of 37 other families against ONNX Runtime, outputs and speed (not in CI)
zoo-heldout:
	ZOO_SET=heldout scripts/zoo.sh

## zoo-heldout2: a second held-out set, timm's classifiers of 24 families neither set has (not in CI)
zoo-heldout2:
	ZOO_SET=heldout2 scripts/zoo.sh

## zoo-heldout3: a third held-out set, timm's classifiers of 25 more families, exported by the dynamo exporter (not in CI)
zoo-heldout3:
	ZOO_SET=heldout3 scripts/zoo.sh

## bench: release build, then the benchmark harnesses (figures go to Benchmarks/RESULTS.md)
bench: release model
	scripts/with-postgres.sh Benchmarks/queue-bench.sh | tee .build/bench-queue.md
	scripts/with-postgres.sh Benchmarks/queue-row-cost.sh | tee .build/bench-queue-row-cost.md
	scripts/with-postgres.sh Benchmarks/dashboard-bench.sh | tee .build/bench-dashboard.md
	Benchmarks/inference-bench.sh | tee .build/bench-inference.md
	Benchmarks/decode-bench.sh | tee .build/bench-decode.md
	scripts/with-postgres.sh Benchmarks/worker-bench.sh | tee .build/bench-worker.md
	Benchmarks/simulate.sh | tee .build/bench-simulate.md
	python3 -c "import onnxruntime, PIL, psycopg" 2>/dev/null || python3 -m pip install --quiet onnxruntime numpy pillow "psycopg[binary]"
	python3 Benchmarks/quantize-accuracy.py .build/release/kiroku models/efficientnet-lite0.onnx | tee .build/bench-quantize.md
	python3 Benchmarks/quantize-accuracy.py .build/release/kiroku models/efficientnet-lite0.onnx --crops 2 | tee .build/bench-quantize-crops.md
	Benchmarks/int8-bench.sh | tee .build/bench-int8.md

clean:
	$(SWIFT) package clean
	rm -rf .build .build-image .kiroku
