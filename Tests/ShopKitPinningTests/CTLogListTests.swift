import Foundation
import Testing
@testable import ShopKitPinning

/// `CTLogList(json:)`: Chrome's v3 schema, read strictly.
@Suite(.timeLimit(.minutes(3))) struct CTLogListTests {
    static func id(_ byte: UInt8, count: Int = 32) -> String { Data(repeating: byte, count: count).base64EncodedString() }

    /// A v3 list as Chrome publishes one, with the members ShopKit does not read.
    static let chromeLike = """
        {
          "version": "35.12",
          "log_list_timestamp": "2026-11-01T00:00:00Z",
          "operators": [
            {
              "name": "ShopKit Test Operator One",
              "email": ["ct@example.com"],
              "logs": [
                {
                  "description": "ShopKit Test Log A",
                  "log_id": "\(id(1))",
                  "key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE",
                  "url": "https://ct.example.com/a/",
                  "mmd": 86400,
                  "state": {"usable": {"timestamp": "2025-01-01T00:00:00Z"}},
                  "temporal_interval": {"start_inclusive": "2026-01-01T00:00:00Z", "end_exclusive": "2037-01-01T00:00:00Z"},
                  "log_type": "prod"
                },
                {
                  "description": "ShopKit Test Log B",
                  "log_id": "\(id(2))",
                  "key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE",
                  "url": "https://ct.example.com/b/",
                  "mmd": 86400,
                  "state": {"readonly": {"timestamp": "2026-06-01T00:00:00.5Z",
                    "final_tree_head": {"sha256_root_hash": "AAAA", "tree_size": 12}}},
                  "previous_operators": []
                }
              ],
              "tiled_logs": [
                {
                  "description": "ShopKit Test Tiled Log",
                  "log_id": "\(id(3))",
                  "key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE",
                  "submission_url": "https://tiles.example.com/submit/",
                  "monitoring_url": "https://tiles.example.com/",
                  "mmd": 60,
                  "state": {"retired": {"timestamp": "2026-10-01T00:00:00Z"}}
                }
              ]
            },
            {"name": "ShopKit Test Operator Two", "email": [], "logs": []}
          ]
        }
        """

    static func date(_ text: String) -> Date { try! CTLogListWire.date(text, path: "") }

    static func refuse(_ json: String, _ path: String?, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sourceLocation: sourceLocation) { try CTLogList(json: Data(json.utf8)) } throws: { error in
            guard let error = error as? CTLogListError else { return false }
            return error.path == path && error.message.contains(message)
        }
    }

    /// `chromeLike` with `old` replaced by `new` (which must occur).
    static func changed(_ old: String, _ new: String) -> String {
        precondition(chromeLike.contains(old))
        return chromeLike.replacingOccurrences(of: old, with: new)
    }

    @Test func aChromeLikeListIsRead() throws {
        let list = try CTLogList(json: Data(Self.chromeLike.utf8))
        #expect(list.version == "35.12")
        #expect(list.timestamp == Self.date("2026-11-01T00:00:00Z"))
        #expect(list.operators.map(\.name) == ["ShopKit Test Operator One", "ShopKit Test Operator Two"])
        #expect(list.logs.map(\.description) == ["ShopKit Test Log A", "ShopKit Test Log B", "ShopKit Test Tiled Log"])
        let a = try #require(list.log(id: [UInt8](repeating: 1, count: 32)))
        #expect(a.operatorName == "ShopKit Test Operator One")
        #expect(a.url == "https://ct.example.com/a/")
        #expect(a.mmd == 86_400)
        #expect(a.state == .usable(Self.date("2025-01-01T00:00:00Z")))
        #expect(a.temporalInterval == .init(start: Self.date("2026-01-01T00:00:00Z"), end: Self.date("2037-01-01T00:00:00Z")))
        #expect(a.key.count == 27)
        #expect(list.log(id: [UInt8](repeating: 2, count: 32))?.state == .readOnly(Date(timeIntervalSince1970: 1_780_272_000.5)))
        #expect(list.log(id: [UInt8](repeating: 9, count: 32)) == nil)
    }

    @Test func tiledLogsAreReadAsLogsOfTheirOperator() throws {
        let list = try CTLogList(json: Data(Self.chromeLike.utf8))
        let tiled = try #require(list.log(id: [UInt8](repeating: 3, count: 32)))
        #expect(tiled.description == "ShopKit Test Tiled Log")
        #expect(tiled.operatorName == "ShopKit Test Operator One")
        #expect(tiled.url == "https://tiles.example.com/submit/")
        #expect(tiled.state == .retired(Self.date("2026-10-01T00:00:00Z")))
        #expect(list.operators[0].logs.count == 3)
    }

    /// A log's `previous_operators` are read (the distinct-operator rule counts an SCT for the operator that ran
    /// its log then), and mistakes in them name their field.
    @Test func previousOperatorsAreRead() throws {
        let handed = Self.changed(
            #""previous_operators": []"#,
            #""previous_operators": [{"name": "Earlier Operator", "end_time": "2025-06-01T00:00:00Z"}, "#
                + #"{"name": "First Operator", "end_time": "2024-01-01T00:00:00Z"}]"#)
        let list = try CTLogList(json: Data(handed.utf8))
        let b = try #require(list.log(id: [UInt8](repeating: 2, count: 32)))
        #expect(b.previousOperators == [
            .init(name: "Earlier Operator", end: Self.date("2025-06-01T00:00:00Z")),
            .init(name: "First Operator", end: Self.date("2024-01-01T00:00:00Z")),
        ])
        #expect(b.operatorName(at: Self.date("2023-12-31T23:59:59Z")) == "First Operator")
        #expect(b.operatorName(at: Self.date("2024-01-01T00:00:00Z")) == "Earlier Operator")
        #expect(b.operatorName(at: Self.date("2025-06-01T00:00:00Z")) == "ShopKit Test Operator One")
        #expect(try CTLogList(json: Data(Self.chromeLike.utf8)).log(id: [UInt8](repeating: 2, count: 32))?.previousOperators == [])

        let at = "operators[0].logs[1].previous_operators"
        func previous(_ entries: String) -> String { Self.changed(#""previous_operators": []"#, #""previous_operators": "# + entries) }
        Self.refuse(previous(#"[{"name": "", "end_time": "2025-06-01T00:00:00Z"}]"#), at + "[0].name", "no name")
        Self.refuse(previous(#"[{"name": "X", "end_time": "June 2025"}]"#), at + "[0].end_time", "not a UTC time")
        Self.refuse(previous(#"[{"name": "X"}]"#), at + "[0]", "missing field \"end_time\"")
        Self.refuse(
            previous(#"[{"name": "X", "end_time": "2025-06-01T00:00:00Z"}, {"name": "Y", "end_time": "2025-06-01T00:00:00Z"}]"#),
            at + "[1].end_time", "ambiguous")
        Self.refuse(previous("null"), "operators[0].logs[1].previous_operators", "is null")
        Self.refuse(previous(#"{"name": "X"}"#), "operators[0].logs[1].previous_operators", "must be a JSON array")
    }

    @Test func aDuplicateMemberIsRefused() {
        Self.refuse(Self.changed(#""mmd": 60,"#, #""mmd": 60, "mmd": 61,"#), "operators[0].tiled_logs[0]", "\"mmd\" appears twice")
        Self.refuse(Self.changed(#""version": "35.12","#, #""version": "35.12", "version": "36.0","#), nil, "appears twice")
    }

    @Test func badBase64IsRefused() {
        // The first key is log A's.
        let range = Self.chromeLike.range(of: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE")!
        Self.refuse(Self.chromeLike.replacingCharacters(in: range, with: "MFkw EwYH"), "operators[0].logs[0].key", "not base64")
        Self.refuse(Self.changed(Self.id(2), "!!notbase64!!"), "operators[0].logs[1].log_id", "not base64")
        // Not canonical: the unpadded form of the same bytes.
        Self.refuse(Self.changed(Self.id(2), String(Self.id(2).dropLast())), "operators[0].logs[1].log_id", "not base64")
    }

    @Test func aLogIDThatIsNot32BytesIsRefused() {
        for count in [31, 33, 0] {
            Self.refuse(Self.changed(Self.id(2), Self.id(2, count: count)), "operators[0].logs[1].log_id", "\(count) bytes")
        }
    }

    @Test func anUnknownStateIsRefused() {
        Self.refuse(
            Self.changed(#"{"usable": {"timestamp""#, #"{"frozen": {"timestamp""#), "operators[0].logs[0].state",
            "unknown state \"frozen\"")
        Self.refuse(
            Self.changed(#"{"usable": {"timestamp": "2025-01-01T00:00:00Z"}}"#, #"{}"#), "operators[0].logs[0].state",
            "exactly one member")
    }

    @Test func otherMistakesNameTheirField() {
        Self.refuse(Self.changed(#""log_list_timestamp": "2026-11-01T00:00:00Z""#, #""log_list_timestamp": "yesterday""#),
            "log_list_timestamp", "not a UTC time")
        Self.refuse(Self.changed(#""log_list_timestamp": "2026-11-01T00:00:00Z","#, ""), nil, "missing field \"log_list_timestamp\"")
        Self.refuse(Self.changed(#""mmd": 60"#, #""mmd": "60""#), "operators[0].tiled_logs[0].mmd", "must be an integer")
        Self.refuse(Self.changed(#""mmd": 60"#, #""mmd": null"#), "operators[0].tiled_logs[0].mmd", "is null")
        Self.refuse(Self.changed(Self.id(2), Self.id(1)), "operators[0].logs[1].log_id", "a second log with this log_id")
        Self.refuse(Self.changed("ShopKit Test Operator Two", "ShopKit Test Operator One"), "operators[1].name", "a second operator")
        Self.refuse(
            Self.changed(#""end_exclusive": "2037-01-01T00:00:00Z""#, #""end_exclusive": "2025-01-01T00:00:00Z""#),
            "operators[0].logs[0].temporal_interval", "after start_inclusive")
        Self.refuse("[]", nil, "must be a JSON object")
        Self.refuse("{", nil, "not JSON")
        #expect(CTLogListError("not base64", path: "operators[0].logs[1].key").description
            == "the CT log list is invalid (publisher): operators[0].logs[1].key: not base64")
    }

    @Test func theBundledListIsDatedAndHasNoLogs() throws {
        let bundled = CTLogList.bundled
        #expect(bundled.timestamp == Self.date("2026-11-28T00:00:00Z"))
        #expect(bundled.operators.isEmpty)
        #expect(bundled.logs.isEmpty)
        // The same file as the package resource, found through the bundle SwiftPM generates.
        let url = try #require(Bundle.module.url(forResource: "ct-log-list", withExtension: "json"))
        #expect(try CTLogList(json: Data(contentsOf: url)) == bundled)
    }
}

extension CTLogListTests {
    /// Times are read strictly: a date that does not exist, 24:00, fields without their leading zeros, offsets and
    /// five-digit years are refused (the reader never moves a time to another instant); fractions are read exactly.
    @Test func timesAreReadStrictly() throws {
        for text in [
            "2027-02-30T00:00:00Z", "2026-02-29T00:00:00Z", "2027-01-01T24:00:00Z", "2027-1-1T0:0:0Z", "2027-01-01T00:00:60Z",
            "10000-01-01T00:00:00Z", "2027-01-01T00:00:00+00:00", "2027-01-01 00:00:00Z", "2027-01-01T00:00:00.Z",
            "2027-01-01T00:00:00.1234567891Z", "２０２７-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "1000-01-01T00:00:00Z",
        ] {
            Self.refuse(Self.changed(#""log_list_timestamp": "2026-11-01T00:00:00Z""#, #""log_list_timestamp": "\#(text)""#),
                "log_list_timestamp", "not a UTC time")
        }
        let leap = try CTLogList(json: Data(Self.changed(#""2026-11-01T00:00:00Z""#, #""2028-02-29T23:59:59.125Z""#).utf8))
        #expect(leap.timestamp == Date(timeIntervalSince1970: 1_835_481_599.125))
        #expect(Self.date("1970-01-01T00:00:00Z") == Date(timeIntervalSince1970: 0))
        #expect(Self.date("2000-03-01T00:00:00Z") == Date(timeIntervalSince1970: 951_868_800))
    }

    /// A list's strings reach messages (a path, a member name): printed on one line, never as terminal controls.
    @Test func anErrorIsOnePrintableLine() {
        let error = CTLogListError("unknown state \"a\u{2028}b\u{1B}[2J\u{202E}\"", path: "operators[0]")
        #expect(error.description.contains(#"a\u{2028}b\u{1B}[2J\u{202E}"#), "\(error)")
        #expect(!error.description.unicodeScalars.contains { [0x2028, 0x1B, 0x202E].contains($0.value) })
    }

    /// Numbers are integers, in a list read alone as in a signed document: one list, one reading.
    @Test func numbersAreIntegers() {
        Self.refuse(Self.changed(#""mmd": 60,"#, #""mmd": 6e1,"#), nil, "a number that is not an integer")
        Self.refuse(Self.changed(#""mmd": 60,"#, #""mmd": 60.0,"#), nil, "a number that is not an integer")
    }
}
