import Foundation

/// An IPv4 or IPv6 network in CIDR form (`10.0.0.0/8`, `fd00::/8`; a bare address is one host).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16).
    public let bytes: [UInt8]
    /// How many leading bits are the network's.
    public let prefixLength: Int

    /// Parses `10.0.0.0/8`, `2001:db8::/32` or a bare address; nil when it is neither.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPNetwork.parseAddress(String(parts[0])) else { return nil }
        let maximum = address.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...maximum).contains(length), parts[1].allSatisfy(\.isASCII) else { return nil }
            prefixLength = length
        } else {
            prefixLength = maximum
        }
        bytes = address
    }

    /// Whether `address` (4 or 16 bytes) lies in this network.
    public func contains(_ address: [UInt8]) -> Bool {
        guard address.count == bytes.count else { return false }
        var remaining = prefixLength
        for (mine, theirs) in zip(bytes, address) where remaining > 0 {
            let bits = min(remaining, 8)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if mine & mask != theirs & mask { return false }
            remaining -= bits
        }
        return true
    }

    public var description: String { "\(IPNetwork.format(bytes))/\(prefixLength)" }

    /// The bytes of a strict numeric IPv4 (dotted quad) or IPv6 address; nil otherwise.
    public static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// An address's usual text form (dotted quad, or IPv6 with `::`).
    public static func format(_ address: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        address.withUnsafeBytes { _ = inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The address ranges a worker refuses to fetch from unless an operator allows them
/// (`--allow-network`): everything that is not the public internet, each with the rule's name.
public enum NonPublicAddresses {
    /// The refused ranges and their names, most specific first.
    public static let ranges: [(network: IPNetwork, rule: String)] = [
        ("0.0.0.0/8", "this-network address"),
        ("10.0.0.0/8", "private address"),
        ("100.64.0.0/10", "carrier-grade NAT address"),
        ("127.0.0.0/8", "loopback address"),
        ("169.254.0.0/16", "link-local address (cloud metadata)"),
        ("172.16.0.0/12", "private address"),
        ("192.0.0.0/24", "IETF protocol address"),
        ("192.0.2.0/24", "documentation address"),
        ("192.168.0.0/16", "private address"),
        ("198.18.0.0/15", "benchmarking address"),
        ("198.51.100.0/24", "documentation address"),
        ("203.0.113.0/24", "documentation address"),
        ("224.0.0.0/4", "multicast address"),
        ("240.0.0.0/4", "reserved or broadcast address"),
        ("::1/128", "loopback address"),
        ("::ffff:0:0/96", "IPv4-mapped IPv6 address"),
        ("::/96", "unspecified or IPv4-compatible IPv6 address"),
        ("64:ff9b::/96", "IPv4-translated IPv6 address"),
        ("64:ff9b:1::/48", "IPv4-translated IPv6 address"),
        ("100::/64", "discard-only IPv6 address"),
        ("2001::/32", "Teredo IPv6 address"),
        ("2001:db8::/32", "documentation address"),
        ("2002::/16", "6to4 IPv6 address"),
        ("fc00::/7", "unique-local IPv6 address"),
        ("fe80::/10", "link-local IPv6 address"),
        ("fec0::/10", "site-local IPv6 address"),
        ("ff00::/8", "multicast address"),
    ].map { (IPNetwork($0.0)!, $0.1) }

    /// The rule that refuses `address`, or nil for a public address.
    public static func rule(for address: [UInt8]) -> String? {
        ranges.first { $0.network.contains(address) }?.rule
    }
}
