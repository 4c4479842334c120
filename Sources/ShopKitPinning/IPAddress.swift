import Foundation

/// A parsed IPv4 or IPv6 address, compared by its bytes (so `::1` equals `0:0:0:0:0:0:0:1`).
struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6.
    let bytes: [UInt8]

    /// Parses a dotted-quad IPv4 address or an IPv6 address (optionally in brackets). Returns nil otherwise.
    init?(literal text: String) {
        var text = Substring(text)
        if text.hasPrefix("[") && text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        // UTF-8 scans, not Foundation's `contains`, which costs thousands of instructions a call (this runs for
        // every connection's pin lookup).
        if text.utf8.contains(UInt8(ascii: ":")) {
            guard let bytes = Self.parseIPv6(text) else { return nil }
            self.bytes = bytes
        } else {
            guard let bytes = Self.parseIPv4(text) else { return nil }
            self.bytes = bytes
        }
    }

    var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        var groups: [String] = []
        for index in stride(from: 0, to: 16, by: 2) {
            groups.append(String(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]), radix: 16))
        }
        return groups.joined(separator: ":")
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            guard part.count == 1 || part.first != "0" else { return nil }  // no octal-looking leading zeros
            bytes.append(value)
        }
        return bytes
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            if part.isEmpty { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.utf8.contains(UInt8(ascii: ".")) {
                    guard let v4 = parseIPv4(piece) else { return nil }
                    bytes += v4
                    continue
                }
                guard (1...4).contains(piece.count), let value = UInt16(piece, radix: 16) else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xff)]
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
