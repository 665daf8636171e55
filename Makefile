# Kiroku: make setup | build | release | demo | test | bench | clean
SHELL := /bin/bash
SWIFT ?= swift
FUZZ_SEEDS := Tests/KirokuInferenceTests/Fixtures Tests/KirokuInferenceTests/BadModels
IMAGE_FUZZ_SEEDS := .kiroku/vision-fixtures/cases .kiroku/vision-fixtures/photos
APT_PACKAGES := pkg-config libpq-dev libopenblas-dev libturbojpeg0-dev postgresql python3 libonnx-testdata chromium

.PHONY: setup build release model demo test fuzz bench clean

## setup: install the system packages the build and tests need (skips what is installed)
setup:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	else echo "setup: all of $(APT_PACKAGES) installed"; fi
	@python3 -c 'import kubernetes_validate' 2>/dev/null || python3 -m pip install --quiet kubernetes-validate

## build: debug build of everything
build:
	$(SWIFT) build

## release: optimised build (benchmarks, deployment)
release:
	$(SWIFT) build -c release

## demo: the README's first command: a private PostgreSQL, real photos enqueued, the queue shown
demo:
	scripts/demo.sh

## model: the default model (EfficientNet-Lite0, real ImageNet weights) in models/
model:
	scripts/make-model.sh

## test: build, start a throwaway PostgreSQL, run every test against it, remove it
test: model
	scripts/fetch-photos.sh .kiroku/photos
	python3 scripts/make-vision-fixtures.py models/efficientnet-lite0.onnx .kiroku/photos .kiroku/vision-fixtures
	$(SWIFT) build --build-tests
	scripts/with-postgres.sh $(SWIFT) test --skip-build
	python3 scripts/validate-deploy.py
	$$($(SWIFT) build --show-bin-path)/kiroku-fuzz-model 3000 $(FUZZ_SEEDS)
	$$($(SWIFT) build --show-bin-path)/kiroku-fuzz-image 2000 $(IMAGE_FUZZ_SEEDS)

## fuzz: 100,000 mutated models through the loader, compiler and kernels, and 100,000 mutated
## JPEGs through decoding and preprocessing (release build)
fuzz:
	$(SWIFT) build -c release --product kiroku-fuzz-model
	$(SWIFT) build -c release --product kiroku-fuzz-image
	$$($(SWIFT) build -c release --show-bin-path)/kiroku-fuzz-model 100000 $(FUZZ_SEEDS)
	$$($(SWIFT) build -c release --show-bin-path)/kiroku-fuzz-image 100000 $(IMAGE_FUZZ_SEEDS)

## bench: release build, then the benchmark harnesses (figures go to Benchmarks/RESULTS.md)
bench: release model
	scripts/with-postgres.sh Benchmarks/queue-bench.sh | tee .build/bench-queue.md
	Benchmarks/inference-bench.sh | tee .build/bench-inference.md
	Benchmarks/decode-bench.sh | tee .build/bench-decode.md
	scripts/with-postgres.sh Benchmarks/worker-bench.sh | tee .build/bench-worker.md
	Benchmarks/simulate.sh | tee .build/bench-simulate.md

clean:
	$(SWIFT) package clean
	rm -rf .build .kiroku
