import Foundation
import Testing
@testable import ShopKitPinning

/// `PinSetDocument.check`: a validly signed document may not weaken what the app's baseline pins, beyond what the
/// document says it does (`unpinnedBaselineHosts`) and what the app allows in code.
@Suite(.timeLimit(.minutes(3))) struct PinSetDocumentTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let expiresAt = now + 30 * 86_400

    /// A document's JSON: `sets` as (host, reportOnly, expiration), each with two pins.
    static func json(
        _ sets: [(String, Bool, Date?)], strictHosts: Bool = true, unpinning: [String] = [], version: Int = 3
    ) -> [UInt8] {
        let pinSets = sets.map { host, reportOnly, expiration -> [String: Any] in
            var set: [String: Any] = ["host": host, "pins": [Fixture.pin(1).description, Fixture.pin(2).description]]
            if reportOnly { set["reportOnly"] = true }
            if let expiration { set["expiration"] = PinSetDocument.timestamp(expiration) }
            return set
        }
        var object: [String: Any] = [
            "version": version, "issuedAt": PinSetDocument.timestamp(now - 60),
            "expiresAt": PinSetDocument.timestamp(expiresAt), "strictHosts": strictHosts, "pinSets": pinSets,
        ]
        if !unpinning.isEmpty { object["unpinnedBaselineHosts"] = unpinning }
        return Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    static func baseline(_ patterns: [String], strict: Bool = false) -> PinningPolicy {
        PinningPolicy(
            pinSets: patterns.map { try! PinSet(host: $0, pins: [Fixture.pin(1).description, Fixture.pin(2).description]) },
            unpinnedHosts: strict ? .refuse : .allow)
    }

    static func check(_ json: [UInt8], _ baseline: PinningPolicy) throws {
        try PinSetDocument(json: json).check(baseline: baseline, currentVersion: 0, now: now)
    }

    static func weakens(_ pattern: String, _ reason: String) -> (any Error) -> Bool {
        { error in
            guard case .weakensBaselineHost(let refused, let why) = error as? PinSetDocumentError else { return false }
            return refused == pattern && why.contains(reason)
        }
    }

    // MARK: the baseline rule (issue 38, defect 1)

    @Test func aReportOnlySetForABaselineHostIsRefused() throws {
        let json = Self.json([("api.example.com", true, nil)])
        #expect { try Self.check(json, Self.baseline(["api.example.com"])) } throws: {
            Self.weakens("api.example.com", "report-only")($0)
        }
    }

    @Test func aSetForABaselineHostThatExpiresBeforeTheDocumentIsRefused() throws {
        for expiration in [Self.now - 60, Self.expiresAt - 1] {
            let json = Self.json([("api.example.com", false, expiration)], strictHosts: false)
            #expect { try Self.check(json, Self.baseline(["api.example.com"])) } throws: {
                Self.weakens("api.example.com", "expires at \(PinSetDocument.timestamp(expiration))")($0)
            }
        }
    }

    @Test func aMoreSpecificWeakerSetUnderABaselineWildcardIsRefused() throws {
        let reportOnly = Self.json([("*.example.com", false, nil), ("api.example.com", true, nil)])
        #expect { try Self.check(reportOnly, Self.baseline(["*.example.com"])) } throws: {
            Self.weakens("*.example.com", "api.example.com")($0)
        }
        let expiring = Self.json([("**.example.com", false, nil), ("*.cdn.example.com", false, Self.now + 3600)])
        #expect { try Self.check(expiring, Self.baseline(["**.example.com"])) } throws: {
            Self.weakens("**.example.com", "*.cdn.example.com")($0)
        }
    }

    @Test func aBaselineWildcardOnlyPartlyCoveredIsDropped() throws {
        let json = Self.json([("api.example.com", false, nil)])
        #expect(throws: PinSetDocumentError.dropsBaselineHost("*.example.com")) {
            try Self.check(json, Self.baseline(["*.example.com"]))
        }
    }

    @Test func enforcedSetsLiveForTheWholeValidityAreAccepted() throws {
        let cases: [([(String, Bool, Date?)], [String])] = [
            ([("api.example.com", false, nil)], ["api.example.com"]),
            ([("api.example.com", false, Self.expiresAt + 1)], ["api.example.com"]),
            ([("**.example.com", false, nil)], ["api.example.com", "*.example.com", "**.example.com"]),
            ([("*.example.com", false, nil), ("api.example.com", false, Self.expiresAt + 86_400)], ["*.example.com"]),
            // A weaker set outside the baseline pattern, or less specific than the enforced one, weakens nothing.
            ([("api.example.com", false, nil), ("**.example.com", true, nil), ("shop.example.org", true, nil)], ["api.example.com"]),
            ([("127.0.0.1", false, nil)], ["127.0.0.1"]),
        ]
        for (sets, baseline) in cases {
            try Self.check(Self.json(sets), Self.baseline(baseline))
        }
        // Listed in unpinnedBaselineHosts: unpinned on purpose, whatever covers it.
        try Self.check(Self.json([("api.example.com", true, nil)], unpinning: ["api.example.com"]), Self.baseline(["api.example.com"]))
    }

    // MARK: strict hosts (issue 38, defect 3)

    @Test func aDocumentCannotTurnAStrictBaselineLax() throws {
        let lax = Self.json([("api.example.com", false, nil)], strictHosts: false)
        #expect(throws: PinSetDocumentError.relaxesStrictHosts) {
            try Self.check(lax, Self.baseline(["api.example.com"], strict: true))
        }
        // Leaving the field out is not a way round it.
        var object = try #require(try JSONSerialization.jsonObject(with: Data(lax)) as? [String: Any])
        object["strictHosts"] = nil
        let omitted = Array(try JSONSerialization.data(withJSONObject: object))
        #expect(throws: PinSetDocumentError.relaxesStrictHosts) {
            try Self.check(omitted, Self.baseline(["api.example.com"], strict: true))
        }
        // The app may allow it in code; a lax baseline may get a strict or a lax document.
        var allowing = Self.baseline(["api.example.com"], strict: true)
        allowing.documentsMayAllowUnpinnedHosts = true
        try Self.check(lax, allowing)
        try Self.check(lax, Self.baseline(["api.example.com"]))
        try Self.check(Self.json([("api.example.com", false, nil)]), Self.baseline(["api.example.com"]))
    }

    /// Found by the adversarial review: a strict document with report-only sets for hosts the baseline does not pin
    /// (`**.co.uk`, `**.evil.com`) let a strict app reach every host they cover without enforced pins.
    @Test func aReportOnlySetOverAStrictBaselineIsRefused() throws {
        let strict = Self.baseline(["api.example.com"], strict: true)
        for pattern in ["**.co.uk", "**.evil.com", "metrics.example.net"] {
            let document = Self.json([("api.example.com", false, nil), (pattern, true, nil)])
            #expect(throws: PinSetDocumentError.reportOnlyUnderStrictHosts(try HostPattern(pattern))) {
                try Self.check(document, strict)
            }
            // The app may allow it in code, and a lax app takes it.
            var allowing = strict
            allowing.documentsMayAllowUnpinnedHosts = true
            try Self.check(document, allowing)
            try Self.check(document, Self.baseline(["api.example.com"]))
        }
    }
}

