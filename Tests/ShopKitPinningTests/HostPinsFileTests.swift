import Testing
@testable import ShopKitPinning

/// The one-file-for-all-hosts pins format of `pin-check --hosts-file … --pins-file`.
@Suite(.timeLimit(.minutes(3))) struct HostPinsFileTests {
    let a = Fixture.pin(1).description, b = Fixture.pin(2).description, c = Fixture.pin(3).description

    @Test func sectionsWithPortsAndPatterns() throws {
        let file = try HostPinsFile(parsing: """
            # all endpoints
            [api.example.com]
            current \(a)   # in use
            backup  \(b)

            [*.example.com]
            \(c)
            [api.example.com:8443]
            \(b)
            [[::1]:443]
            \(a)
            """)
        #expect(file.sections.count == 4)
        #expect(file.section(host: "api.example.com", port: 443)?.pins == [Fixture.pin(1), Fixture.pin(2)])
        #expect(file.section(host: "api.example.com", port: 8443)?.pins == [Fixture.pin(2)])
        #expect(file.section(host: "www.example.com", port: 8443)?.pins == [Fixture.pin(3)])
        #expect(file.section(host: "::1", port: 443)?.pins == [Fixture.pin(1)])
        #expect(file.section(host: "::1", port: 444) == nil)
        #expect(file.section(host: "example.org", port: 443) == nil)
        #expect(file.sections[1].line == 6)
    }

    @Test(arguments: [
        ("\(Fixture.pin(1))\n[a.example.com]\n\(Fixture.pin(2))", HostPinsFileError.pinOutsideSection(line: 1)),
        ("[a.example.com\n\(Fixture.pin(2))", .malformedHeader(line: 1, "[a.example.com")),
        ("[a.example.com:0]\n\(Fixture.pin(2))", .malformedHeader(line: 1, "[a.example.com:0]")),
        ("[a.example.com]\n# nothing\n[b.example.com]\n\(Fixture.pin(2))", .emptySection(line: 1)),
        ("[a.example.com]\n\(Fixture.pin(1))\n[A.example.com]\n\(Fixture.pin(2))", .duplicateSection(line: 3)),
        ("[a.example.com]\n\(Fixture.pin(1))\nsha256/short", .pins(.line(3, .badPin(.badBase64)))),
        ("# only comments\n\n", .noSections),
    ])
    func errorsNameTheLine(text: String, expected: HostPinsFileError) {
        #expect(throws: expected) { try HostPinsFile(parsing: text) }
    }
}
