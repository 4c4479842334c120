/// A pins file as `pin-check --pins-file` reads it: one pin per line, optionally named.
///
///     # production, rotated 2025-06
///     sha256/e+x2jBcHD2GuZhmkCcOJT26JCU5cbVQzOYr4n+jiLvE=
///     backup-ca sha256/QKj6Mjawkk3f+48FPXe4vbXVvdpmPF3pgbn1CrPfDE4=   # not deployed yet
///
/// A line is empty, a `#` comment, `PIN`, or `NAME PIN` (the format of `TestCerts/pins.txt`); text after `#` is
/// a comment. Pins are `sha256/BASE64` or curl's `sha256//BASE64`. Anything else is an error with its line
/// number: a line is never guessed at, so a typo cannot silently drop a pin.
public enum PinsFile {
    /// One pin of the file with its optional name.
    package struct Entry: Sendable, Hashable {
        /// The `NAME` of a `NAME PIN` line, nil for a bare pin.
        package let name: String?
        /// The pin.
        package let pin: SPKIPin
        /// The 1-based line it came from.
        package let line: Int
    }

    /// The pins of `text`, in file order.
    ///
    /// - Throws: ``PinsFileError`` for the first line that is not empty, a comment, `PIN` or `NAME PIN`, and
    ///   when the file holds no pin at all.
    public static func parse(_ text: String) throws(PinsFileError) -> [SPKIPin] {
        try entries(text).map(\.pin)
    }

    /// The entries of `text` (names kept), in file order.
    ///
    /// - Throws: ``PinsFileError`` as ``parse(_:)`` does.
    package static func entries(_ text: String) throws(PinsFileError) -> [Entry] {
        var entries: [Entry] = []
        // Character-wise: "\r\n" is one Character, and a newline like "\n" alone.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for (index, rawLine) in lines.enumerated() {
            let line = index + 1
            let content = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = content.split(whereSeparator: \.isWhitespace).map(String.init)
            switch fields.count {
            case 0:
                continue
            case 1:
                entries.append(Entry(name: nil, pin: try pin(fields[0], line: line), line: line))
            case 2:
                if fields[0].hasPrefix("sha256/") { throw .line(line, .twoPins) }
                entries.append(Entry(name: fields[0], pin: try pin(fields[1], line: line), line: line))
            default:
                throw .line(line, .tooManyFields(fields.count))
            }
        }
        guard !entries.isEmpty else { throw .noPins }
        return entries
    }

    private static func pin(_ text: String, line: Int) throws(PinsFileError) -> SPKIPin {
        do { return try SPKIPin(text) } catch { throw .line(line, .badPin(error)) }
    }
}

/// A pins file that cannot be used; the message names the line and says what a line may hold.
public enum PinsFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with one line.
    public enum Problem: Sendable, Equatable {
        /// The pin does not parse.
        case badPin(PinParseError)
        /// Two pins on one line (put one pin per line).
        case twoPins
        /// More fields than `NAME PIN`.
        case tooManyFields(Int)
    }

    /// Line `Int` (1-based) is wrong.
    case line(Int, Problem)
    /// The file has no pin at all (only blank lines and comments).
    case noPins

    public var description: String {
        switch self {
        case .noPins:
            return "the file holds no pin (only blank lines and # comments)"
        case .line(let line, .badPin(let error)):
            return "line \(line): \(error)"
        case .line(let line, .twoPins):
            return "line \(line): two pins on one line; put one pin per line (PIN or NAME PIN)"
        case .line(let line, .tooManyFields(let count)):
            return "line \(line): \(count) fields; a line holds PIN or NAME PIN (text after # is a comment)"
        }
    }
}
