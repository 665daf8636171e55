extension OperatorCompiler {
    /// Resize (opsets 11 to 19): the output size from scales or sizes (on `axes`, with
    /// keep_aspect_ratio_policy), each changed axis's taps fixed at load.
    func resize(_ x: CompiledValue) throws(InferenceError) -> KernelPlan {
        let shape = x.shape, rank = shape.count
        guard shape.allSatisfy({ $0 > 0 }) else { throw compiler.shapeError(node, "cannot resize the empty input \(shape)") }
        let axes = try ShapeFolding.normalize(node.ints("axes") ?? Array(0..<rank), rank: rank, node: node, compiler: compiler)
        guard Set(axes).count == axes.count else { throw compiler.shapeError(node, "axes \(axes) repeat an axis") }
        let filter = try resizeFilter()
        let transform = try choice("coordinate_transformation_mode", default: .halfPixel, CoordinateTransform.self)
        // Resize's roi, scales and sizes may each be absent or empty.
        let scalesGiven = try floatConstant(2).flatMap { $0.data.isEmpty ? nil : $0.data }
        let sizesGiven = try compiler.constantInput(node, 3)?.integers.flatMap { $0.isEmpty ? nil : $0 }
        var scales = [Float](repeating: 1, count: rank), output = shape
        var roi = [(start: Float, end: Float)](repeating: (0, 1), count: rank)
        if transform == .tfCropAndResize, let given = try floatConstant(1)?.data, !given.isEmpty {
            guard given.count == 2 * axes.count, given.allSatisfy({ $0.isFinite && abs($0) <= 1e6 }) else {
                throw compiler.shapeError(node, "roi of \(given.count) values for \(axes.count) axes (a start and an end each, finite fractions of the input)")
            }
            for (i, axis) in axes.enumerated() { roi[axis] = (given[i], given[axes.count + i]) }
        }
        if let sizes = sizesGiven {
            guard scalesGiven == nil else { throw compiler.fail(node, "takes scales or sizes, not both") }
            guard sizes.count == axes.count, sizes.allSatisfy({ $0 > 0 }) else {
                throw compiler.shapeError(node, "sizes \(sizes) for \(axes.count) axes (one positive size each)")
            }
            let ratios = zip(axes, sizes).map { Float($1) / Float(shape[$0]) }
            switch node.string("keep_aspect_ratio_policy", default: "stretch") {
            case "stretch":
                for (axis, size) in zip(axes, sizes) { (output[axis], scales[axis]) = (size, Float(size) / Float(shape[axis])) }
            case let policy where policy == "not_larger" || policy == "not_smaller":
                let scale = policy == "not_larger" ? ratios.min()! : ratios.max()!
                for axis in axes { (output[axis], scales[axis]) = (try size((scale * Float(shape[axis])).rounded()), scale) }
            case let policy:
                throw compiler.fail(node, "keep_aspect_ratio_policy '\(policy)' is not one of stretch, not_larger, not_smaller")
            }
        } else if let given = scalesGiven {
            guard given.count == axes.count, given.allSatisfy({ $0 > 0 && $0.isFinite }) else {
                throw compiler.shapeError(node, "scales \(given) for \(axes.count) axes (one positive scale each)")
            }
            for (axis, scale) in zip(axes, given) {
                scales[axis] = scale
                output[axis] = try size(Float(shape[axis]) * (roi[axis].end - roi[axis].start) * scale)
            }
        } else {
            throw compiler.fail(node, "needs scales or sizes (inputs 2 or 3)")
        }
        guard output.allSatisfy({ $0 > 0 }), ShapeMath.count(output) != nil else {
            throw compiler.shapeError(node, "output shape \(output) from input \(shape)")
        }
        let antialias = node.int("antialias", default: 0) == 1, excludeOutside = node.int("exclude_outside", default: 0) == 1
        for axis in 0..<rank where Float(output[axis]) * AxisResampling.mostTaps(filter: filter, scale: scales[axis], antialias: antialias)
            > Float(AxisResampling.mostTableTaps) {
            throw compiler.shapeError(node, "axis \(axis) resized from \(shape[axis]) to \(output[axis]) at scale \(scales[axis]) would read over \(AxisResampling.mostTableTaps) input values")
        }
        // The axes that shrink first (so no value between passes is larger than the input or the
        // output), then those that grow; innermost first among equals, rows staying long.
        let passes = (0..<rank).reversed().sorted { Float(output[$0]) / Float(shape[$0]) < Float(output[$1]) / Float(shape[$1]) }.map { axis in
            (axis, AxisResampling(input: shape[axis], output: output[axis], scale: scales[axis], filter: filter, transform: transform,
                                  roi: roi[axis], antialias: antialias, excludeOutside: excludeOutside))
        }.filter { !$0.1.isIdentity }
        if passes.contains(where: { $0.0 == 0 }) { compiler.mixesImages = true }
        let kernel = ResizeKernel(inputShape: shape, passes: passes, extrapolation: node.float("extrapolation_value", default: 0))
        return KernelPlan(kernel: kernel, operands: [x], outputShape: output)
    }

    /// An output extent computed in float, refused when it is not a size the engine can hold.
    private func size(_ extent: Float) throws(InferenceError) -> Int {
        guard extent.isFinite, extent >= 0, extent <= Float(ShapeMath.maximumElements) else {
            throw compiler.shapeError(node, "an output extent of \(extent) (over the engine's limit of \(ShapeMath.maximumElements) elements)")
        }
        return Int(extent)
    }

    private func resizeFilter() throws(InferenceError) -> ResizeFilter {
        switch node.string("mode", default: "nearest") {
        case "nearest": return .nearest(try choice("nearest_mode", default: .roundPreferFloor, ResizeFilter.Rounding.self))
        case "linear": return .linear
        case "cubic": return .cubic(a: node.float("cubic_coeff_a", default: -0.75))
        case let mode: throw compiler.fail(node, "mode '\(mode)' is not one of nearest, linear, cubic")
        }
    }

    /// A string attribute read as one of `Choice`'s raw values, or an error listing them.
    private func choice<Choice: RawRepresentable & CaseIterable>(_ name: String, default value: Choice, _: Choice.Type)
        throws(InferenceError) -> Choice where Choice.RawValue == String {
        guard let given = node.attributes[name] else { return value }
        guard case .string(let text) = given, let choice = Choice(rawValue: text) else {
            throw compiler.fail(node, "\(name) \(given) is not one of \(Choice.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return choice
    }
}
