// swift-tools-version:6.2
import PackageDescription

// The engine's kernels and the image pipeline are optimised in debug builds too: unoptimised they
// run about 40 times slower, and the tests push thousands of images and tensors through them.
let optimisedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

// The kernels' AVX2 build: the same sources compiled for Haswell and later (AVX2, FMA) on x86-64
// hosts; the engine enters it only after seeing those features on the CPU it runs on.
#if arch(x86_64)
let avx2Build: [SwiftSetting] = [.define("KIROKU_AVX2"), .unsafeFlags(["-O", "-target-cpu", "haswell"])]
// The 8-bit products' VNNI build (KirokuKernelsVNNI: IntegerGemm, ByteGemm, IntegerDepthwise and their VectorMath only), for CPUs
// with AVX-512 VNNI (Intel Cascade Lake and later, AMD Zen 4 and later); entered on those only.
let vnniBuild: [SwiftSetting] = [.define("KIROKU_AVX2"), .define("KIROKU_VNNI"), .unsafeFlags(["-O", "-target-cpu", "cascadelake"])]
// The AVX-512 build (KirokuKernelsAVX512: the activations and the float products, sixteen lanes to a register), entered with the VNNI one.
let avx512Build: [SwiftSetting] = [.define("KIROKU_AVX2"), .define("KIROKU_AVX512"), .unsafeFlags(["-O", "-target-cpu", "skylake-avx512"])]
#else
let avx2Build: [SwiftSetting] = optimisedInDebug
let vnniBuild: [SwiftSetting] = optimisedInDebug
let avx512Build: [SwiftSetting] = optimisedInDebug
#endif

