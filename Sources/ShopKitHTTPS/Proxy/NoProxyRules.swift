#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which hosts bypass the proxy, read as curl reads `NO_PROXY`.
///
/// A comma- (or space-) separated list, case-insensitive:
/// - `*` alone: every host is reached directly.
/// - `example.com` or `.example.com`: that domain and its subdomains (`api.example.com`), not `badexample.com`.
/// - `example.com:8443`: the same, on that port only.
/// - `192.168.1.10`, `::1`, `[::1]:443`: that IP literal exactly (an IP is never a domain suffix).
/// - `10.0.0.0/8`, `fd00::/8`: IP literals in that CIDR range.
///
/// Host names are compared as written in the URL; nothing is resolved.
public struct NoProxyRules: Sendable, Hashable, CustomStringConvertible {
    /// One parsed entry.
    enum Rule: Sendable, Hashable {
        case all
        case domain(String, port: Int?)
        case address([UInt8], prefixLength: Int, port: Int?)
    }

    /// The parsed entries, in order.
    let rules: [Rule]
    /// The list as given.
    public let description: String

    /// Rules parsed from a `NO_PROXY` value; an entry that cannot be read is ignored, as curl does.
    public init(_ list: String = "") {
        description = list
        var rules: [Rule] = []
        for entry in list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
            if let rule = Self.parse(entry.lowercased()) { rules.append(rule) }
        }
        self.rules = rules
    }

    /// Whether `host`:`port` is reached directly.
    package func matches(host: String, port: Int) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name.removeLast() }
        let address = Self.addressBytes(name)
        for rule in rules {
            switch rule {
            case .all:
                return true
            case .domain(let domain, let rulePort):
                guard address == nil, rulePort == nil || rulePort == port else { continue }
                if name == domain || name.hasSuffix("." + domain) { return true }
            case .address(let bytes, let prefixLength, let rulePort):
                guard let address, rulePort == nil || rulePort == port else { continue }
                if Self.prefix(address, bytes, length: prefixLength) { return true }
            }
        }
        return false
    }

    private static func parse(_ entry: String) -> Rule? {
        if entry == "*" { return .all }
        var text = Substring(entry)
        var port: Int?
        if text.hasPrefix("[") {
            // [IPv6] or [IPv6]:port
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            if rest.hasPrefix(":") {
                guard let value = Int(rest.dropFirst()) else { return nil }
                port = value
            } else if !rest.isEmpty {
                return nil
            }
            text = text[text.index(after: text.startIndex)..<close]
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            // host:port (a bare IPv6 literal has several colons and no port)
            guard let value = Int(text[text.index(after: colon)...]) else { return nil }
            port = value
            text = text[..<colon]
        }
        var prefixLength: Int?
        if let slash = text.firstIndex(of: "/") {
            guard let value = Int(text[text.index(after: slash)...]) else { return nil }
            prefixLength = value
            text = text[..<slash]
        }
        if let bytes = addressBytes(String(text)) {
            let length = prefixLength ?? bytes.count * 8
            guard (0...bytes.count * 8).contains(length) else { return nil }
            return .address(bytes, prefixLength: length, port: port)
        }
        guard prefixLength == nil else { return nil }
        while text.hasPrefix(".") { text = text.dropFirst() }
        if text.hasSuffix(".") { text = text.dropLast() }
        guard !text.isEmpty else { return nil }
        return .domain(String(text), port: port)
    }

    /// The network-order bytes of an IPv4 or IPv6 literal, or nil for a name.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func prefix(_ address: [UInt8], _ network: [UInt8], length: Int) -> Bool {
        guard address.count == network.count else { return false }
        var remaining = length
        for (a, n) in zip(address, network) where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if a & mask != n & mask { return false }
            remaining -= bits
        }
        return true
    }
}
