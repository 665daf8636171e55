extension Duration {
    /// The duration in milliseconds, as a floating-point number.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    /// The duration in seconds, as a floating-point number.
    public var seconds: Double { milliseconds / 1000 }
}
