import Foundation
@testable import KirokuInference
import Testing

@Suite("Loading and compiling models")
struct LoadingTests {
    func badModel(_ name: String) -> URL {
        Bundle.module.url(forResource: "BadModels", withExtension: nil)!.appendingPathComponent(name)
    }

    func fixture(_ name: String) -> URL {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent(name).appendingPathComponent("model.onnx")
    }

    @Test("refused models get a clear error naming what is wrong", arguments: [
        ("unsupported_operator.onnx", InferenceError.Kind.unsupported, ["operator NonMaxSuppression", "node 'nms_1'", "unsupported_operator.onnx"]),
        ("old_opset.onnx", .unsupported, ["opset 9", "re-export"]),
        ("int_input.onnx", .unsupported, ["INT64", "float32"]),
        ("external_data.onnx", .malformedModel, ["cannot read its external file 'weights.bin'", "initializer 'w'"]),
        ("external_data_escape.onnx", .malformedModel, ["external data '../../../etc/passwd' outside the model's directory"]),
        ("truncated.onnx", .malformedModel, ["truncated.onnx", "not a valid ONNX file"]),
        ("not_onnx.onnx", .malformedModel, ["not_onnx.onnx"]),
        ("empty.onnx", .malformedModel, ["empty"]),
        ("qdq_int32.onnx", .unsupported, ["QuantizeLinear node 'q'", "int8 or uint8"]),
    ])
    func refused(_ file: String, _ kind: InferenceError.Kind, _ phrases: [String]) {
        let error = #expect(throws: InferenceError.self) { try Model(contentsOf: badModel(file)) }
        #expect(error?.kind == kind)
        for phrase in phrases {
            #expect(error?.message.contains(phrase) == true, "\(file): \(error?.message ?? "no error") lacks '\(phrase)'")
        }
    }

    @Test("hostile shape computations are refused when the session is built, naming the node and what is wrong", arguments: [
        ("constant_of_shape_huge.onnx", InferenceError.Kind.invalidShape, ["ConstantOfShape node 'cos'", "engine's limit"]),
        ("tile_huge.onnx", .invalidShape, ["Tile node 'tile'", "too large"]),
        ("range_too_long.onnx", .invalidShape, ["Range node 'range'", "too long"]),
        ("slice_step_zero.onnx", .invalidShape, ["Slice node 'slice'", "a step of 0"]),
        ("integer_overflow.onnx", .invalidShape, ["Mul node 'mul'", "no int64 result"]),
        ("integer_division_by_zero.onnx", .invalidShape, ["Div node 'div'", "no int64 result"]),
        ("gather_out_of_range.onnx", .invalidShape, ["Gather node 'gather'", "index 7 is out of range for 3"]),
        ("equal_at_run_time.onnx", .unsupported, ["Equal node 'eq'", "only on values known at load"]),
        ("cast_to_string.onnx", .unsupported, ["Cast node 'cast'", "STRING"]),
        ("pad_int64_min.onnx", .invalidShape, ["Pad node 'pad'", "out of range"]),
        ("transpose_bad_perm.onnx", .invalidShape, ["Transpose node 'bad'", "perm [5, 0, 1]"]),
        ("tile_empty_huge_axis.onnx", .invalidShape, ["Tile node 'tile'", "too large"]),
        ("concat_of_huge_constants.onnx", .invalidShape, ["Concat node 'concat'", "too large to evaluate at load"]),
        ("conv_of_huge_known_value.onnx", .unsupported, ["Conv node 'conv'", "too large to evaluate at load"]),
        ("range_float_far_below.onnx", .invalidShape, ["Add node"]),
        ("siblings_mismatched_weights.onnx", .invalidShape, ["Conv node 'conv_a'", "do not fit input [1, 3, 4, 4]"]),
        ("qdq_integer_output.onnx", .unsupported, ["QuantizeLinear node 'q'", "QDQ form"]),
        ("einsum_diagonal.onnx", .unsupported, ["Einsum node 'einsum'", "repeats a label"]),
        ("resize_bad_mode.onnx", .unsupported, ["Resize node 'resize'", "mode 'bilinear' is not one of nearest, linear, cubic"]),
        ("resize_huge_scale.onnx", .invalidShape, ["Resize node 'resize'", "over the engine's limit"]),
        ("resize_antialias_huge_window.onnx", .invalidShape, ["Resize node 'resize'", "would read over 2097152 input values"]),
        ("einsum_output_too_large.onnx", .invalidShape, ["Einsum node 'einsum'", "is too large"]),
        ("einsum_empty_operand.onnx", .invalidShape, ["Einsum node 'einsum'", "an operand is empty"]),
        ("batchnorm_training_at_run_time.onnx", .unsupported, ["BatchNormalization node 'bn'", "in training mode is supported only on values known at load"]),
        ("conv1d_weights_on_planes.onnx", .unsupported, ["Conv node 'conv'", "only 2-D convolution", "[1, 3, 1, 4, 4]"]),
        ("conv3d_kernel_over_last_axis.onnx", .unsupported,
         ["Conv node 'conv'", "3-D convolution whose kernel spans one value of the last axis", "got [1, 1, 3, 4, 4]"]),
        ("col2im_columns_mismatched.onnx", .invalidShape, ["Col2Im node 'fold'", "3 columns for 2x2 block positions"]),
        ("conv_huge_pads.onnx", .invalidShape, ["Conv node 'conv'", "over the engine's limit"]),
        ("col2im_huge_pads.onnx", .invalidShape, ["Col2Im node 'fold'", "over the engine's limit"]),
        ("lstm_scaled_tanh.onnx", .unsupported, ["LSTM node 'lstm'", "activation 'ScaledTanh' is not supported"]),
        ("lstm_short_sequence.onnx", .unsupported, ["LSTM node 'lstm'", "sequence_lens [1, 3, 3] other than the sequence's length (3)"]),
        ("lstm_clip_zero.onnx", .unsupported, ["LSTM node 'lstm'", "clip 0.0 must be positive"]),
        ("lstm_batch_first.onnx", .unsupported, ["LSTM node 'lstm'", "layout 1 (batch first) is not supported"]),
    ])
    func hostileShapeComputations(_ file: String, _ kind: InferenceError.Kind, _ phrases: [String]) throws {
        let model = try Model(contentsOf: badModel(file))
        let error = #expect(throws: InferenceError.self) { try InferenceSession(model: model) }
        #expect(error?.kind == kind, "\(file): \(error?.message ?? "no error")")
        for phrase in phrases {
            #expect(error?.message.contains(phrase) == true, "\(file): \(error?.message ?? "no error") lacks '\(phrase)'")
        }
    }

