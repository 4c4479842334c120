import Foundation
import Testing
import ShopKitPinning

@Suite(.timeLimit(.minutes(3))) struct PinsFileTests {
    static let first = "sha256/" + Data([UInt8](0..<32)).base64EncodedString()
    static let second = "sha256/" + Data([UInt8](32..<64)).base64EncodedString()

    @Test func readsBarePinsNamedPinsCommentsAndCurlSyntax() throws {
        let curl = Self.second.replacingOccurrences(of: "sha256/", with: "sha256//")
        let text = "# production\n\n\(Self.first)\r\n  backup-ca\t\(curl)   # not deployed yet\n# end"
        let entries = try PinsFile.entries(text)
        #expect(entries.map(\.pin.description) == [Self.first, Self.second])
        #expect(entries.map(\.name) == [nil, "backup-ca"])
        #expect(entries.map(\.line) == [3, 4])
        #expect(try PinsFile.parse(text) == entries.map(\.pin))
    }

    @Test func readsTheCommittedTestCertsPinsFile() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("TestCerts/pins.txt")
        let entries = try PinsFile.entries(String(contentsOf: url, encoding: .utf8))
        #expect(entries.contains { $0.name == "root" })
        #expect(entries.count > 20)
    }

    @Test func twoPinsOnALineAreAnErrorNotTheLastOne() {
        #expect(throws: PinsFileError.line(2, .twoPins)) {
            try PinsFile.parse("\(Self.first)\n\(Self.first) \(Self.second)\n")
        }
    }

    @Test func moreThanNamePinIsAnError() {
        #expect(throws: PinsFileError.line(1, .tooManyFields(3))) {
            try PinsFile.parse("my backup \(Self.second)")
        }
    }

    @Test func garbageIsABadPinWithItsLineNumber() {
        #expect(throws: PinsFileError.line(3, .badPin(.wrongPrefix("hello")))) {
            try PinsFile.parse("\(Self.first)\n\nhello\n")
        }
        #expect(throws: PinsFileError.line(1, .badPin(.badBase64))) { try PinsFile.parse("leaf sha256/abc") }
        #expect(PinsFileError.line(7, .twoPins).description.hasPrefix("line 7: "))
    }

    @Test func aFileWithoutPinsIsAnError() {
        #expect(throws: PinsFileError.noPins) { try PinsFile.parse("# nothing yet\n\n") }
        #expect(throws: PinsFileError.noPins) { try PinsFile.parse("") }
    }
}
