import Foundation
import Testing
@testable import ShopKitPinning

/// Duplicate JSON member names (issue 38, defect 2): refused in a document's payload and its JWS header, because
/// readers disagree on which of two values counts (RFC 7515 §5.2, I-JSON RFC 7493 §2.3).
@Suite(.timeLimit(.minutes(3))) struct DuplicateMemberTests {
    static func scan(_ text: String) -> JSONDuplicateCheck.Outcome { JSONDuplicateCheck.scan(Array(text.utf8)) }

    @Test func duplicatesAreFoundAtAnyDepthAndSpelling() {
        let cases: [(String, JSONDuplicateCheck.Outcome)] = [
            (#"{"a":1,"a":2}"#, .duplicate(name: "a", in: "")),
            (#"{"a":1,"\u0061":2}"#, .duplicate(name: "a", in: "")),
            (#"{"reportOnly":false, "pins":[], "re\u0070ortOnly" : true}"#, .duplicate(name: "reportOnly", in: "")),
            (#"{"a":[{"b":1},{"b":1,"c":{"d":0,"d":0}}]}"#, .duplicate(name: "d", in: "a[1].c")),
            (#"{"pinSets":[{"host":"x"},{"host":"y","host":"z"}]}"#, .duplicate(name: "host", in: "pinSets[1]")),
            (#"{"\"":1,"\"":2}"#, .duplicate(name: "\"", in: "")),
            // Canonically equivalent names are one name to Swift's decoders: refused too.
            ("{\"\u{E9}\":1,\"e\u{301}\":2}", .duplicate(name: "e\u{301}", in: "")),
        ]
        for (text, expected) in cases {
            #expect(Self.scan(text) == expected, "\(text)")
        }
    }

    @Test func equalNamesInDifferentObjectsAndLookalikeStringsAreNotDuplicates() {
        let cases = [
            #"{"a":{"b":1},"c":{"b":2},"b":3}"#,
            #"[{"x":1},{"x":1}]"#,
            #"{"a":"}\"a\":","b":"\\","c":"{\"c\":1}"}"#,
            #"{"a":["a","a"],"A":1}"#,
            #"{"k":"\ud83d\ude00","l":"\u00e9"}"#,
            #"  {"a" : [ 1 , -2.5e3 , true , false , null , { } , [ ] ] }  "#,
        ]
        for text in cases {
            #expect(Self.scan(text) == .unique, "\(text)")
        }
    }

    @Test func malformedTextIsNeverPassedAsUnique() {
        for text in [#"{"a":1"#, #"{"a":"\ud800"}"#, #"{"a":"\x"}"#, #"{"a" 1}"#, #"}"#, #"{"a":1}}"#, #"{"a":"b"#, ""] {
            guard case .malformed = Self.scan(text) else {
                Issue.record("\(text) was not refused as malformed: \(Self.scan(text))")
                continue
            }
        }
    }

    @Test func deepNestingIsScannedWithoutRecursion() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(Self.scan(deep) == .unique)
        let deepDuplicate = String(repeating: "[", count: 50_000) + #"{"a":1,"a":1}"# + String(repeating: "]", count: 50_000)
        guard case .duplicate(name: "a", _) = Self.scan(deepDuplicate) else {
            Issue.record("a duplicate under 50,000 arrays was missed")
            return
        }
    }

    /// Fuzz-style: random trees of objects and arrays with names from a small alphabet (so that repeats are
    /// frequent), written with random escapes and whitespace; the scan must agree with the tree.
    @Test func randomDocumentsAgreeWithTheirTrees() {
        var generator = SplitMix(seed: 38)
        for round in 0..<2_000 {
            let tree = RandomJSON.tree(depth: 4, using: &generator)
            let text = RandomJSON.write(tree, using: &generator)
            let expected = RandomJSON.firstDuplicate(tree, path: "")
            let outcome = Self.scan(text)
            switch expected {
            case nil: #expect(outcome == .unique, "round \(round): \(text)")
            case let (name, path)?: #expect(outcome == .duplicate(name: name, in: path), "round \(round): \(text)")
            }
            // Foundation agrees the text is JSON.
            #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil, "\(text)")
        }
    }

    @Test func aDocumentWithADuplicateMemberIsRefused() throws {
        let document = #"""
            {"version":3,"issuedAt":"2027-01-15T08:00:00Z","expiresAt":"2027-02-15T08:00:00Z","strictHosts":true,
             "pinSets":[{"host":"api.example.com","pins":["\#(Fixture.pin(1))","\#(Fixture.pin(2))"],"reportOnly":false,"reportOnly":true}]}
            """#
        #expect {
            try PinSetDocument(json: Array(document.utf8))
        } throws: { error in
            guard case .malformedDocument(let problem) = error as? PinSetDocumentError else { return false }
            return problem.contains(#"member "reportOnly" appears twice in pinSets[0]"#)
        }
        let topLevel = #"{"version":3,"version":4,"issuedAt":"2027-01-15T08:00:00Z","expiresAt":"2027-02-15T08:00:00Z","pinSets":[]}"#
        #expect {
            try PinSetDocument(json: Array(topLevel.utf8))
        } throws: { error in
            guard case .malformedDocument(let problem) = error as? PinSetDocumentError else { return false }
            return problem.contains(#"member "version" appears twice in the document"#)
        }
    }

    @Test func aHeaderWithADuplicateMemberIsRefused() throws {
        let payload = Base64URL.encode(Array("{}".utf8))
        let signature = Base64URL.encode([UInt8](repeating: 1, count: 64))
        for header in [#"{"alg":"EdDSA","kid":"current","kid":"backup"}"#, #"{"alg":"none","alg":"EdDSA","kid":"a"}"#] {
            #expect {
                try CompactJWS(parsing: "\(Base64URL.encode(Array(header.utf8))).\(payload).\(signature)")
            } throws: { error in
                guard case .malformedHeader(let problem) = error as? PinSetDocumentError else { return false }
                return problem.contains("appears twice")
            }
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failing round can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random JSON trees and a writer with random escapes.
enum RandomJSON {
    indirect enum Node {
        case object([(String, Node)])
        case array([Node])
        case scalar(String)
    }

    static let names = ["a", "b", "ab", "\"", "\\", "/", "é", "}", ":", "😀"]
    static let scalars = ["1", "-0.5e2", "true", "false", "null", #""x""#, #""{\"a\":1}""#, #""]""#]

    static func tree(depth: Int, using generator: inout SplitMix) -> Node {
        if depth == 0 || Int.random(in: 0..<4, using: &generator) == 0 {
            return .scalar(scalars.randomElement(using: &generator)!)
        }
        let count = Int.random(in: 0..<4, using: &generator)
        if Bool.random(using: &generator) {
            return .array((0..<count).map { _ in tree(depth: depth - 1, using: &generator) })
        }
        return .object((0..<count).map { _ in
            (names.randomElement(using: &generator)!, tree(depth: depth - 1, using: &generator))
        })
    }

    /// The first repeated name in document order, by the scan's rule: the repeat is found when the second one is
    /// read, inner objects first where they come first.
    static func firstDuplicate(_ node: Node, path: String) -> (String, String)? {
        switch node {
        case .scalar: return nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = firstDuplicate(item, path: "\(path)[\(index)]") { return found }
            }
            return nil
        case .object(let members):
            var seen = Set<String>()
            for (name, value) in members {
                if !seen.insert(name).inserted { return (name, path) }
                if let found = firstDuplicate(value, path: path.isEmpty ? name : "\(path).\(name)") { return found }
            }
            return nil
        }
    }

    static func write(_ node: Node, using generator: inout SplitMix) -> String {
        let space = [" ", "", "\n", "\t"].randomElement(using: &generator)!
        switch node {
        case .scalar(let text): return space + text + space
        case .array(let items):
            return "[" + space + items.map { write($0, using: &generator) }.joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { name, value in
                space + quoted(name, using: &generator) + space + ":" + write(value, using: &generator)
            }.joined(separator: ",") + space + "}"
        }
    }

    /// `name` as a JSON string, each character escaped at random (as \uXXXX, surrogate pairs included).
    static func quoted(_ name: String, using generator: inout SplitMix) -> String {
        var out = "\""
        for scalar in name.unicodeScalars {
            let mustEscape = scalar == "\"" || scalar == "\\"
            if mustEscape || Bool.random(using: &generator) {
                if scalar == "\"" || scalar == "\\", Bool.random(using: &generator) {
                    out += "\\" + String(scalar)
                } else {
                    for unit in String(scalar).utf16 { out += String(format: "\\u%04x", unit) }
                }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