    @Test("a Conv of no output channels before a Mul compiles or is refused; the optimiser does not divide by zero")
    func convWithoutChannels() throws {
        let model = try Model(contentsOf: badModel("conv_no_channels_scaled.onnx"))
        do {
            _ = try InferenceSession(model: model, threads: 1)
        } catch {
            #expect(error.message.contains("conv") || error.message.contains("mul"), "\(error.message)")
        }
    }

    @Test("mismatched shapes fail when the session is built, naming the node")
    func mismatchedShapes() throws {
        let model = try Model(contentsOf: badModel("mismatched_shapes.onnx"))
        let error = #expect(throws: InferenceError.self) { try InferenceSession(model: model) }
        #expect(error?.kind == .invalidShape)
        #expect(error?.message.contains("MatMul node 'mm'") == true)
    }

    @Test("a wrong input shape is refused at run time")
    func wrongInput() throws {
        let session = try InferenceSession(model: try Model(contentsOf: fixture("relu")))
        #expect(throws: InferenceError.self) { try session.run(Tensor(zeros: [1, 2, 3])) }
    }

    @Test("the optimizer folds BatchNormalization and fuses activations and the residual Add into Conv")
    func fusion() throws {
        let convBNRelu = try InferenceSession(model: try Model(contentsOf: fixture("net_conv_bn_relu")))
        #expect(convBNRelu.steps.map(\.operators) == [["Conv"]], "\(convBNRelu.steps)")
        let block = try InferenceSession(model: try Model(contentsOf: fixture("net_mobile_block")))
        // Conv+Clip, Conv+HardSwish, GlobalAveragePool, Conv+Sigmoid, Mul, Conv+Add.
        #expect(block.steps.count == 6, "\(block.steps)")
        #expect(!block.steps.contains { ["Clip", "HardSwish", "Sigmoid"].contains($0.op) })
        #expect(block.steps.last?.operators == ["Conv", "Add"] && block.steps.last?.variant?.hasSuffix(" + residual") == true, "\(block.steps)")
    }

