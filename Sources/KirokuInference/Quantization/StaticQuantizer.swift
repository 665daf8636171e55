import Foundation
import SwiftProtobuf

/// Static quantization of a float ONNX model into standard QDQ form (what ONNX Runtime's
/// `quantize_static` writes, and what both it and Kiroku run): BatchNormalization folded into the
/// convolutions first; per-channel symmetric int8 weights and int32 biases behind
/// DequantizeLinear; a QuantizeLinear → DequantizeLinear pair on every activation that a
/// convolution, Gemm, MatMul, Add or pooling reads, with its range from calibration (Calibrator).
public struct StaticQuantizer {
    /// The 8-bit type activations are rounded to (weights are always symmetric int8).
    public enum ActivationType: String, Sendable, CaseIterable {
        /// 0...255 with a zero point (ONNX Runtime's default for activations).
        case uint8
        /// −128...127 with a zero point.
        case int8
    }

    /// The model's name (its file name).
    public let name: String
    /// The node names and operator types left float.
    public let keptFloat: Set<String>
    /// The activations that get a quantization pair, in graph order.
    public let activations: [String]
    /// The float model with BatchNormalization folded and every weight inline.
    private var proto: Onnx_ModelProto
    private let importer: GraphImporter
    /// The node inputs that read an activation's pair: node index, input index.
    private let readers: [(node: Int, input: Int)]
    /// The constant inputs quantized as weights: node index, input index, per-channel axis.
    private let weights: [(node: Int, input: Int, axis: Int)]
    /// Bias inputs (node index, input index), each scaled by its node's input and weight scales.
    private let biases: [(node: Int, input: Int)]

    /// Reads a float model and plans its quantization: refuses models Kiroku cannot run, models
    /// already quantized, and opsets before 13 (per-channel DequantizeLinear). The nodes named in
    /// `keepingFloat` (by `label`), and every node of an operator type named there, stay float:
    /// their weights and the activations only they read are left as they are.
    public init(contentsOf url: URL, keepingFloat: Set<String> = []) throws(InferenceError) {
        let bytes = try Model.contents(of: url)
        let model = try Model(serialized: bytes, name: url.lastPathComponent, directory: url.deletingLastPathComponent())
        guard model.precision == .float32 else {
            throw InferenceError(.unsupported, "model \(model.name) is already quantized; quantize its float original")
        }
        guard model.opset >= 13 else {
            throw InferenceError(.unsupported, "model \(model.name) uses opset \(model.opset); per-channel int8 weights need opset 13 or later: re-export it")
        }
        let proto: Onnx_ModelProto
        do {
            proto = try Onnx_ModelProto(serializedBytes: bytes)
        } catch {
            throw InferenceError(.malformedModel, "cannot read model \(url.path): \(error)")
        }
        var prepared = Prepared(proto: proto, importer: GraphImporter(model: model.name, opset: model.opset, directory: url.deletingLastPathComponent()))
        try prepared.inlineConstants()
        try prepared.foldBatchNorms()
        try prepared.mergeParallelBranches()
        try self.init(name: model.name, prepared: prepared, keepingFloat: keepingFloat)
    }

    private init(name: String, prepared: Prepared, keepingFloat: Set<String>) throws(InferenceError) {
        let constants = Set(prepared.proto.graph.initializer.map(\.name))
        let quantizable = prepared.proto.graph.node.filter { Self.activationInputs($0, constants: constants) != nil }
        let unknown = keepingFloat.sorted().filter { key in !quantizable.contains { Self.label($0) == key || $0.opType == key } }
        if !unknown.isEmpty {
            throw InferenceError(.unknownNode, "\(unknown.map { "'\($0)'" }.joined(separator: ", ")) \(unknown.count == 1 ? "names" : "name") no quantized node or operator type of model \(name): Conv, Gemm, MatMul, Add and pooling nodes are quantized, named as in the ONNX file (an unnamed node by its first output); BatchNormalization is folded into its Conv, and summed convolution branches are one Conv named as their sum with '#merged'")
        }
        let plan = try prepared.plan(keepingFloat: keepingFloat)
        (self.name, proto, importer, self.keptFloat) = (name, prepared.proto, prepared.importer, keepingFloat)
        (activations, readers, weights, biases) = (plan.activations, plan.readers, plan.weights, plan.biases)
    }

