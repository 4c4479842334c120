/// A strict scan of JSON text for member names repeated within one object, before any decoder reads it.
///
/// Why: RFC 8259 leaves duplicate names to each reader, and readers disagree (Foundation's `JSONDecoder` keeps the
/// first, `jq`, Python and JavaScript the last). In a signed document that lets a reviewer and the app read two
/// different policies from one signature, so JWS (RFC 7515 §5.2) and I-JSON (RFC 7493 §2.3) require refusing them.
///
/// The scan is a validating tokenizer, not a parser: it builds no values, keeps an explicit stack (no recursion,
/// so any depth is safe), decodes names with their escapes (`"\u0061"` is `"a"`) and compares them as Swift
/// strings (so canonically equivalent names, one name to Swift's decoders, count as repeats). Text that is not
/// JSON (RFC 8259 grammar, UTF-8, no unpaired surrogate escapes) is `malformed`, never `unique`.
package enum JSONDuplicateCheck {
    /// What the scan found.
    package enum Outcome: Sendable, Equatable {
        /// Valid JSON with no name repeated within an object.
        case unique
        /// `name` is repeated in the object at `path` (`pinSets[0]`; empty for the top level).
        case duplicate(name: String, in: String)
        /// Not JSON text; the reason and byte offset.
        case malformed(String)
        /// JSON text whose objects and arrays nest deeper than the `maximumDepth` given (the limit).
        case tooDeep(Int)
    }

    private enum Frame {
        case object(names: Set<String>, current: String?)
        case array(index: Int)
    }

    private enum Expect { case value, valueOrEnd, nameOrEnd, name, colon, commaOrEnd, done }

    /// Scans `bytes` (one JSON text). With `integersOnly`, a number with a fraction or an exponent (`1.0`, `1e0`,
    /// `0.99999999999999999`, which decoders round to an integer another reader would not see) is malformed. With
    /// `maximumDepth`, objects and arrays nested deeper than that are `tooDeep`: valid JSON that a decoder would
    /// give up on (Foundation's stops at a depth of its own), reported as what it is rather than as "not JSON".
    package static func scan(_ bytes: [UInt8], integersOnly: Bool = false, maximumDepth: Int? = nil) -> Outcome {
        var stack: [Frame] = []
        var expect = Expect.value
        var index = 0
        func malformed(_ what: String) -> Outcome { .malformed("\(what) at byte \(index)") }
        while true {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
            guard index < bytes.count else { break }
            let byte = bytes[index]
            switch expect {
            case .done:
                return malformed("text after the JSON value")
            case .colon:
                guard byte == UInt8(ascii: ":") else { return malformed("expected ':'") }
                index += 1
                expect = .value
            case .name, .nameOrEnd:
                if expect == .nameOrEnd, byte == UInt8(ascii: "}") {
                    index += 1
                    stack.removeLast()
                    expect = stack.isEmpty ? .done : .commaOrEnd
                    continue
                }
                guard byte == UInt8(ascii: "\"") else { return malformed("expected a member name") }
                guard let name = string(bytes, &index) else { return malformed("invalid string") }
                guard case .object(var names, _) = stack[stack.count - 1] else { return malformed("internal") }
                guard names.insert(name).inserted else { return .duplicate(name: name, in: path(stack.dropLast())) }
                stack[stack.count - 1] = .object(names: names, current: name)
                expect = .colon
            case .commaOrEnd:
                switch (byte, stack[stack.count - 1]) {
                case (UInt8(ascii: ","), .object):
                    expect = .name
                case (UInt8(ascii: ","), .array(let position)):
                    stack[stack.count - 1] = .array(index: position + 1)
                    expect = .value
                case (UInt8(ascii: "}"), .object), (UInt8(ascii: "]"), .array):
                    stack.removeLast()
                    expect = stack.isEmpty ? .done : .commaOrEnd
                default:
                    return malformed("expected ',' or the end of the object or array")
                }
                index += 1
            case .value, .valueOrEnd:
                switch byte {
                case UInt8(ascii: "]") where expect == .valueOrEnd:
                    index += 1
                    stack.removeLast()
                    expect = stack.isEmpty ? .done : .commaOrEnd
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    if let maximumDepth, stack.count >= maximumDepth { return .tooDeep(maximumDepth) }
                    index += 1
                    if byte == UInt8(ascii: "{") {
                        stack.append(.object(names: [], current: nil))
                        expect = .nameOrEnd
                    } else {
                        stack.append(.array(index: 0))
                        expect = .valueOrEnd
                    }
                case UInt8(ascii: "\""):
                    guard string(bytes, &index) != nil else { return malformed("invalid string") }
                    expect = stack.isEmpty ? .done : .commaOrEnd
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    let start = index
                    guard number(bytes, &index) else { return malformed("invalid number") }
                    if integersOnly, bytes[start..<index].contains(where: { [0x2E, 0x65, 0x45].contains($0) }) {
                        index = start
                        return malformed("a number that is not an integer (a fraction or an exponent)")
                    }
                    expect = stack.isEmpty ? .done : .commaOrEnd
                default:
                    guard let literal = ["true", "false", "null"].first(where: { bytes[index...].starts(with: $0.utf8) })
                    else { return malformed("expected a value") }
                    index += literal.utf8.count
                    expect = stack.isEmpty ? .done : .commaOrEnd
                }
            }
        }
        return expect == .done ? .unique : malformed("unexpected end")
    }

    /// The path of the object or array innermost in `frames` (`a[1].c`), from the names and indices that lead there.
    private static func path(_ frames: ArraySlice<Frame>) -> String {
        var path = ""
        for frame in frames {
            switch frame {
            case .object(_, let current): path += (path.isEmpty ? "" : ".") + (current ?? "")
            case .array(let position): path += "[\(position)]"
            }
        }
        return path
    }

    /// The string starting at `index` (its opening quote), decoded; `index` moves past its closing quote. Nil for
    /// a control character, a bad escape, an unpaired surrogate or invalid UTF-8.
    private static func string(_ bytes: [UInt8], _ index: inout Int) -> String? {
        var decoded: [UInt8] = []
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: decoded, as: UTF8.self)
            case 0..<0x20:
                return nil
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    guard var unit = hex4(bytes, &index) else { return nil }
                    if (0xD800...0xDBFF).contains(unit) {
                        guard bytes[index...].starts(with: "\\u".utf8) else { return nil }
                        index += 2
                        guard let low = hex4(bytes, &index), (0xDC00...0xDFFF).contains(low) else { return nil }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        return nil
                    }
                    guard let scalar = Unicode.Scalar(unit) else { return nil }
                    decoded += Array(String(Character(scalar)).utf8)
                default:
                    return nil
                }
            default:
                decoded.append(byte)
            }
        }
        return nil
    }

    /// Four hex digits at `index` as a UTF-16 code unit; `index` moves past them.
    private static func hex4(_ bytes: [UInt8], _ index: inout Int) -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    /// A number at `index` by RFC 8259's grammar (`-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`).
    private static func number(_ bytes: [UInt8], _ index: inout Int) -> Bool {
        func digits() -> Int {
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - start
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { return false }
        if bytes[index] == UInt8(ascii: "0") { index += 1 } else if digits() == 0 { return false }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return true
    }
}