extension PinSetDocumentTests {
    /// docs/pin-set-document.md's complete example is a document the library reads as the page says.
    @Test func theDocumentedExampleParses() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/pin-set-document.md"), encoding: .utf8)
        let section = try #require(page.range(of: "## The payload: a complete example"))
        let start = try #require(page[section.upperBound...].range(of: "```json\n"))
        let end = try #require(page[start.upperBound...].range(of: "```\n"))
        let document = try PinSetDocument(json: Array(page[start.upperBound..<end.lowerBound].utf8))
        #expect(document.version == 7)
        #expect(document.audience == "com.example.shop")
        #expect(document.policy.unpinnedHosts == .refuse)
        #expect(document.policy.pinSets.map(\.hostPattern.description) == ["api.example.com", "**.cdn.example.com", "metrics.example.net"])
        #expect(document.unpinnedBaselineHosts.map(\.description) == ["legacy.example.com"])
        // A strict app that allows report-only sets in code (the example has one).
        var baseline = Self.baseline(["api.example.com", "legacy.example.com"], strict: true)
        baseline.documentsMayAllowUnpinnedHosts = true
        try document.check(baseline: baseline, currentVersion: 6, now: document.issuedAt)
        baseline.documentsMayAllowUnpinnedHosts = false
        #expect(throws: PinSetDocumentError.reportOnlyUnderStrictHosts(try HostPattern("metrics.example.net"))) {
            try document.check(baseline: baseline, currentVersion: 6, now: document.issuedAt)
        }
    }
}

extension PinSetDocumentTests {
    /// Found by the adversarial review: times and versions that a decoder reads otherwise than the text says.
    @Test func timesAndVersionsMeanExactlyWhatTheirTextSays() throws {
        let good = try #require(String(decoding: Self.json([("api.example.com", false, nil)]), as: UTF8.self) as String?)
        let issued = PinSetDocument.timestamp(Self.now - 60)
        for odd in [
            "2026-11-28T10:00:00+14:00", "2027-02-30T00:00:00Z", "2026-12-31T24:00:00Z", "2027-1-1T0:0:0Z",
            " \(issued)", "\(issued) ", "\u{FF12}\u{FF10}\u{FF12}\u{FF17}-01-01T00:00:00Z",
        ] {
            let text = good.replacingOccurrences(of: "\"issuedAt\":\"\(issued)\"", with: "\"issuedAt\":\(String(reflecting: odd))")
            #expect(text != good, "the fixture changed: \(odd)")
            #expect("\(odd)") { try PinSetDocument(json: Array(text.utf8)) } throws: { error in
                guard case .malformedDocument(let problem) = error as? PinSetDocumentError else { return false }
                return problem.contains("issuedAt") && problem.contains("YYYY-MM-DDTHH:MM:SSZ")
            }
        }
        for version in ["3.0", "3e0", "2.9999999999999999", "0.3E1"] {
            let text = good.replacingOccurrences(of: "\"version\":3", with: "\"version\":\(version)")
            #expect(text != good)
            #expect("\(version)") { try PinSetDocument(json: Array(text.utf8)) } throws: { error in
                guard case .malformedDocument(let problem) = error as? PinSetDocumentError else { return false }
                return problem.contains("not an integer")
            }
        }
        _ = try PinSetDocument(json: Array(good.utf8))
    }
}

extension PinSetDocumentTests {
    /// Found by the adversarial review: a document's own strings reached the message raw, so a host carrying an
    /// escape sequence was acted on by the terminal that printed the refusal, and a newline split the log line.
    @Test func aRefusalNeverCarriesControlCharactersFromTheDocument() throws {
        let text = String(decoding: Self.json([("api.example.com", false, nil)]), as: UTF8.self)
            .replacingOccurrences(of: "\"api.example.com\"", with: "\"\\u001B[2J\\nevil.example.com\"")
        #expect { try PinSetDocument(json: Array(text.utf8)) } throws: { error in
            let message = "\(error)"
            return !message.unicodeScalars.contains { $0.properties.generalCategory == .control }
                && message.contains("\\u{1B}[2J\\u{A}evil.example.com")
        }
    }
}
