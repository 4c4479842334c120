#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one canonical name of a server, made once from outside input (a URL's host) and handed to every check
/// that must agree: SNI, OpenSSL's name check, the pin-set lookup, strict hosts, the session cache, the pool, the
/// proxy's `CONNECT` line, the `Host` header and failure reports.
///
/// Why: two places that normalise the same string differently are a bypass. `127.0.0.1.` was checked by OpenSSL
/// as the address `127.0.0.1` but looked up as a name no pin set covered, so the connection went through unpinned.
/// With one canonical value, what OpenSSL checks is what the pins are looked up under.
///
/// Canonical forms:
/// - an IP address in its standard text form, parsed with `inet_pton` and printed with `inet_ntop`
///   (`::1`, `2001:db8::1`, `203.0.113.5`; a trailing dot after an IPv4 address is dropped);
/// - otherwise a DNS name: lowercased, without its trailing dot, in ASCII (A-labels), letters, digits and
///   hyphens only, labels of 1–63 bytes not starting or ending with a hyphen, at most 253 bytes, a last label
///   that is not all digits, and not a form that glibc's resolver reads as an IPv4 address (`inet_aton`'s
///   shortened, octal and hex forms): `127.1`, `0177.0.0.1`, `0x7f.1` and `0x7f000001` are refused, so a name
///   is never checked as a DNS name while the connection goes to an address.
package struct ServerName: Sendable, Hashable, CustomStringConvertible {
    /// The canonical text.
    package let text: String
    /// Whether the name is an IP address (checked against IP SANs, sent without SNI).
    package let isIPAddress: Bool

    /// Parses and validates `host` (brackets around an IPv6 literal allowed).
    ///
    /// - Throws: ``ServerNameError`` naming what is wrong, for anything that is neither an IP address nor a DNS
    ///   name by the rules above (empty, a NUL, CR or LF byte, a space, a zone id, an underscore, non-ASCII…).
    package init(_ host: String) throws(ServerNameError) {
        var name = Substring(host)
        let bracketed = name.hasPrefix("[") && name.hasSuffix("]")
        if bracketed { name = name.dropFirst().dropLast() }
        if let address = Self.canonicalIPv6(name) {
            (text, isIPAddress) = (address, true)
            return
        }
        if bracketed { throw ServerNameError(host: host, problem: "is bracketed but not an IPv6 address") }
        if name.hasSuffix(".") { name = name.dropLast() }
        if let address = Self.canonicalIPv4(name) {
            (text, isIPAddress) = (address, true)
            return
        }
        text = try Self.canonicalDNSName(name, host: host)
        isIPAddress = false
    }

    package var description: String { text }

    private static func canonicalIPv4(_ name: Substring) -> String? {
        var address = in_addr()
        guard inet_pton(AF_INET, String(name), &address) == 1 else { return nil }
        // inet_ntop's dotted quad, written here: inet_ntop formats through sprintf, about 3.5 k instructions for
        // each IPv4 server name made (two per new connection in the resumption benchmark).
        var text: [UInt8] = []
        text.reserveCapacity(15)
        withUnsafeBytes(of: address) { bytes in
            for (index, byte) in bytes.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ".")) }
                if byte >= 100 { text.append(UInt8(ascii: "0") + byte / 100) }
                if byte >= 10 { text.append(UInt8(ascii: "0") + byte / 10 % 10) }
                text.append(UInt8(ascii: "0") + byte % 10)
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func canonicalIPv6(_ name: Substring) -> String? {
        guard name.utf8.contains(UInt8(ascii: ":")) else { return nil }  // not Foundation's `contains`: 4 k instructions a call
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(name), &address) == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func canonicalDNSName(_ name: Substring, host: String) throws(ServerNameError) -> String {
        guard !name.isEmpty else { throw ServerNameError(host: host, problem: "is empty") }
        guard name.utf8.count <= 253 else { throw ServerNameError(host: host, problem: "is longer than 253 bytes") }
        var canonical: [UInt8] = []
        canonical.reserveCapacity(name.utf8.count)
        var labelLength = 0
        var labelIsNumeric = true
        var previous: UInt8 = UInt8(ascii: ".")
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                canonical.append(byte | 0x20)
                labelLength += 1
                labelIsNumeric = false
            case UInt8(ascii: "a")...UInt8(ascii: "z"):
                canonical.append(byte)
                labelLength += 1
                labelIsNumeric = false
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                canonical.append(byte)
                labelLength += 1
            case UInt8(ascii: "-"):
                guard previous != UInt8(ascii: ".") else {
                    throw ServerNameError(host: host, problem: "has a label that starts with a hyphen")
                }
                canonical.append(byte)
                labelLength += 1
                labelIsNumeric = false
            case UInt8(ascii: "."):
                guard labelLength > 0 else { throw ServerNameError(host: host, problem: "has an empty label") }
                guard previous != UInt8(ascii: "-") else {
                    throw ServerNameError(host: host, problem: "has a label that ends with a hyphen")
                }
                canonical.append(byte)
                labelLength = 0
                labelIsNumeric = true
            case 0x80...:
                throw ServerNameError(host: host, problem: "is not ASCII: write an internationalised name in its A-label (xn--) form")
            default:
                throw ServerNameError(host: host, problem: "has a byte that no host name has (only letters, digits, hyphens and dots)")
            }
            guard labelLength <= 63 else { throw ServerNameError(host: host, problem: "has a label longer than 63 bytes") }
            previous = byte
        }
        guard previous != UInt8(ascii: "-") else {
            throw ServerNameError(host: host, problem: "has a label that ends with a hyphen")
        }
        guard !labelIsNumeric else {
            throw ServerNameError(host: host, problem: "is neither an IP address in standard form nor a DNS name (its last label is all digits)")
        }
        let text = String(decoding: canonical, as: UTF8.self)
        // inet_aton reads only names that start with a digit (`0x7f000001`, `1.0x7f`); others skip the call.
        if let first = canonical.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) {
            var address = in_addr()
            guard inet_aton(text, &address) == 0 else {
                throw ServerNameError(
                    host: host,
                    problem: "is an IPv4 address in a shortened, octal or hex form, which resolvers read as an address: write the address as four decimal numbers, such as 127.0.0.1")
            }
        }
        return text
    }
}

/// A host that is neither an IP address nor a DNS name: the caller's input, refused before any connection.
package struct ServerNameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host as given, with control bytes escaped.
    package let host: String
    /// What is wrong with it.
    package let problem: String

    init(host: String, problem: String) {
        self.host = String(reflecting: host)
        self.problem = problem
    }

    package var description: String { "the host \(host) \(problem)" }
}