    /// The same model's plan with the nodes or operator types in `names` also kept float.
    public func keepingFloat(_ names: Set<String>) throws(InferenceError) -> StaticQuantizer {
        try StaticQuantizer(name: name, prepared: Prepared(proto: proto, importer: importer), keepingFloat: keptFloat.union(names))
    }

    /// The nodes whose weights are quantized (Conv, Gemm, MatMul), in graph order, by `label`,
    /// with their operator types: what `keepingFloat` can leave float one at a time.
    public var weightedLayers: [(name: String, opType: String)] {
        var seen = Set<String>()
        return weights.map { (Self.label(proto.graph.node[$0.node]), proto.graph.node[$0.node].opType) }.filter { seen.insert($0.0).inserted }
    }

    /// What names a node for `keepingFloat`: its name, or when it has none its first output's.
    static func label(_ node: Onnx_NodeProto) -> String { node.name.isEmpty ? node.output.first ?? "" : node.name }

    /// The float model (BatchNormalization folded) with every planned activation also a graph output,
    /// for the calibrator to read.
    func calibrationModel() throws(InferenceError) -> Model {
        var copy = proto
        let present = Set(proto.graph.input.map(\.name) + proto.graph.output.map(\.name))
        copy.graph.output += activations.filter { !present.contains($0) }.map { name in
            var value = Onnx_ValueInfoProto()
            value.name = name
            return value
        }
        return try Model(serialized: try serialized(copy), name: self.name)
    }

