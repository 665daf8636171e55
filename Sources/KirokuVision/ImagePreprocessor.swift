/// Image bytes to a model's input tensor, as the model's sidecar describes: decode at the smallest
/// sufficient DCT scale, upright, centre crop, bicubic resize with antialiasing, normalise, written
/// straight into the caller's buffer (one image of a batch at a time).
public struct ImagePreprocessor: Sendable {
    public let sidecar: ModelSidecar
    /// Whether JPEGs are decoded at a reduced DCT scale (the default) or in full.
    public let decodeScale: DecodeScale

    /// Creates a preprocessor for a model's sidecar.
    public init(sidecar: ModelSidecar, decodeScale: DecodeScale = .reduced) {
        self.sidecar = sidecar
        self.decodeScale = decodeScale
    }

    /// Floats per image in the input tensor (3 x height x width).
    public var floatsPerImage: Int { 3 * sidecar.input.height * sidecar.input.width }

    /// The shorter side a decode keeps: twice what the crop needs to cover the input, so the
    /// final resize still shrinks by 2x or more with its antialiasing filter, as the reference's
    /// full-size decode does. (Decoding at exactly the needed size turns the shrink into the DCT's
    /// block average, which drifts from the reference on fine textures.)
    public var minimumShorterSide: Int {
        if decodeScale == .full { return .max }
        return 2 * Int((Double(max(sidecar.input.height, sidecar.input.width)) / sidecar.preprocessing.cropFraction).rounded(.up))
    }

    /// Decodes `bytes` and writes the normalised CHW tensor into `destination` (floatsPerImage floats).
    public func prepare(_ bytes: [UInt8], decoder: JPEGDecoder, into destination: UnsafeMutableBufferPointer<Float>) throws(ImageError) {
        let image = try decoder.decode(bytes, minimumShorterSide: minimumShorterSide)
        write(image, into: destination)
    }

    /// Crops, resizes and normalises a decoded image into `destination`.
    public func write(_ image: RGBImage, into destination: UnsafeMutableBufferPointer<Float>) {
        precondition(destination.count >= floatsPerImage, "the destination holds \(destination.count) floats; an image needs \(floatsPerImage)")
        let (height, width) = (sidecar.input.height, sidecar.input.width)
        let side = max(1, Int(sidecar.preprocessing.cropFraction * Double(min(image.width, image.height))))
        let left = (image.width - side) / 2, top = (image.height - side) / 2
        let pixels = image.pixels.withUnsafeBufferPointer { source in
            Resampler.resize(source, sourceWidth: image.width, sourceHeight: image.height,
                             box: (left, top, left + side, top + side), width: width, height: height)
        }
        let plane = height * width
        let order = sidecar.input.channelOrder == "BGR" ? [2, 1, 0] : [0, 1, 2]
        let mean = sidecar.preprocessing.mean, scale = sidecar.preprocessing.std.map { 1 / $0 }
        for (channel, source) in order.enumerated() {
            let target = destination.baseAddress! + channel * plane
            for i in 0..<plane { target[i] = (Float(pixels[i * 3 + source]) - mean[channel]) * scale[channel] }
        }
    }
}
