import Foundation
public import KirokuRandom

/// Byte-level mutations of seed files: bit flips, interesting bytes, truncation, duplicated
/// chunks, runs of 0xFF (huge lengths), splices of another seed.
public struct Mutator {
    public let seeds: [[UInt8]]
    /// The random source, shared with callers that draw their own inputs.
    public var random: SplitMix64

    /// Creates a mutator over the seeds (at least one).
    public init(seeds: [[UInt8]], seed: UInt64) {
        precondition(!seeds.isEmpty, "no seeds")
        self.seeds = seeds
        random = SplitMix64(seed: seed)
    }

    /// Input `iteration`: the seeds themselves first, then mutants.
    public mutating func input(_ iteration: Int) -> [UInt8] {
        iteration < seeds.count ? seeds[iteration] : mutate(seeds.randomElement(using: &random)!)
    }

    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0: bytes[position] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            case 1: bytes[position] = [0x00, 0x01, 0x7F, 0x80, 0xFF].randomElement(using: &random)!
            case 2: bytes[position] = UInt8.random(in: 0...255, using: &random)
            case 3: bytes.removeSubrange(position...)
            case 4:
                let end = min(bytes.count, position + Int.random(in: 1...64, using: &random))
                bytes.insert(contentsOf: Array(bytes[position..<end]), at: Int.random(in: 0...bytes.count, using: &random))
            case 5: bytes.insert(contentsOf: [UInt8](repeating: 0xFF, count: Int.random(in: 1...10, using: &random)), at: position)
            default:
                let other = seeds.randomElement(using: &random)!
                let start = Int.random(in: 0..<other.count, using: &random)
                bytes.replaceSubrange(position..<min(bytes.count, position + 32), with: other[start..<min(other.count, start + 32)])
            }
        }
        return bytes
    }

    /// Every file with one of `extensions` under the directories, as seeds.
    public static func seeds(under directories: [String], extensions: [String]) -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for directory in directories {
            let enumerator = FileManager.default.enumerator(atPath: directory)
            while let path = enumerator?.nextObject() as? String {
                guard extensions.contains(where: path.hasSuffix), let data = FileManager.default.contents(atPath: directory + "/" + path),
                      !data.isEmpty else { continue }
                seeds.append(Array(data))
            }
        }
        return seeds
    }

    /// The command line both fuzzers take: ITERATIONS DIR... [--seed N] [--current FILE].
    public static func arguments(usage: String) -> (iterations: Int, directories: [String], seed: UInt64, current: String) {
        var arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            defer { arguments.removeSubrange(index...(index + 1)) }
            return arguments[index + 1]
        }
        let seed = option("--seed").flatMap(UInt64.init) ?? 20_261_122
        let current = option("--current") ?? ".build/fuzz-current.bin"
        guard let iterations = arguments.first.flatMap(Int.init), arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: \(usage)\n".utf8))
            exit(2)
        }
        return (iterations, Array(arguments.dropFirst()), seed, current)
    }

    /// Resident memory of this process in MB (VmRSS).
    public static func residentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kilobytes / 1024
    }
}
