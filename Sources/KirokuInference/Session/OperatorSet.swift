/// The ONNX operators the engine runs. Some only on values known at load
/// (`ConstantFolding.loadTimeOnly`: the shape computations exporters write).
enum OperatorSet {
    static let supported: Set<String> = Set([
        "Conv", "BatchNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish",
        "Mul", "Add", "Sub", "Div", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "ReduceMean",
        "Concat", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Gemm", "MatMul", "Softmax",
        "Identity", "Dropout", "Constant", "Slice", "Pad", "Expand", "Tile", "Gather", "Split", "LayerNormalization",
        "QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
        "InstanceNormalization", "GroupNormalization", "Resize", "CumSum", "Einsum", "GatherND", "ScatterND", "Col2Im", "LSTM",
        "Sum", "Mean",  // as Add chains (GraphPasses.splitVariadicOperators)
    ]).union(ConstantFolding.loadTimeOnly).union(Activation.operators).union(BinaryKernel.Operation.byOperator.keys)
        .union(ReduceKernel.Mode.byOperator.keys)
}
