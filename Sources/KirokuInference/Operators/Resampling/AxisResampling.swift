import Foundation

/// How Resize maps an output coordinate back to the input (ONNX's coordinate_transformation_mode),
/// computed in float as ONNX Runtime does.
enum CoordinateTransform: String, CaseIterable {
    case halfPixel = "half_pixel", halfPixelSymmetric = "half_pixel_symmetric", pytorchHalfPixel = "pytorch_half_pixel"
    case alignCorners = "align_corners", asymmetric = "asymmetric", tfHalfPixelForNN = "tf_half_pixel_for_nn"
    case tfCropAndResize = "tf_crop_and_resize"

    /// The input coordinate of output index `x` along an axis of `input` values resized to
    /// `output` with `scale` (output over input, as given or derived); `roi` is the region's start
    /// and end as fractions of the input (tf_crop_and_resize only).
    func original(_ x: Int, scale: Float, input: Int, output: Int, roi: (start: Float, end: Float)) -> Float {
        let x = Float(x), inputLength = Float(input), outputLength = Float(output)
        switch self {
        case .halfPixel: return (x + 0.5) / scale - 0.5
        case .halfPixelSymmetric:
            let adjustment = outputLength / (scale * inputLength), center = inputLength / 2
            return center * (1 - adjustment) + (x + 0.5) / scale - 0.5
        case .pytorchHalfPixel: return output > 1 ? (x + 0.5) / scale - 0.5 : 0
        case .alignCorners: return output == 1 ? 0 : x * (inputLength - 1) / (outputLength - 1)
        case .asymmetric: return x / scale
        case .tfHalfPixelForNN: return (x + 0.5) / scale
        case .tfCropAndResize:
            return output > 1 ? roi.start * (inputLength - 1) + x * (roi.end - roi.start) * (inputLength - 1) / (outputLength - 1)
                : 0.5 * (roi.start + roi.end) * (inputLength - 1)
        }
    }
}

/// Resize's interpolation (ONNX's mode, with nearest_mode and cubic_coeff_a).
enum ResizeFilter: Equatable {
    enum Rounding: String, CaseIterable {
        case roundPreferFloor = "round_prefer_floor", roundPreferCeil = "round_prefer_ceil", floor, ceil
    }

    case nearest(Rounding)
    case linear
    case cubic(a: Float)

    /// Half the filter's width in input steps (at scale 1).
    var support: Float {
        switch self {
        case .nearest: 0.5
        case .linear: 1
        case .cubic: 2
        }
    }

    /// The filter's weight at distance `d` from the sampled coordinate.
    func weight(_ d: Float) -> Float {
        let d = abs(d)
        switch self {
        case .nearest: return d < 0.5 ? 1 : 0
        case .linear: return max(0, 1 - d)
        case .cubic(let a):
            if d <= 1 { return ((a + 2) * d - (a + 3)) * d * d + 1 }
            if d < 2 { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a }
            return 0
        }
    }

    /// The input index nearest `x` under a rounding mode, as ONNX Runtime rounds.
    static func nearest(_ x: Float, _ rounding: Rounding) -> Int {
        switch rounding {
        case .roundPreferFloor: return x == x.rounded(.towardZero) + 0.5 ? Int(x.rounded(.down)) : Int(x.rounded())
        case .roundPreferCeil: return Int(x.rounded())
        case .floor: return Int(x.rounded(.down))
        case .ceil: return Int(x.rounded(.up))
        }
    }
}

/// One axis of a Resize: for each output index, `taps` input indices (clamped into the input) and
/// their weights, fixed at load; and which outputs fall outside the input (tf_crop_and_resize
/// writes its extrapolation value there).
struct AxisResampling: Equatable {
    let input: Int, output: Int
    let taps: Int
    let indices: [Int]
    let weights: [Float]
    let outside: [Bool]

    /// The sampling of an axis. With `antialias` a linear or cubic filter widens by 1 / scale when
    /// it shrinks the axis, its weights normalised; with `excludeOutside` taps outside the input
    /// are dropped and the rest normalised, else they read the nearest edge value.
    init(input: Int, output: Int, scale: Float, filter: ResizeFilter, transform: CoordinateTransform,
         roi: (start: Float, end: Float) = (0, 1), antialias: Bool = false, excludeOutside: Bool = false) {
        let widened = Self.widening(filter: filter, scale: scale, antialias: antialias)
        var lists: [[(index: Int, weight: Float)]] = []
        var outside: [Bool] = []
        for x in 0..<output {
            let original = transform.original(x, scale: scale, input: input, output: output, roi: roi)
            outside.append(transform == .tfCropAndResize && (original < 0 || original > Float(input - 1)))
            // Past the filter's reach beyond an edge every tap reads that edge: the same value.
            let reach = filter.support / widened + 1
            let position = min(max(original, -reach), Float(input) + reach)
            if case .nearest(let rounding) = filter {
                lists.append([(min(max(ResizeFilter.nearest(position, rounding), 0), input - 1), 1)])
                continue
            }
            let support = filter.support / widened
            let first = Int((position - support).rounded(.down)), last = Int((position + support).rounded(.up))
            var taps: [(index: Int, weight: Float)] = []
            for index in first...last {
                let weight = filter.weight((Float(index) - position) * widened)
                guard weight != 0, !(excludeOutside && (index < 0 || index >= input)) else { continue }
                taps.append((min(max(index, 0), input - 1), weight))
            }
            if antialias && widened < 1 || excludeOutside {
                let total = taps.reduce(0) { $0 + $1.weight }
                if total != 0 { taps = taps.map { ($0.index, $0.weight / total) } }
            }
            lists.append(taps.isEmpty ? [(min(max(Int(position.rounded()), 0), input - 1), Float(1))] : taps)
        }
        let taps = lists.map(\.count).max() ?? 1
        self.input = input
        self.output = output
        self.taps = taps
        indices = lists.flatMap { list in list.map(\.index) + Array(repeating: list[0].index, count: taps - list.count) }
        weights = lists.flatMap { list in list.map(\.weight) + Array(repeating: 0, count: taps - list.count) }
        self.outside = outside
    }

    /// The factor a filter's taps are spaced by: the scale where antialiasing widens a linear or
    /// cubic filter that shrinks the axis, else 1.
    static func widening(filter: ResizeFilter, scale: Float, antialias: Bool) -> Float {
        if case .nearest = filter { return 1 }
        return antialias && scale < 1 ? scale : 1
    }

    /// The most taps one output can read (the integers within the filter's reach of its position).
    static func mostTaps(filter: ResizeFilter, scale: Float, antialias: Bool) -> Float {
        if case .nearest = filter { return 1 }
        return (2 * filter.support / widening(filter: filter, scale: scale, antialias: antialias)).rounded(.up) + 2
    }

    /// The most taps an axis's table may hold: 2 M (about 24 MB), far past any image's axis.
    static let mostTableTaps = 1 << 21

    /// Whether the axis is read as it is (every output its own input index, whole).
    var isIdentity: Bool {
        input == output && taps == 1 && indices == Array(0..<input) && !outside.contains(true)
    }
}