    /// The QDQ model, with each activation's range from `ranges` (every planned activation needs one).
    /// Weights are rounded to ±(2^(weightBits − 1) − 1): 8 bits, or 7 for runtimes whose AVX2
    /// kernels add pairs of uint8 × int8 products in 16 bits and saturate on full-range weights
    /// (ONNX Runtime's `reduce_range`).
    /// With `channelMeans` (each activation's mean per channel, from calibration), each bias
    /// absorbs the mean shift that rounding its node's weights causes (bias correction).
    public func quantized(ranges: [String: ClosedRange<Float>], activationType: ActivationType, weightBits: Int = 8,
                          channelMeans: [String: [Float]] = [:]) throws(InferenceError) -> Data {
        var graph = proto.graph
        var scales: [String: Float] = [:]
        var pairs: [String: [Onnx_NodeProto]] = [:]
        for tensor in activations {
            guard let range = ranges[tensor] else {
                throw InferenceError(.unsupported, "'\(tensor)' of model \(name) held no finite value on the calibration images: it cannot be given a range")
            }
            let (scale, zero) = Self.affine(range, activationType)
            scales[tensor] = scale
            let (scaleName, zeroName) = ("\(tensor)_scale", "\(tensor)_zero_point")
            graph.initializer.append(Self.floats(scaleName, [scale], shape: []))
            graph.initializer.append(activationType == .uint8 ? Self.integers(zeroName, [UInt8(zero)], shape: [], type: .uint8)
                                                              : Self.integers(zeroName, [Int8(zero)], shape: [], type: .int8))
            pairs[tensor] = [Self.node("QuantizeLinear", "\(tensor)_quantize", [tensor, scaleName, zeroName], ["\(tensor)_quantized"]),
                             Self.node("DequantizeLinear", "\(tensor)_dequantize", ["\(tensor)_quantized", scaleName, zeroName], ["\(tensor)_dequantized"])]
        }
        // The planned readers read the pair's output; others (and graph outputs) keep the float value.
        for reader in readers { graph.node[reader.node].input[reader.input] += "_dequantized" }
        // Weights and biases: integer constants behind DequantizeLinear nodes, which go first.
        // Each node's weight scales and rounding errors (weights along their axis), by node index;
        // a weight shared by several nodes is quantized once.
        var constantNodes: [Onnx_NodeProto] = [], rounded: [Int: (scales: [Float], error: Tensor, axis: Int)] = [:]
        var made: [String: (scales: [Float], error: Tensor)] = [:]
        let quantizedName = { (weight: (node: Int, input: Int, axis: Int)) -> String in
            let name = proto.graph.node[weight.node].input[weight.input]
            return weight.axis == 0 ? "\(name)_quantized" : "\(name)_quantized_axis\(weight.axis)"
        }
        // A channel whose weights are all but zero (a BatchNormalization scale near zero) would get
        // a scale so small that its bias overflows int32 at the bias scale: its scale is raised
        // until the bias fits twice over (the largest such floor over the nodes sharing a weight),
        // which rounds those weights coarser, the near-zero ones to zero.
        let biasInputs = Dictionary(biases.map { ($0.node, $0.input) }, uniquingKeysWith: { first, _ in first })
        var floors: [String: [Float]] = [:]
        for weight in weights {
            let node = proto.graph.node[weight.node]
            guard let input = biasInputs[weight.node], let inputScale = scales[node.input[0]] else { continue }
            let floor = try floatInitializer(node.input[input]).data.map { abs($0) / (inputScale * Float(1 << 30)) }
            floors[quantizedName(weight)] = floors[quantizedName(weight)].map { zip($0, floor).map { max($0, $1) } } ?? floor
        }
        for weight in weights {
            let name = proto.graph.node[weight.node].input[weight.input]
            let quantizedName = quantizedName(weight)
            graph.node[weight.node].input[weight.input] = "\(quantizedName)_dequantized"
            if let earlier = made[quantizedName] {
                rounded[weight.node] = (earlier.scales, earlier.error, weight.axis)
                continue
            }
            let values = try floatInitializer(name)
            let (integers, channelScales) = Self.symmetric(values, axis: weight.axis, largest: (1 << (weightBits - 1)) - 1,
                                                           floors: floors[quantizedName])
            let inner = values.shape[(weight.axis + 1)...].reduce(1, *)
            let error = Tensor(shape: values.shape, data: values.data.indices.map {
                Float(integers[$0]) * channelScales[($0 / inner) % channelScales.count] - values.data[$0]
            })
            made[quantizedName] = (channelScales, error)
            rounded[weight.node] = (channelScales, error, weight.axis)
            graph.initializer.append(Self.integers(quantizedName, integers, shape: values.shape, type: .int8))
            graph.initializer.append(Self.floats("\(quantizedName)_scale", channelScales, shape: [channelScales.count]))
            graph.initializer.append(Self.integers("\(quantizedName)_zero_point", [Int8](repeating: 0, count: channelScales.count),
                                                   shape: [channelScales.count], type: .int8))
            constantNodes.append(Self.node("DequantizeLinear", "\(quantizedName)_dequantize",
                                           [quantizedName, "\(quantizedName)_scale", "\(quantizedName)_zero_point"], ["\(quantizedName)_dequantized"],
                                           axis: weight.axis))
        }
        for bias in biases {
            let node = proto.graph.node[bias.node], name = node.input[bias.input]
            guard let inputScale = scales[node.input[0]], let rounding = rounded[bias.node] else { continue }
            var values = try floatInitializer(name)
            if let means = channelMeans[node.input[0]] {
                let group = Int(node.attribute.first { $0.name == "group" }?.i ?? 1)
                let shift = Self.outputShift(rounding.error, axis: rounding.axis, groups: group, inputMeans: means)
                if shift.count == values.count { values.data = zip(values.data, shift).map { $0 - $1 } }
            }
            let biasScales = rounding.scales.map { $0 * inputScale }
            guard values.count == biasScales.count else { continue }
            let integers = zip(values.data, biasScales).map { ($0 / $1).rounded(.toNearestOrEven) }
            // A bias beyond int32 at this scale (no floor could hold it) stays float, corrected all
            // the same.
            guard integers.allSatisfy({ abs($0) < Float(Int32.max) }) else {
                let correctedName = "\(name)_corrected_\(bias.node)"
                graph.initializer.append(Self.floats(correctedName, values.data, shape: values.shape))
                graph.node[bias.node].input[bias.input] = correctedName
                continue
            }
            let quantizedName = "\(name)_quantized_\(bias.node)"
            graph.initializer.append(Self.integers(quantizedName, integers.map { Int32($0) }, shape: values.shape, type: .int32))
            graph.initializer.append(Self.floats("\(quantizedName)_scale", biasScales, shape: [biasScales.count]))
            constantNodes.append(Self.node("DequantizeLinear", "\(quantizedName)_dequantize", [quantizedName, "\(quantizedName)_scale"],
                                           ["\(quantizedName)_dequantized"], axis: 0))
            graph.node[bias.node].input[bias.input] = "\(quantizedName)_dequantized"
        }
        graph.node = constantNodes + graph.input.flatMap { pairs[$0.name] ?? [] }
            + graph.node.flatMap { node in [node] + node.output.flatMap { pairs[$0] ?? [] } }
        // Float weights no node reads any more go.
        let read = Set(graph.node.flatMap(\.input))
        graph.initializer.removeAll { !read.contains($0.name) }
        graph.input.removeAll { input in !read.contains(input.name) && proto.graph.initializer.contains { $0.name == input.name } }
        var model = proto
        model.graph = graph
        model.producerName = "kiroku quantize"
        return try serialized(model)
    }

