import ShopKitPinning
import ShopKitTLS

/// A `HOST[:PORT]` target as typed on a command line: `example.com`, `example.com:8443`, `[::1]:443`, `::1`.
package struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host without brackets: a DNS name or an IP literal.
    package let host: String
    /// The TCP port (default 443).
    package let port: Int

    /// A target from its parts.
    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST[:PORT]`; IPv6 literals need brackets when a port is given.
    ///
    /// - Throws: ``ServerAddressError`` saying what is wrong.
    package init(parsing text: String, defaultPort: Int = 443) throws(ServerAddressError) {
        guard !text.isEmpty else { throw .empty }
        var host = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .malformed(text, "missing ] after the IPv6 address") }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .malformed(text, "expected :PORT after ]") }
                portText = rest.dropFirst()
            }
            guard Self.isIPLiteral(host) else { throw .malformed(text, "not an IPv6 address inside [ ]") }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        } else if text.contains(":") {
            guard Self.isIPLiteral(text) else { throw .malformed(text, "put IPv6 addresses in brackets") }
        }
        guard !host.isEmpty else { throw .malformed(text, "the host is empty") }
        guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:".contains($0)) }) else {
            throw .malformed(text, "the host has characters a host name cannot have")
        }
        var port = defaultPort
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw .malformed(text, "the port must be a number from 1 to 65535")
            }
            port = value
        }
        self.host = host
        self.port = port
    }

    /// Whether the host is an IP literal (then no SNI is sent and IP SANs are checked).
    package var isIPAddress: Bool { Self.isIPLiteral(host) }

    static func isIPLiteral(_ text: String) -> Bool { (try? HostPattern(text))?.kind == .ipAddress }

    /// `host:port`, with brackets around IPv6 literals.
    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A `HOST[:PORT]` that cannot be used; the message says how to write it.
package enum ServerAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing was given.
    case empty
    /// The text and what is wrong with it.
    case malformed(String, String)

    package var description: String {
        switch self {
        case .empty: return "give the server as HOST[:PORT], e.g. example.com or [::1]:8443"
        case .malformed(let text, let why): return "'\(text)' is not HOST[:PORT]: \(why)"
        }
    }
}