    @Test("converters' Shape → Gather → Concat → Reshape chains are folded away at load")
    func shapeChains() throws {
        let session = try InferenceSession(model: try Model(contentsOf: fixture("shape_gather_reshape_chain")))
        #expect(session.steps.map(\.op) == ["Reshape"], "\(session.steps)")
        #expect(session.outputShapes == [[2, 36]])
    }

    @Test("exporters' shape computations leave only real work: PyTorch's padding chain becomes the convolution's pads")
    func exporterShapeComputations() throws {
        // Shape, Size, Gather, Mul, Sub, ConstantOfShape, Concat, Reshape, a reversing Slice,
        // Transpose and Cast fold at load; the zero Pad they feed is taken into the Conv's pads.
        let padding = try InferenceSession(model: try Model(contentsOf: fixture("torch_static_padding_conv")), threads: 1)
        #expect(padding.steps.count == 1 && padding.steps[0].nodes == ["Conv node '#15 + #16'"], "\(padding.steps)")
        let flatten = try InferenceSession(model: try Model(contentsOf: fixture("shape_where_reduce_flatten")), threads: 1)
        #expect(flatten.steps.map(\.op) == ["Reshape", "Gemm"], "\(flatten.steps)")
        let arithmetic = try InferenceSession(model: try Model(contentsOf: fixture("shape_integer_arithmetic")), threads: 1)
        #expect(arithmetic.steps.map(\.op) == ["Slice"], "\(arithmetic.steps)")
        #expect(arithmetic.outputShapes == [[1, 2, 1, 1]])
        // A Pad that something other than a convolution reads runs as its own step.
        let reflect = try InferenceSession(model: try Model(contentsOf: fixture("pad_constant_value")), threads: 1)
        #expect(reflect.steps.map(\.op) == ["Pad"], "\(reflect.steps)")
    }

    @Test("a batch normalisation after a Linear layer (MatMul and Flatten, or Gemm) folds into its weights; one over a MatMul's rows does not")
    func linearBatchNorm() throws {
        let steps = try InferenceSession(model: try Model(contentsOf: fixture("linear_batchnorm")), threads: 1).steps
        #expect(steps.filter { $0.operators.contains("BatchNormalization") }.count == 1, "\(steps)")
    }

    @Test("a constant scale and shift after a convolution's Relu (HGNetV2's affine blocks) fold into the convolution, the Relu a Clip at the shift")
    func reluAffine() throws {
        let steps = try InferenceSession(model: try Model(contentsOf: fixture("relu_affine_after_conv")), threads: 1).steps.filter { $0.kind == .node }
        // The last Relu is read twice: its Mul and Add stay.
        #expect(steps.map(\.op) == ["Conv", "Conv", "Conv", "Conv", "Conv", "Mul", "Add"], "\(steps)")
    }

    @Test("a positional encoding computed in the graph (Range, Sin, Cos, Expand, then a convolution of it) is computed at load")
    func positionalEncoding() throws {
        let session = try InferenceSession(model: try Model(contentsOf: fixture("positional_encoding_conv")), threads: 1)
        #expect(session.steps.map(\.op) == ["Add"], "\(session.steps)")
    }

    @Test("tf2onnx's NHWC islands lose their Transposes; batch norm as Mul and Add folds into the Conv; HardSwish, HardSigmoid, Swish and GELU chains become one activation (GELU in the MatMul before it)")
    func exporterChains() throws {
        let island = try InferenceSession(model: try Model(contentsOf: fixture("tf2onnx_nhwc_island")), threads: 1).steps
        #expect(!island.contains { ["Transpose", "Add", "Clip", "Div"].contains($0.op) }, "\(island)")
        // Conv (+ HardSwish), ReduceMean, Conv (+ HardSigmoid), the gating Mul, Pad, Concat, Conv.
        #expect(island.count <= 7, "\(island)")
        let swish = try InferenceSession(model: try Model(contentsOf: fixture("conv_swish_chain")), threads: 1).steps
        #expect(swish.map(\.op) == ["Conv"], "\(swish)")
        let gelu = try InferenceSession(model: try Model(contentsOf: fixture("matmul_gelu_erf_chain")), threads: 1).steps
        #expect(gelu.map(\.operators) == [["MatMul", "Gelu"]], "\(gelu)")
    }