    /// Scale and zero point that map `range` (widened to hold zero) onto the type's 256 steps.
    static func affine(_ range: ClosedRange<Float>, _ type: ActivationType) -> (scale: Float, zero: Int) {
        let low = min(range.lowerBound, 0), high = max(range.upperBound, 0)
        var scale = (high - low) / 255
        if !(scale >= Float.leastNormalMagnitude * 256) { scale = 1 }  // a constant tensor: any scale holds it
        let first = type == .uint8 ? 0 : -128
        let zero = Int((Float(first) - low / scale).rounded(.toNearestOrEven))
        return (scale, min(max(zero, first), first + 255))
    }

    /// Symmetric int8 values (−largest...largest) with one scale per slice along `axis`, each at
    /// least its entry of `floors` when given (one per slice).
    static func symmetric(_ tensor: Tensor, axis: Int, largest integer: Int, floors: [Float]? = nil) -> (values: [Int8], scales: [Float]) {
        let channels = tensor.shape[axis], inner = tensor.shape[(axis + 1)...].reduce(1, *)
        var largest = [Float](repeating: 0, count: channels)
        for (i, value) in tensor.data.enumerated() { largest[(i / inner) % channels] = max(largest[(i / inner) % channels], abs(value)) }
        let bound = Float(integer)
        let scales = largest.indices.map { c in
            let scale = max(largest[c] / bound, floors.flatMap { $0.count == channels ? $0[c] : nil } ?? 0)
            return scale > 0 ? scale : 1
        }
        let values = tensor.data.enumerated().map { i, value in
            Int8(min(max((value / scales[(i / inner) % channels]).rounded(.toNearestOrEven), -bound), bound))
        }
        return (values, scales)
    }

    /// The mean change of each output channel that a weight change `error` causes on inputs with
    /// these channel means (borders, where padding reads zeros, not distinguished): output channels
    /// along `axis` (0: [M, C/groups, taps...], as Conv's; 1: [K, N], as a MatMul's), input channels
    /// along the other. Empty when the shapes do not fit.
    static func outputShift(_ error: Tensor, axis: Int, groups: Int, inputMeans: [Float]) -> [Float] {
        let outputs = error.shape[axis]
        if axis == 1 {
            guard error.shape.count == 2, inputMeans.count == error.shape[0] else { return [] }
            return (0..<outputs).map { n in (0..<error.shape[0]).reduce(Float(0)) { $0 + error.data[$1 * outputs + n] * inputMeans[$1] } }
        }
        guard error.shape.count >= 2, groups > 0, outputs % groups == 0 else { return [] }
        let perGroup = error.shape[1], taps = error.count / outputs / perGroup
        guard inputMeans.count == perGroup * groups else { return [] }
        return (0..<outputs).map { o in
            let first = (o / (outputs / groups)) * perGroup
            var sum: Float = 0
            for c in 0..<perGroup {
                let base = (o * perGroup + c) * taps
                for k in 0..<taps { sum += error.data[base + k] * inputMeans[first + c] }
            }
            return sum
        }
    }

