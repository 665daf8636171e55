import Foundation

/// The instance types the advisor may recommend, with prices per region: an editable data file
/// (catalog/instances.json), never constants in code, stamped with a date and a source note.
public struct InstanceCatalog: Sendable, Codable, Equatable {
    /// A price per hour in one region.
    public struct Price: Sendable, Codable, Equatable {
        /// On-demand dollars per hour.
        public var onDemand: Double
        /// Spot dollars per hour, when known.
        public var spot: Double?
        /// A caveat (e.g. "uncertain").
        public var note: String?
    }

    /// One instance type.
    public struct InstanceType: Sendable, Codable, Equatable {
        /// The type's name, e.g. c5.xlarge.
        public var type: String
        /// Virtual CPUs.
        public var vcpu: Int
        /// Memory, GiB.
        public var memoryGib: Double
        /// The accelerator, if any (e.g. "1 T4").
        public var accelerator: String?
        /// Prices by region.
        public var prices: [String: Price]

        /// The type's family: the part before the dot (c5, g4dn).
        public var family: String { String(type.prefix { $0 != "." }) }
    }

    /// When the prices were gathered.
    public var date: String
    /// Where they came from.
    public var source: String
    /// The region used when none is asked for.
    public var defaultRegion: String
    /// The types.
    public var instances: [InstanceType]

    /// Reads a catalog file.
    public static func load(_ url: URL) throws(AdvisorError) -> InstanceCatalog {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw AdvisorError("cannot read the instance catalog \(url.path): \(error.localizedDescription)")
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(InstanceCatalog.self, from: data)
        } catch {
            throw AdvisorError("the instance catalog \(url.path) is not valid: \(error)")
        }
    }

    /// Where the catalog is: `explicit`, else KIROKU_CATALOG, else catalog/instances.json under the
    /// current directory, else /usr/share/kiroku/catalog/instances.json (containers).
    public static func locate(_ explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(AdvisorError) -> URL {
        if let explicit { return URL(fileURLWithPath: explicit) }
        if let path = environment["KIROKU_CATALOG"], !path.isEmpty { return URL(fileURLWithPath: path) }
        let candidates = [FileManager.default.currentDirectoryPath + "/catalog/instances.json", "/usr/share/kiroku/catalog/instances.json"]
        guard let found = candidates.first(where: FileManager.default.fileExists(atPath:)) else {
            throw AdvisorError("no instance catalog found (looked in \(candidates.joined(separator: ", "))): pass --catalog FILE or set KIROKU_CATALOG")
        }
        return URL(fileURLWithPath: found)
    }

    /// The named type, or an error listing the known ones.
    public func instance(_ name: String) throws(AdvisorError) -> InstanceType {
        guard let found = instances.first(where: { $0.type == name }) else {
            throw AdvisorError("unknown instance type '\(name)'; the catalog has \(instances.map(\.type).joined(separator: ", "))")
        }
        return found
    }

    /// A type's price in a region, or an error naming the regions it has.
    public func price(of instance: InstanceType, in region: String) throws(AdvisorError) -> Price {
        guard let price = instance.prices[region] else {
            throw AdvisorError("the catalog has no \(region) price for \(instance.type); it has \(instance.prices.keys.sorted().joined(separator: ", "))")
        }
        return price
    }
}

/// A problem with the advisor's inputs, saying what to fix.
public struct AdvisorError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    public let description: String

    /// Creates an error.
    public init(_ description: String) {
        self.description = description
    }
}
