import Foundation

/// A pins file for many hosts, as `pin-check --hosts-file … --pins-file` reads it: one file holds every host's
/// pin set, each under a `[HOST]` or `[HOST:PORT]` section header.
///
///     # every endpoint of the shop app
///     [api.example.com]
///     current   sha256/e+x2jBcHD2GuZhmkCcOJT26JCU5cbVQzOYr4n+jiLvE=
///     backup-ca sha256/QKj6Mjawkk3f+48FPXe4vbXVvdpmPF3pgbn1CrPfDE4=
///
///     [*.cdn.example.com]
///     sha256/…
///
///     [[::1]:8443]
///     sha256/…
///
/// HOST is a ``HostPattern`` (`api.example.com`, `*.example.com`, `**.example.com`, an IP address; IPv6 in
/// brackets when a port follows). Lines inside a section are ``PinsFile`` lines (`PIN` or `NAME PIN`, `#`
/// comments). A section with a port covers only that port; for a host and port, the most specific pattern
/// among the sections with that port wins, then among those without a port.
package struct HostPinsFile: Sendable, Hashable {
    /// One `[HOST[:PORT]]` section and its pins.
    package struct Section: Sendable, Hashable {
        /// The host pattern of the header.
        package let hostPattern: HostPattern
        /// The port of the header, nil for any port.
        package let port: Int?
        /// The section's pins, in file order, without duplicates.
        package let pins: [SPKIPin]
        /// The 1-based line of the header.
        package let line: Int
    }

    /// The sections, in file order.
    package let sections: [Section]

    /// Parses `text`.
    ///
    /// - Throws: ``HostPinsFileError`` for the first bad line: a pin before any section, a malformed header,
    ///   a section without pins, two sections for the same host and port, or a line ``PinsFile`` refuses.
    package init(parsing text: String) throws(HostPinsFileError) {
        var sections: [Section] = []
        var current: (pattern: HostPattern, port: Int?, line: Int, body: [String])?
        func close() throws(HostPinsFileError) {
            guard let open = current else { return }
            let pins: [SPKIPin]
            do { pins = try PinsFile.parse(open.body.joined(separator: "\n")) } catch {
                if case .noPins = error { throw .emptySection(line: open.line) }
                if case .line(let offset, let problem) = error { throw .pins(.line(open.line + offset, problem)) }
                throw .pins(error)
            }
            guard !sections.contains(where: { $0.hostPattern == open.pattern && $0.port == open.port }) else {
                throw .duplicateSection(line: open.line)
            }
            var seen = Set<SPKIPin>()
            let distinct = pins.filter { seen.insert($0).inserted }
            sections.append(Section(hostPattern: open.pattern, port: open.port, pins: distinct, line: open.line))
        }
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for (index, raw) in lines.enumerated() {
            let content = (raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: .whitespaces)
            if content.hasPrefix("[") {
                try close()
                let (pattern, port) = try Self.header(content, line: index + 1)
                current = (pattern, port, index + 1, [])
            } else if current != nil {
                current!.body.append(String(raw))
            } else if !content.isEmpty {
                throw .pinOutsideSection(line: index + 1)
            }
        }
        try close()
        guard !sections.isEmpty else { throw .noSections }
        self.sections = sections
    }

    /// The pins for `host` on `port`: the most specific section with that port, else the most specific
    /// section without a port; nil when no section covers the host.
    package func section(host: String, port: Int) -> Section? {
        let subject = HostPattern.Subject(host)
        for candidates in [sections.filter { $0.port == port }, sections.filter { $0.port == nil }] {
            var best: Section?
            for section in candidates where section.hostPattern.matches(subject) {
                if best == nil || section.hostPattern.specificity > best!.hostPattern.specificity { best = section }
            }
            if let best { return best }
        }
        return nil
    }

    private static func header(_ text: String, line: Int) throws(HostPinsFileError) -> (HostPattern, Int?) {
        guard text.hasSuffix("]"), text.count > 2 else { throw .malformedHeader(line: line, text) }
        let inner = String(text.dropFirst().dropLast())
        var host = inner
        var portText: Substring?
        if inner.hasPrefix("[") {
            guard let close = inner.firstIndex(of: "]") else { throw .malformedHeader(line: line, text) }
            host = String(inner[inner.index(after: inner.startIndex)..<close])
            let rest = inner[inner.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .malformedHeader(line: line, text) }
                portText = rest.dropFirst()
            }
        } else if inner.filter({ $0 == ":" }).count == 1, let colon = inner.firstIndex(of: ":") {
            host = String(inner[..<colon])
            portText = inner[inner.index(after: colon)...]
        }
        var port: Int?
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { throw .malformedHeader(line: line, text) }
            port = value
        }
        do { return (try HostPattern(host), port) } catch { throw .hostPattern(line: line, error) }
    }
}

/// A hosts' pins file that cannot be used; the message names the line.
package enum HostPinsFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A pin line before the first `[HOST]` header.
    case pinOutsideSection(line: Int)
    /// A header that is not `[HOST]` or `[HOST:PORT]`.
    case malformedHeader(line: Int, String)
    /// The header's host pattern is refused.
    case hostPattern(line: Int, HostPatternError)
    /// A section (header at `line`) with no pin.
    case emptySection(line: Int)
    /// A second section for the same host pattern and port (header at `line`).
    case duplicateSection(line: Int)
    /// A pin line is wrong (line numbers are the file's).
    case pins(PinsFileError)
    /// The file has no `[HOST]` section.
    case noSections

    package var description: String {
        switch self {
        case .pinOutsideSection(let line):
            return "line \(line): a pin before the first [HOST] or [HOST:PORT] header; start each host's pins with one"
        case .malformedHeader(let line, let text):
            return "line \(line): '\(text)' is not a [HOST] or [HOST:PORT] header (IPv6: [[::1]:443])"
        case .hostPattern(let line, let error):
            return "line \(line): \(error)"
        case .emptySection(let line):
            return "line \(line): the section has no pin; give the current key's pin and a backup pin"
        case .duplicateSection(let line):
            return "line \(line): a second section for the same host and port; merge their pins into one"
        case .pins(let error):
            return error.description
        case .noSections:
            return "the file has no [HOST] section: write each host's pins under a [HOST] or [HOST:PORT] header"
        }
    }
}