    /// The inputs of `node` that carry activations to quantize when it is an operator the QDQ form
    /// covers (nil otherwise); `constants` are the values that are weights, not activations.
    static func activationInputs(_ node: Onnx_NodeProto, constants: Set<String>) -> [Int]? {
        let variable = node.input.indices.filter { !node.input[$0].isEmpty && !constants.contains(node.input[$0]) }
        switch node.opType {
        case "Conv", "Gemm", "AveragePool", "GlobalAveragePool", "MaxPool":
            return variable.contains(0) ? [0] + (node.opType == "Gemm" ? variable.filter { $0 == 1 } : []) : nil
        case "MatMul": return variable.isEmpty ? nil : variable
        case "Add": return variable.count == 2 ? variable : nil
        default: return nil
        }
    }

    private func floatInitializer(_ name: String) throws(InferenceError) -> Tensor {
        try Prepared(proto: proto, importer: importer).floatInitializer(name)
    }

    private func serialized(_ model: Onnx_ModelProto) throws(InferenceError) -> Data {
        do {
            return try model.serializedData()
        } catch {
            throw InferenceError(.malformedModel, "cannot write model \(name): \(error)")
        }
    }

    static func node(_ op: String, _ name: String, _ inputs: [String], _ outputs: [String], axis: Int? = nil) -> Onnx_NodeProto {
        var node = Onnx_NodeProto()
        node.opType = op
        node.name = name
        node.input = inputs
        node.output = outputs
        if let axis {
            var attribute = Onnx_AttributeProto()
            attribute.name = "axis"
            attribute.type = .int
            attribute.i = Int64(axis)
            node.attribute = [attribute]
        }
        return node
    }

    static func floats(_ name: String, _ values: [Float], shape: [Int]) -> Onnx_TensorProto {
        integers(name, values.map(\.bitPattern), shape: shape, type: .float)
    }

    /// A tensor of raw little-endian values of `type`.
    static func integers<T: FixedWidthInteger>(_ name: String, _ values: [T], shape: [Int], type: Onnx_TensorProto.DataType) -> Onnx_TensorProto {
        var tensor = Onnx_TensorProto()
        tensor.name = name
        tensor.dims = shape.map { Int64($0) }
        tensor.dataType = Int32(type.rawValue)
        tensor.rawData = values.map(\.littleEndian).withUnsafeBytes { Data($0) }
        return tensor
    }
}

/// A model on its way to quantization: the steps before the QDQ form is written.
private struct Prepared {
    var proto: Onnx_ModelProto
    let importer: GraphImporter

    typealias Plan = (activations: [String], readers: [(node: Int, input: Int)], weights: [(node: Int, input: Int, axis: Int)],
                              biases: [(node: Int, input: Int)])

