/// The engine's own operators and attributes in the graph: what the importer and the passes write
/// and the compiler reads. Their names start with "kiroku.", which no ONNX model can use (the
/// importer refuses any operator outside the standard set), so a model cannot name them.
enum IROperator {
    /// A QuantizeLinear → DequantizeLinear pair as one rounding step (its parameters in the
    /// attribute of the same name).
    static let quantizeDequantize = "kiroku.QuantizeDequantize"
    /// The integer operators of QDQ models (see `GraphPasses.lowerToIntegerOperators`).
    static let integerConvolution = "kiroku.IntegerConvolution"
    static let integerAdd = "kiroku.IntegerAdd"
    static let integerMaxPool = "kiroku.IntegerMaxPool"
    static let quantize = "kiroku.Quantize"
    static let dequantize = "kiroku.Dequantize"
    /// A GlobalAveragePool of dequantized levels: each channel's mean, as floats.
    static let integerMean = "kiroku.IntegerMean"
    /// A Mul of dequantized levels by floats, quantized again: levels scaled (squeeze-excitation).
    static let integerScale = "kiroku.IntegerScale"
}

/// Attributes the engine adds to nodes (see `IROperator`).
enum IRAttribute {
    /// An activation fused into a Conv.
    static let fusedActivation = "kiroku.activation"
    /// The axes a LayerNormalization normalises, where a pass moved them off the trailing ones (a
    /// run of neighbours; ONNX's operator has only `axis`, to the end).
    static let normalizedAxes = "kiroku.normalizedAxes"
    /// Marks a convolution to run on channel-blocked data (see `ConvolutionGroups.channelBlockedChains`).
    static let channelBlocked = "kiroku.channelBlocked"
    /// A QuantizeLinear's output integer range, set by the importer from the zero point's element
    /// type (uint8 when it has none).
    static let quantizedRange = "kiroku.quantizedRange"
    /// The parameters of a fused QuantizeLinear → DequantizeLinear pair (`QuantizationStep`).
    static let quantizeDequantize = IROperator.quantizeDequantize
    /// Attributes of the integer operators: centred int8 weights (int64 constant), per-channel
    /// scale and offset of the requantization, the centred levels an output may take (absent for
    /// a float output), and the mark of a matrix product (2-D input) rather than a convolution.
    static let integerWeights = "kiroku.weights", integerScale = "kiroku.scale", integerOffset = "kiroku.offset"
    static let integerLevels = "kiroku.levels", integerMatrix = "kiroku.matrix"
    /// The centred levels an integer convolution's input may take (its producer's `integerLevels`).
    static let integerInputLevels = "kiroku.inputLevels"
    /// A SiLU or HardSwish an integer convolution computes before storing its output (an
    /// `Activation`), and the output's scale it computes at (1 for a float output).
    static let integerGate = "kiroku.gate", integerGateScale = "kiroku.gateScale"
}
