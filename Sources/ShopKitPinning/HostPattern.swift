/// A host name pattern that selects a pin set: `api.example.com`, `*.example.com` or `**.example.com`.
///
/// - `api.example.com` matches that host only.
/// - `*.example.com` matches exactly one more label: `api.example.com`, not `example.com` nor `a.b.example.com`.
/// - `**.example.com` matches zero or more labels: `example.com`, `api.example.com`, `a.b.example.com`.
/// - An IPv4 or IPv6 literal (`127.0.0.1`, `::1`, `[::1]`) matches that address only, never a wildcard.
///
/// Matching is case-insensitive and ignores one trailing dot. Internationalised names must be given in
/// punycode (`xn--bcher-kva.example`), as they appear in certificates and on the wire: a non-ASCII pattern
/// is refused with ``HostPatternError/notPunycode(_:)`` rather than guessed at.
public struct HostPattern: Sendable, Hashable, CustomStringConvertible {
    /// What the pattern matches.
    package enum Kind: Sendable, Hashable {
        /// One host name.
        case exact
        /// `*.base`: exactly one label in front of the base.
        case oneLabel
        /// `**.base`: zero or more labels in front of the base.
        case anyLabels
        /// One IP address.
        case ipAddress
    }

    /// The normalised pattern: lowercased, trailing dot removed, IPv6 without brackets (package access: its public
    /// form is ``description``).
    package let pattern: String
    /// What the pattern matches.
    package let kind: Kind
    /// The name after the wildcard (the whole name for exact patterns).
    let base: String
    /// The parsed address of an IP-literal pattern.
    let address: IPAddress?

    /// Parses and validates a pattern.
    ///
    /// - Throws: ``HostPatternError`` naming what is wrong: a non-ASCII name, an empty label, a `*` anywhere
    ///   but as the whole first label, a wildcard over a single label or an IP address, a bad character.
    public init(_ text: String) throws(HostPatternError) {
        // ASCII is checked before lowercasing: Unicode case mapping turns some non-ASCII characters into ASCII ones
        // (U+212A KELVIN SIGN lowercases to `k`, U+0130 to `i` and a combining dot), which would read a name no
        // certificate or resolver has as one they do.
        guard !text.isEmpty else { throw .empty }
        guard text.unicodeScalars.allSatisfy(\.isASCII) else { throw .notPunycode(text) }
        var name = text.lowercased()
        if name.hasSuffix("."), !name.contains(":") { name.removeLast() }
        if let address = IPAddress(literal: name) {
            self.pattern = address.description
            self.kind = .ipAddress
            self.base = address.description
            self.address = address
            return
        }
        var labels = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !labels.contains(where: \.isEmpty) else { throw .emptyLabel(text) }
        var kind = Kind.exact
        if labels[0] == "*" || labels[0] == "**" {
            kind = labels[0] == "*" ? .oneLabel : .anyLabels
            labels.removeFirst()
            guard labels.count >= 2 else { throw .wildcardTooBroad(text) }
            if IPAddress(literal: labels.joined(separator: ".")) != nil { throw .wildcardOnIPAddress(text) }
        }
        for label in labels {
            if label.contains("*") { throw .misplacedWildcard(text) }
            guard label.utf8.count <= 63 else { throw .labelTooLong(text) }
            guard label.utf8.allSatisfy(Self.isHostCharacter), label.first != "-", label.last != "-" else {
                throw .invalidCharacter(text)
            }
        }
        if labels.allSatisfy({ $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }) {
            // All-numeric names are IP addresses to resolvers; one that failed to parse as such is a typo.
            throw .invalidIPAddress(text)
        }
        let base = labels.joined(separator: ".")
        guard base.utf8.count <= 253 else { throw .nameTooLong(text) }
        self.base = base
        self.kind = kind
        self.address = nil
        switch kind {
        case .exact, .ipAddress: self.pattern = base
        case .oneLabel: self.pattern = "*." + base
        case .anyLabels: self.pattern = "**." + base
        }
    }

    /// Whether `host` (a name or an IP literal, any case, with or without a trailing dot) falls under this pattern.
    package func matches(_ host: String) -> Bool {
        matches(Subject(host))
    }

    /// Whether `subject` falls under this pattern (one host prepared once for every pattern it is matched against).
    package func matches(_ subject: Subject) -> Bool {
        switch kind {
        case .ipAddress:
            return subject.address == address
        case .exact:
            return subject.name == base
        case .anyLabels:
            return subject.name == base || subject.name.hasSuffix("." + base)
        case .oneLabel:
            guard subject.name.hasSuffix("." + base) else { return false }
            let head = subject.name.utf8.dropLast(base.utf8.count + 1)
            return !head.isEmpty && !head.contains(UInt8(ascii: "."))
        }
    }