    func plan(keepingFloat: Set<String>) throws(InferenceError) -> Plan {
        let constants = Set(proto.graph.initializer.map(\.name))
        var activations: [String] = [], seen = Set<String>(), readers: [(node: Int, input: Int)] = []
        var weights: [(node: Int, input: Int, axis: Int)] = [], biases: [(node: Int, input: Int)] = []
        let integers = integerValues()
        for (index, node) in proto.graph.node.enumerated() where !keepingFloat.contains(StaticQuantizer.label(node)) && !keepingFloat.contains(node.opType) {
            guard let inputs = StaticQuantizer.activationInputs(node, constants: constants),
                  inputs.allSatisfy({ !integers.contains(node.input[$0]) }) else { continue }
            for input in inputs {
                readers.append((index, input))
                if seen.insert(node.input[input]).inserted { activations.append(node.input[input]) }
            }
            let weight = node.input.count > 1 && constants.contains(node.input[1]) ? node.input[1] : nil
            switch node.opType {
            case "Conv" where weight != nil:
                weights.append((index, 1, 0))
                if node.input.count > 2, constants.contains(node.input[2]) { biases.append((index, 2)) }
            case "Gemm" where weight != nil:
                let transB = node.attribute.first { $0.name == "transB" }?.i ?? 0
                weights.append((index, 1, transB == 0 ? 1 : 0))
                let unscaled = ["alpha", "beta"].allSatisfy { key in node.attribute.first { $0.name == key }.map { $0.f == 1 } ?? true }
                let outputs = try floatInitializer(node.input[1]).shape[transB == 0 ? 1 : 0]
                if unscaled, node.input.count > 2, constants.contains(node.input[2]),
                   case let bias = try floatInitializer(node.input[2]), bias.shape.count == 1, bias.count == outputs { biases.append((index, 2)) }
            case "MatMul" where weight != nil:
                if try floatInitializer(node.input[1]).shape.count == 2 { weights.append((index, 1, 1)) }
            default: break
            }
        }
        // A Mul of an activation rounded for another reader by a value that is not (a squeeze-
        // excitation's scale of what its pooling reads) reads the rounded one, as ONNX Runtime's
        // quantizer has it: integer kernels then scale the levels the layer before wrote, and no
        // float copy of them is made. Only where the product is rounded too (for the layer after
        // it: nothing is gained otherwise), and not a SiLU's Mul of a value by its own gate (one
        // step back; a gate computed further from the value, as a decomposed GELU, is not told apart).
        for (index, node) in proto.graph.node.enumerated() where node.opType == "Mul" && node.input.count == 2 && node.output.first.map(seen.contains) == true {
            let rounded = node.input.indices.filter { seen.contains(node.input[$0]) }
            guard rounded.count == 1, case let other = node.input[1 - rounded[0]], !constants.contains(other), !integers.contains(other),
                  !proto.graph.node.contains(where: { $0.output.contains(other) && $0.input.contains(node.input[rounded[0]]) }) else { continue }
            readers.append((index, rounded[0]))
        }
        return (activations, readers, weights, biases)
    }

