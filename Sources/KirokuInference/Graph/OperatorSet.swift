/// The ONNX operators the engine runs (Shape, Gather, Constant and Cast only as constant chains
/// folded at load, as converters emit them for reshapes).
enum OperatorSet {
    static let supported: Set<String> = [
        "Conv", "BatchNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish",
        "Mul", "Add", "Sub", "Div", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "ReduceMean",
        "Concat", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Gemm", "MatMul", "Softmax",
        "Identity", "Dropout", "Pad", "Shape", "Gather", "Constant", "Cast",
    ]
}
