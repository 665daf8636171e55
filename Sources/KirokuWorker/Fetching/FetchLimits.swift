/// Bounds on fetching one image: how large, and how long.
public struct FetchLimits: Sendable {
    /// The largest image accepted, in bytes (fetched or inline); a larger one fails its job permanently.
    public var maximumBytes: Int
    /// The whole fetch of one http(s) image, first connect to last byte, redirects included; a timeout is retried.
    public var timeout: Duration

    /// 50 MB (the decoder's own cap) within 30 seconds.
    public static let standard = FetchLimits(maximumBytes: 50 << 20, timeout: .seconds(30))

    /// Creates limits.
    public init(maximumBytes: Int, timeout: Duration) {
        self.maximumBytes = maximumBytes
        self.timeout = timeout
    }
}

/// Fetching a job's image failed. `reason` is what the job's stored error says (producers read
/// it): a category, never a byte of the content, a status code, a size or whether a file exists.
/// `detail` is for the worker's log. `retryable` says whether another attempt may succeed
/// (timeouts, connection errors, 5xx) or not (no such file, 404, too large, refused).
public struct FetchError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What the job's error says.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// Not fetched: missing, unreadable, an HTTP error, a timeout, a connection failure.
        case unreachable
        /// Over the size cap.
        case tooLarge
        /// Not a URI the worker can use.
        case invalidURI
        /// Refused by the worker's fetch policy; the rule's name.
        case refused(String)

        public var description: String {
            switch self {
            case .unreachable: "image unreachable"
            case .tooLarge: "image too large"
            case .invalidURI: "invalid image URI"
            case .refused(let rule): "refused by policy: \(rule)"
            }
        }
    }

    /// The category stored in the job.
    public let reason: Reason
    /// The full story, naming the URI: for the worker's log only.
    public let detail: String
    /// True when a later attempt may succeed.
    public let retryable: Bool

    /// Creates an error.
    public init(_ reason: Reason, _ detail: String, retryable: Bool = false) {
        self.reason = reason
        self.detail = detail
        self.retryable = retryable
    }

    /// A refusal by the fetch policy: final, never retried.
    static func refused(_ rule: String, _ detail: String) -> FetchError {
        FetchError(.refused(rule), detail)
    }

    /// True when the fetch policy refused the image.
    public var isRefusal: Bool {
        if case .refused = reason { return true }
        return false
    }

    public var description: String { "\(reason): \(detail)" }
}