let package = Package(
    name: "kiroku",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "kiroku", targets: ["kiroku"]),
        .library(name: "KirokuQueue", targets: ["KirokuQueue"]),
        .library(name: "KirokuInference", targets: ["KirokuInference"]),
        .library(name: "KirokuVision", targets: ["KirokuVision"]),
        .library(name: "KirokuWorker", targets: ["KirokuWorker"]),
        .library(name: "KirokuAdvisor", targets: ["KirokuAdvisor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Exact: Sources/KirokuInference/ONNX/onnx.pb.swift is generated for this runtime version.
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        // System-library shims: a module map and pkg-config, nothing else.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenBLAS", pkgConfig: "openblas", providers: [.apt(["libopenblas-dev"])]),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        // The VNNI intrinsics as inline functions (C defines them as macros); no library.
        .systemLibrary(name: "CVNNI"),

        // Small helpers every layer shares: SHA-256, a blocking-work queue, Duration conversions, a
        // locked shared value, percentiles.
        .target(name: "KirokuSupport", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),

        // The PostgreSQL side: connection, queue protocol client, migration runner.
        .target(
            name: "KirokuQueue",
            dependencies: ["CLibPQ", "KirokuSupport", .product(name: "Logging", package: "swift-log")],
            plugins: ["EmbedMigrations"]
        ),

        // The ONNX loader and CPU engine: tensors in, tensors out. Knows nothing of queues or images.
        .target(
            name: "KirokuInference",
            dependencies: ["COpenBLAS", "KirokuKernels", "KirokuKernelsAVX2", "KirokuKernelsVNNI", "KirokuKernelsAVX512", "KirokuRandom",
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            swiftSettings: optimisedInDebug
        ),

        // The engine's innermost loops, built twice from one source: portable, and (through the
        // KirokuKernelsAVX2 symbolic link) for AVX2 and FMA, the 8-bit products a third time
        // (KirokuKernelsVNNI's links) for VNNI and the activations and float products a fourth (KirokuKernelsAVX512's) for AVX-512; see KernelSet.
        .target(name: "KirokuKernels", swiftSettings: optimisedInDebug),
        .target(name: "KirokuKernelsAVX2", swiftSettings: avx2Build),
        .target(name: "KirokuKernelsVNNI", dependencies: ["CVNNI"], swiftSettings: vnniBuild),
        .target(name: "KirokuKernelsAVX512", swiftSettings: avx512Build),

        // Image bytes to input tensors: decode, orient, crop, resize, normalise.
        .target(name: "KirokuVision", dependencies: ["CTurboJPEG"], swiftSettings: optimisedInDebug),

        // Seedable random numbers: repeatable fuzzing runs and fleet simulations.
        .target(name: "KirokuRandom"),

        // The operational HTTP endpoints (/metrics, /healthz, /readyz) of long-running processes.
        .target(
            name: "KirokuEndpoints",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // The worker: joins queue, vision and inference; leases, pipeline, metrics, shutdown.
        .target(
            name: "KirokuWorker",
            dependencies: [
                "KirokuQueue",
                "KirokuInference",
                "KirokuVision",
                "KirokuEndpoints",
                "KirokuSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),

        // The advisor: capacity model (Erlang C and the sizing rules), instance catalog, reports.
        .target(
            name: "KirokuAdvisor",
            dependencies: [
                "KirokuQueue",
                "KirokuRandom",
                "KirokuEndpoints",
                "KirokuSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // The command-line interface.
        .executableTarget(
            name: "kiroku",
            dependencies: [
                "KirokuWorker",
                "KirokuAdvisor",
                "KirokuEndpoints",
                "KirokuQueue",
                "KirokuInference",
                "KirokuVision",
                "KirokuSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // Build tooling: Migrations/*.sql compiled into KirokuQueue, so the binary ships its schema.
        .executableTarget(name: "kiroku-embed-migrations", path: "Tools/EmbedMigrations"),
        .plugin(
            name: "EmbedMigrations",
            capability: .buildTool(),
            dependencies: ["kiroku-embed-migrations"]
        ),

        // Benchmark harnesses (run by `make bench`).
        .executableTarget(
            name: "kiroku-queue-bench",
            dependencies: ["KirokuQueue", "KirokuSupport"],
            path: "Benchmarks/QueueBench"
        ),

        // Shared by the test targets: the throwaway database and the kiroku process runner.
        .target(
            name: "KirokuTestSupport",
            dependencies: ["KirokuQueue", "KirokuSupport", .product(name: "Logging", package: "swift-log")],
            path: "Tests/KirokuTestSupport"
        ),
        // Fuzzing: mutated model files through the loader, compiler and kernels (`make fuzz`).
        .target(name: "KirokuFuzzing", dependencies: ["KirokuRandom"], path: "Fuzz/Mutation"),
        .executableTarget(name: "kiroku-fuzz-model", dependencies: ["KirokuInference", "KirokuFuzzing"], path: "Fuzz/ModelFuzzer"),
        // Fuzzing: mutated JPEGs through decoding and preprocessing.
        .executableTarget(name: "kiroku-fuzz-image", dependencies: ["KirokuVision", "KirokuFuzzing"], path: "Fuzz/ImageFuzzer"),

        .testTarget(
            name: "KirokuWorkerTests",
            dependencies: [
                "KirokuWorker",
                "KirokuInference",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                "KirokuQueue",
                "KirokuSupport",
                "KirokuTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "KirokuAdvisorTests",
            dependencies: ["KirokuAdvisor", "KirokuQueue", "KirokuSupport", "KirokuTestSupport", .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        .testTarget(name: "KirokuQueueTests", dependencies: ["KirokuQueue", "KirokuSupport", "KirokuTestSupport"]),
        .testTarget(name: "KirokuVisionTests", dependencies: ["KirokuVision", "KirokuInference", "KirokuSupport", "KirokuTestSupport",
                                                          .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        .testTarget(
            name: "KirokuInferenceTests",
            dependencies: ["KirokuInference", "KirokuKernels", "KirokuKernelsAVX512", "KirokuSupport", "KirokuTestSupport"],
            resources: [.copy("Fixtures"), .copy("QuantizedFixtures"), .copy("BadModels")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