    /// Values that are not float: declared so (value_info), integer constants, and what is
    /// computed from them or from shapes and indices (an exporter's shape arithmetic, which
    /// QuantizeLinear must not touch). When unsure, a value counts as integer: it then keeps float
    /// arithmetic, which costs only its quantization.
    func integerValues() -> Set<String> {
        let float = Int32(Onnx_TensorProto.DataType.float.rawValue)
        var integers = Set(proto.graph.valueInfo.filter { $0.type.tensorType.elemType != float }.map(\.name))
        integers.formUnion(proto.graph.initializer.filter { $0.dataType != float }.map(\.name))
        // Operators whose other inputs are shapes, axes or indices: the data input decides.
        let dataFirst: Set = ["Reshape", "Expand", "Tile", "Slice", "Gather", "Pad", "Resize", "Upsample", "Squeeze", "Unsqueeze",
                              "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "Split", "Clip"]
        for node in proto.graph.node {
            let integer = switch node.opType {
            case "Cast": node.attribute.first { $0.name == "to" }.map { $0.i != Int64(float) } ?? true
            case "Shape", "Size", "NonZero", "ArgMax", "ArgMin": true
            case "ConstantOfShape": node.attribute.first { $0.name == "value" }.map { $0.t.dataType != float } ?? false
            case _ where dataFirst.contains(node.opType): node.input.first.map(integers.contains) ?? false
            default: node.input.contains(where: integers.contains)
            }
            if integer { integers.formUnion(node.output) }
        }
        return integers
    }

    /// Constant nodes become initializers, weights kept in external files are read in, and an
    /// Identity of an initializer is read as that initializer: TorchScript's exporter reads weights
    /// it holds once (equal tensors, as the zero weights of a block whose last BatchNormalization
    /// starts at zero) through Identity nodes, which had left those layers float (GERNet-S: four).
    mutating func inlineConstants() throws(InferenceError) {
        for index in proto.graph.initializer.indices where proto.graph.initializer[index].dataLocation == .external {
            proto.graph.initializer[index] = try importer.inlined(proto.graph.initializer[index], what: "initializer '\(proto.graph.initializer[index].name)'")
        }
        var kept: [Onnx_NodeProto] = [], forwarded: [String: String] = [:]
        var initializers = Set(proto.graph.initializer.map(\.name))
        let graphOutputs = Set(proto.graph.output.map(\.name))
        for node in proto.graph.node {
            if node.opType == "Constant", node.output.count == 1, let value = node.attribute.first(where: { $0.name == "value" && $0.hasT }) {
                var tensor = value.t
                tensor.name = node.output[0]
                proto.graph.initializer.append(tensor)
                initializers.insert(tensor.name)
            } else if node.opType == "Identity", node.input.count == 1, node.output.count == 1, !graphOutputs.contains(node.output[0]),
                      let source = forwarded[node.input[0]] ?? (initializers.contains(node.input[0]) ? node.input[0] : nil) {
                forwarded[node.output[0]] = source
            } else {
                kept.append(node)
            }
        }
        for index in kept.indices { kept[index].input = kept[index].input.map { forwarded[$0] ?? $0 } }
        proto.graph.node = kept
    }

    /// Conv → BatchNormalization (constant parameters, the Conv's only reader) becomes one Conv, as
    /// the engine's own pass does: quantization then rounds the folded weights once.
    mutating func foldBatchNorms() throws(InferenceError) {
        var readers: [String: Int] = [:]
        for name in proto.graph.node.flatMap(\.input) + proto.graph.output.map(\.name) { readers[name, default: 0] += 1 }
        let producers = Dictionary(proto.graph.node.enumerated().flatMap { index, node in node.output.map { ($0, index) } },
                                   uniquingKeysWith: { first, _ in first })
        var removed = Set<Int>()
        for (index, bn) in proto.graph.node.enumerated() where bn.opType == "BatchNormalization" && bn.input.count == 5 {
            guard bn.output.dropFirst().allSatisfy({ readers[$0, default: 0] == 0 }), readers[bn.input[0]] == 1,
                  let convIndex = producers[bn.input[0]], proto.graph.node[convIndex].opType == "Conv",
                  case let conv = proto.graph.node[convIndex], conv.input.count >= 2,
                  let weights = try? floatInitializer(conv.input[1]),
                  let parameters = try? bn.input[1...4].map({ name throws(InferenceError) in try floatInitializer(name) }),
                  parameters.allSatisfy({ $0.count == weights.shape[0] }) else { continue }
            let bias = conv.input.count > 2 && !conv.input[2].isEmpty ? try? floatInitializer(conv.input[2]) : nil
            if conv.input.count > 2 && !conv.input[2].isEmpty && bias == nil { continue }  // a bias computed at run time
            let epsilon = bn.attribute.first { $0.name == "epsilon" }?.f ?? 1e-5
            let folded = GraphPasses.batchNormFolded(weights: weights, bias: bias, gamma: parameters[0], beta: parameters[1],
                                                     mean: parameters[2], variance: parameters[3], epsilon: epsilon)
            let (weightName, biasName) = ("\(bn.output[0])_folded_weights", "\(bn.output[0])_folded_bias")
            proto.graph.initializer.append(StaticQuantizer.floats(weightName, folded.weights.data, shape: folded.weights.shape))
            proto.graph.initializer.append(StaticQuantizer.floats(biasName, folded.bias.data, shape: folded.bias.shape))
            if conv.name.isEmpty { proto.graph.node[convIndex].name = conv.output[0] }  // its label stays what the file shows
            proto.graph.node[convIndex].input = [conv.input[0], weightName, biasName]
            proto.graph.node[convIndex].output = [bn.output[0]]
            removed.insert(index)
        }
        proto.graph.node = proto.graph.node.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        dropUnreadInitializers()
    }

    /// Parallel convolution branches summed into one convolution (RepVGG's and MobileOne's
    /// re-parameterisation), by the engine's own pass on the float model: quantization then rounds
    /// each block's merged weights once, and the int8 model runs the one convolution the float one
    /// runs instead of each branch with a rounding of its own. A merged convolution is named as the sum
    /// it replaces with "#merged" after it (unnamed, it is labelled by its output, as the sum was).
    mutating func mergeParallelBranches() throws(InferenceError) {
        // The file's nodes by the names the importer gives them ("#i" for an unnamed one): a
        // model whose names repeat, or with a Constant node left (one the importer takes as a
        // value, not a node), keeps its branches.
        let index = Dictionary(proto.graph.node.enumerated().map { ($1.name.isEmpty ? "#\($0)" : $1.name, $0) }, uniquingKeysWith: { first, _ in first })
        guard index.count == proto.graph.node.count, !proto.graph.node.contains(where: { $0.opType == "Constant" }) else { return }
        var graph = try importer.importGraph(proto.graph)
        let (originals, constants) = (graph.nodes, graph.constants)
        GraphPasses.mergeParallelBranches(&graph)
        // Nothing merged, or names the pass gave clash with the file's (a node's, a value's it overwrote): left as it is.
        guard graph.nodes != originals, Set(graph.nodes.map(\.name)).count == graph.nodes.count,
              constants.allSatisfy({ graph.constants[$0.key] == $0.value }) else { return }
        let before = Dictionary(originals.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var initializers = Set(proto.graph.initializer.map(\.name))
        var written: [Onnx_NodeProto] = []
        for node in graph.nodes {
            var nodeProto: Onnx_NodeProto
            if let original = index[node.name], before[node.name].map({ $0.op == node.op && $0.attributes == node.attributes }) ?? false {
                // As in the file (the same operator and attributes), but for the weights and output a folded Mul or Add gave it.
                nodeProto = proto.graph.node[original]
            } else {
                nodeProto = StaticQuantizer.node(node.op, node.name.hasPrefix("#") ? "" : node.name, [], [])
                nodeProto.attribute = node.attributes.sorted { $0.key < $1.key }.compactMap { key, value in
                    var attribute = Onnx_AttributeProto()
                    attribute.name = key
                    switch value {  // a merged Conv's attributes (group, strides, pads, kernel_shape) are integers
                    case .int(let number): (attribute.type, attribute.i) = (.int, Int64(number))
                    case .ints(let numbers): (attribute.type, attribute.ints) = (.ints, numbers.map { Int64($0) })
                    default: return nil
                    }
                    return attribute
                }
            }
            (nodeProto.input, nodeProto.output) = (node.inputs, node.outputs)
            for input in node.inputs where !initializers.contains(input) {
                guard let tensor = graph.constants[input]?.floatTensor else { continue }
                proto.graph.initializer.append(StaticQuantizer.floats(input, tensor.data, shape: tensor.shape))
                initializers.insert(input)
            }
            written.append(nodeProto)
        }
        proto.graph.node = written
        dropUnreadInitializers()
    }

    /// Initializers no node reads any more (a folded BatchNormalization's, merged branches' weights) are dropped.
    private mutating func dropUnreadInitializers() {
        let read = Set(proto.graph.node.flatMap(\.input)), unread = Set(proto.graph.initializer.map(\.name)).subtracting(read)
        proto.graph.initializer.removeAll { unread.contains($0.name) }
        proto.graph.input.removeAll { unread.contains($0.name) }  // initializers listed as inputs too (older exporters)
    }

    func floatInitializer(_ name: String) throws(InferenceError) -> Tensor {
        guard let proto = proto.graph.initializer.first(where: { $0.name == name }),
              case .float(let tensor) = try importer.constant(proto, what: "initializer '\(name)'") else {
            throw InferenceError(.unsupported, "'\(name)' in model \(importer.model) is not a float initializer")
        }
        return tensor
    }
}