    /// A host as patterns compare it: its canonical ``ServerName`` (`127.0.0.1.` is `127.0.0.1`, `[::1]` is `::1`,
    /// `API.Example.COM.` is `api.example.com`), the form the TLS layer looks pins up under; a host that is no
    /// server name (a pattern may hold `_`) lowercased, without its trailing dot. Preparing it once keeps a
    /// lookup over many patterns from parsing the host for each.
    package struct Subject: Sendable {
        /// The canonical host, for name patterns.
        let name: String
        /// The host as an IP address, for IP patterns.
        let address: IPAddress?

        package init(_ host: String) {
            if let canonical = try? ServerName(host) {
                name = canonical.text
                address = canonical.isIPAddress ? IPAddress(literal: canonical.text) : nil
                return
            }
            let lowercased = host.lowercased()
            address = IPAddress(literal: lowercased)
            name = lowercased.utf8.last == UInt8(ascii: ".") ? String(lowercased.dropLast()) : lowercased
        }
    }

    /// How specific the pattern is; when several patterns match a host, the highest wins.
    ///
    /// Exact names and IP addresses beat `*.` patterns, which beat `**.` patterns; between two patterns of
    /// the same kind, the one with the longer base (more labels) wins.
    package var specificity: Int {
        let labels = base.split(separator: ".").count
        switch kind {
        case .exact, .ipAddress: return 2_000 + labels
        case .oneLabel: return 1_000 + labels
        case .anyLabels: return labels
        }
    }

    /// The normalised pattern: lowercased, trailing dot removed, IPv6 without brackets; it parses back to the same
    /// pattern.
    public var description: String { pattern }

    private static func isHostCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
            UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}

/// Why a host pattern was refused.
public enum HostPatternError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The pattern is empty.
    case empty
    /// The pattern has non-ASCII characters: internationalised names must be written in punycode.
    case notPunycode(String)
    /// Two dots in a row, or a leading dot.
    case emptyLabel(String)
    /// `*` or `**` used anywhere but as the whole first label.
    case misplacedWildcard(String)
    /// A wildcard over a single label (`*.com`) would cover a whole top-level domain.
    case wildcardTooBroad(String)
    /// A wildcard in front of an IP address.
    case wildcardOnIPAddress(String)
    /// A character other than letters, digits, `-` and `_`, or a label starting or ending with `-`.
    case invalidCharacter(String)
    /// An all-numeric name that is not a valid IPv4 address.
    case invalidIPAddress(String)
    /// A label longer than 63 bytes.
    case labelTooLong(String)
    /// A name longer than 253 bytes.
    case nameTooLong(String)

    /// What is wrong with the pattern and how to write it instead.
    public var description: String {
        switch self {
        case .empty:
            return "host pattern is empty; give a host name such as api.example.com"
        case .notPunycode(let text):
            // Escaped (`\u{212A}`): a non-ASCII character can look like the ASCII one it is not.
            let escaped = text.unicodeScalars.map { $0.escaped(asASCII: true) }.joined()
            return "host pattern \"\(escaped)\" is not ASCII; write internationalised names in punycode (xn--…)"
        case .emptyLabel(let text):
            return "host pattern \"\(text)\" has an empty label (a leading dot or two dots in a row)"
        case .misplacedWildcard(let text):
            return "host pattern \"\(text)\" has a wildcard in the wrong place; only a whole first label "
                + "of * (one label) or ** (any number of labels) is allowed"
        case .wildcardTooBroad(let text):
            return "host pattern \"\(text)\" would cover a whole top-level domain; name at least two labels after the wildcard"
        case .wildcardOnIPAddress(let text):
            return "host pattern \"\(text)\" puts a wildcard before an IP address; IP addresses match exactly"
        case .invalidCharacter(let text):
            return "host pattern \"\(text)\" has a character that is not a letter, digit, - or _ (or a label starts or ends with -)"
        case .invalidIPAddress(let text):
            return "host pattern \"\(text)\" is all digits but not a valid IPv4 address"
        case .labelTooLong(let text):
            return "host pattern \"\(text)\" has a label longer than 63 characters"
        case .nameTooLong(let text):
            return "host pattern \"\(text)\" is longer than 253 characters"
        }
    }
}