    @Test("LayerNorm over channels between Transposes, in both forms, and tf2onnx's moments LayerNorm are one step; dynamo's GELU and tf2onnx's tanh GELU after a Linear layer become one Gelu in its MatMul; expand_as before a Div is dropped")
    func transformerChains() throws {
        func steps(_ name: String) throws -> [String] { try InferenceSession(model: try Model(contentsOf: fixture(name)), threads: 1).steps.map(\.op) }
        let operatorForm = try steps("layernorm_channels_between_transposes")
        #expect(operatorForm == ["LayerNormalization"], "\(operatorForm)")
        // The scale and shift after the recognised chain are one step of their own (the Add joins the Mul's).
        let decomposed = try InferenceSession(model: try Model(contentsOf: fixture("layernorm_torch_decomposed_channels")), threads: 1).steps
        #expect(decomposed.map(\.operators) == [["LayerNormalization"], ["Mul", "Add"]], "\(decomposed)")
        let moments = try steps("tf2onnx_moments_layernorm")
        #expect(moments == ["LayerNormalization", "Mul"], "\(moments)")
        // A bias read through an Identity (TorchScript's shared weights) folds into the MatMul too.
        let identity = try steps("linear_bias_through_identity")
        #expect(identity == ["MatMul"], "\(identity)")
        for name in ["linear_gelu_dynamo_chain", "tf2onnx_tanh_gelu_chain"] {
            let gelu = try InferenceSession(model: try Model(contentsOf: fixture(name)), threads: 1).steps.map(\.operators)
            #expect(gelu == [["MatMul", "Gelu"]], "\(name): \(gelu)")
        }
        // PyTorch's expand_as before a Div (F.normalize): the Div broadcasts, no copy is made.
        let normalize = try steps("normalize_expand_as")
        #expect(normalize == ["ReduceL2", "Clip", "Div"], "\(normalize)")
    }

    @Test("buffers are reused by liveness")
    func memoryPlan() throws {
        let session = try InferenceSession(model: try Model(contentsOf: fixture("net_mobile_block")))
        #expect(session.arenaFloats < session.unplannedFloats)
    }

    @Test("the batch size sets a symbolic batch dimension; a fixed one refuses another")
    func batch() throws {
        let model = try Model(contentsOf: fixture("relu"))
        #expect(try InferenceSession(model: model).inputShape == [1, 4, 9, 9])
        #expect(throws: InferenceError.self) { try InferenceSession(model: model, batchSize: 4) }
    }

    @Test(".npy files round-trip, and bad ones are refused")
    func numpy() throws {
        let tensor = Tensor(shape: [2, 3], data: [1, -2, 3.5, 0, .infinity, -0.25])
        #expect(try NumpyFile.read(NumpyFile.write(tensor)) == tensor)
        let scalar = Tensor(shape: [5], data: [1, 2, 3, 4, 5])
        #expect(try NumpyFile.read(NumpyFile.write(scalar)) == scalar)
        #expect(throws: InferenceError.self) { try NumpyFile.read(Array("not numpy".utf8)) }
        var truncated = NumpyFile.write(tensor)
        truncated.removeLast(3)
        #expect(throws: InferenceError.self) { try NumpyFile.read(truncated) }
    }

    @Test("the CPU budget reads cgroup v2 quotas and affinity masks, not the host's core count")
    func cpuBudget() {
        #expect(CPUBudget.quota(v2: "200000 100000\n") == 2)
        #expect(CPUBudget.quota(v2: "150000 100000") == 2, "1.5 CPUs round up")
        #expect(CPUBudget.quota(v2: "max 100000") == nil, "no limit")
        #expect(CPUBudget.affinityCount(status: "Name:\tkiroku\nCpus_allowed:\t0000000f\n") == 4)
        #expect(CPUBudget.affinityCount(status: "Cpus_allowed:\tff,00000001\n") == 9)
        #expect(CPUBudget.available() >= 1 && CPUBudget.available() <= ProcessInfo.processInfo.activeProcessorCount)
    }
}
