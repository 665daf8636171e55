/// Bounds on fetching one image: how large, and how long.
public struct FetchLimits: Sendable {
    /// The largest image accepted, in bytes; a larger one fails its job permanently.
    public var maximumBytes: Int
    /// The whole fetch of one http(s) image, connect to last byte; a timeout is retried.
    public var timeout: Duration

    /// 50 MB (the decoder's own cap) within 30 seconds.
    public static let standard = FetchLimits(maximumBytes: 50 << 20, timeout: .seconds(30))

    /// Creates limits.
    public init(maximumBytes: Int, timeout: Duration) {
        self.maximumBytes = maximumBytes
        self.timeout = timeout
    }
}

/// Fetching a job's image failed. `retryable` says whether another attempt may succeed (timeouts,
/// connection errors, 5xx) or not (no such file, 404, too large).
public struct FetchError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The reason, naming the URI.
    public let message: String
    /// True when a later attempt may succeed.
    public let retryable: Bool

    /// Creates an error.
    public init(_ message: String, retryable: Bool) {
        self.message = message
        self.retryable = retryable
    }

    public var description: String { message }
}
