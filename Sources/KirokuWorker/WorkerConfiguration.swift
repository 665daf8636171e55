import Foundation
import KirokuInference
import KirokuVision

/// Everything a worker process is told at start: where to claim, what to run, how to behave.
public struct WorkerConfiguration: Sendable {
    /// The database connection string (URL or key=value; see ConnectionString).
    public var databaseURL: String
    /// The pool whose jobs this worker claims.
    public var pool: String = "cpu"
    /// The ONNX model file; its sidecar (.json) sits beside it.
    public var model: URL
    /// Inference threads; nil means the CPUs this process may use (cgroup quota, affinity).
    public var threads: Int?
    /// The host-level lock that keeps one worker per host.
    public var lockFile: String = WorkerConfiguration.defaultLockFile
    /// The most jobs claimed at once; the claim adapts below it (see `batchTarget`).
    public var maxBatch: Int = 32
    /// How long one claimed batch should take to classify: the claim asks for about this much
    /// work at the measured speed, so a slow model claims less and other hosts get a share.
    public var batchTarget: Duration = .milliseconds(500)
    /// The lease each claim takes; renewed by heartbeats every third of it.
    public var lease: Duration = .seconds(30)
    /// How often this worker returns other workers' expired leases to the queue (jittered).
    public var rescueInterval: Duration = .seconds(15)
    /// How often this worker moves scheduled jobs that have come due to the queue: the most a
    /// delayed job or a retry waits past its run_after before a claim can take it.
    public var promoteInterval: Duration = .seconds(1)
    /// The longest an idle worker waits for a notification before it claims anyway.
    public var pollInterval: Duration = .seconds(5)
    /// After SIGTERM or SIGINT, how long in-flight work may take before the process exits anyway
    /// (jobs left running then return through their leases).
    public var gracePeriod: Duration = .seconds(30)
    /// Drain what is claimable now, then exit (tests and batch runs).
    public var once: Bool = false
    /// The port for /metrics, /healthz and /readyz; nil turns the endpoints off.
    public var httpPort: Int? = 9464
    /// The address the HTTP endpoints bind to.
    public var httpHost: String = "0.0.0.0"
    /// Limits on fetching image bytes (size cap, timeouts).
    public var fetchLimits: FetchLimits = .standard
    /// What may be fetched: public http(s) by default; allowed networks and file roots on purpose.
    public var fetchPolicy: FetchPolicy = .standard
    /// The most inline image bytes one claim takes (the claim takes fewer jobs to stay within it).
    public var claimBytes: Int = 64 << 20
    /// Limits on decoding (pixels, bytes).
    public var decodeLimits: DecodeLimits = .standard
    /// Reduced DCT-scale decoding (default), or full decoding for a shadow comparison with a service that decodes in full.
    public var decodeScale: DecodeScale = .reduced
    /// Which of an int8 model's layers run on integer kernels (default: whichever this CPU runs faster).
    public var integerLayers: IntegerLayerChoice = .measured
    /// How many labels each result carries.
    public var topK: Int = 5
    /// The identity recorded in kiroku.workers and on every job: host, process id, start time.
    public var workerID: String = WorkerConfiguration.makeWorkerID()
    /// The host's instance type (e.g. c5.xlarge), recorded with the measured speed for the
    /// advisor; nil asks the EC2 metadata service (briefly) and records nothing if there is none.
    public var instanceType: String?
    /// The software version recorded in kiroku.workers.
    public var version: String = "unknown"

    /// The default host lock: /run/lock when writable (per host, cleared at boot), else /tmp.
    public static var defaultLockFile: String {
        FileManager.default.isWritableFile(atPath: "/run/lock") ? "/run/lock/kiroku-worker.lock" : "/tmp/kiroku-worker.lock"
    }

    /// Creates a configuration with defaults for everything but the database and the model.
    public init(databaseURL: String, model: URL) {
        self.databaseURL = databaseURL
        self.model = model
    }

    /// This host's name.
    public static var hostName: String { ProcessInfo.processInfo.hostName }

    /// A worker id unique per process start: host, pid and a start stamp.
    public static func makeWorkerID() -> String {
        "\(hostName)/\(ProcessInfo.processInfo.processIdentifier)/\(Int(Date().timeIntervalSince1970))"
    }
}
