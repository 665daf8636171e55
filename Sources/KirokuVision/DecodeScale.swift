/// How a JPEG is decoded before the resize: at the smallest DCT scale that keeps twice what the
/// crop needs (`reduced`: a 12 MP photo is decoded at 1/4 or 1/8 of its size, several times faster),
/// or at full size as most other pipelines do (`full`: for a shadow comparison with a service that
/// decodes in full, when the preprocessing difference should not count as the model's).
public enum DecodeScale: String, Sendable, CaseIterable {
    /// The smallest sufficient DCT scale.
    case reduced
    /// Every pixel.
    case full
}
