import Foundation

/// The JSON beside a model (models/NAME.json): its input, the preprocessing it was trained with,
/// its labels and the classes that count as food.
public struct ModelSidecar: Codable, Sendable {
    public struct Input: Codable, Sendable {
        public var name: String
        public var layout: String
        public var channelOrder: String
        public var height: Int
        public var width: Int

        /// Describes a model input.
        public init(name: String, layout: String, channelOrder: String, height: Int, width: Int) {
            self.name = name
            self.layout = layout
            self.channelOrder = channelOrder
            self.height = height
            self.width = width
        }
    }

    public struct Preprocessing: Codable, Sendable {
        /// The centred square crop's side as a fraction of the shorter side (0.875 = 224/256).
        public var cropFraction: Double
        public var resize: String
        public var mean: [Float]
        public var std: [Float]

        /// Describes a preprocessing recipe.
        public init(cropFraction: Double, resize: String, mean: [Float], std: [Float]) {
            self.cropFraction = cropFraction
            self.resize = resize
            self.mean = mean
            self.std = std
        }
    }

    public var name: String
    public var input: Input
    public var preprocessing: Preprocessing
    public var labels: [String]
    public var foodClasses: [Int]

    /// Describes a model in code rather than from its JSON.
    public init(name: String, input: Input, preprocessing: Preprocessing, labels: [String], foodClasses: [Int]) {
        self.name = name
        self.input = input
        self.preprocessing = preprocessing
        self.labels = labels
        self.foodClasses = foodClasses
    }

    /// Reads the sidecar next to a model: FILE.onnx → FILE.json.
    public init(model url: URL) throws {
        let sidecar = url.deletingPathExtension().appendingPathExtension("json")
        let data: Data
        do {
            data = try Data(contentsOf: sidecar)
        } catch {
            throw ImageError(.unsupported, "model \(url.lastPathComponent) has no sidecar \(sidecar.lastPathComponent) (input size, preprocessing, labels): \(error.localizedDescription)")
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        self = try decoder.decode(ModelSidecar.self, from: data)
        guard input.layout == "NCHW", ["RGB", "BGR"].contains(input.channelOrder), preprocessing.resize == "bicubic",
              preprocessing.mean.count == 3, preprocessing.std.count == 3, preprocessing.cropFraction > 0, preprocessing.cropFraction <= 1 else {
            throw ImageError(.unsupported, "sidecar \(sidecar.lastPathComponent): Kiroku supports NCHW input, RGB or BGR, bicubic resize, three means and deviations, a crop fraction in (0, 1]")
        }
    }

    /// One label with its probability.
    public struct Prediction: Sendable, Equatable, Codable {
        public let index: Int
        public let label: String
        public let score: Float
    }

    /// The top predictions and the food verdict for one image's logits.
    public struct Classification: Sendable, Equatable {
        /// The best `top` classes, best first, with softmax probabilities.
        public let top: [Prediction]
        /// The probability mass on the food classes.
        public let foodScore: Float
        /// True when foodScore is at least one half.
        public var food: Bool { foodScore >= 0.5 }
    }

    /// Softmax over the logits, the top `top` classes, and the food score.
    public func classify<Logits: Collection>(logits: Logits, top: Int) -> Classification where Logits.Element == Float {
        let values = Array(logits)
        let largest = values.max() ?? 0
        let exponentials = values.map { exp($0 - largest) }
        let total = exponentials.reduce(0, +)
        let probabilities = exponentials.map { $0 / total }
        let best = probabilities.indices.sorted { probabilities[$0] > probabilities[$1] }.prefix(top)
        return Classification(
            top: best.map { Prediction(index: $0, label: $0 < labels.count ? labels[$0] : "class \($0)", score: probabilities[$0]) },
            foodScore: foodClasses.filter { $0 < probabilities.count }.map { probabilities[$0] }.reduce(0, +))
    }
}
