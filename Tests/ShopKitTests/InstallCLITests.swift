import Foundation
import TestSupport
import Testing

/// `scripts/install-cli` into a temporary prefix, from the built binaries: the CLIs run from there, and their man
/// pages and bash, zsh and fish completions are in the places man and the shells look.
@Suite(.timeLimit(.minutes(3))) struct InstallCLITests {
    static let script = READMESnippets.root.appendingPathComponent("scripts/install-cli").path
    /// Where `pin-check`, `token-store` and `generate-manual` were built (the tests' own build).
    static let binDirectory = BuiltBinary(named: "pin-check")?.url.deletingLastPathComponent()
    static let generatorBuilt = binDirectory.map {
        FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("generate-manual").path)
    } ?? false

    static func temporaryPrefix() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-install-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        return url
    }

    @Test(.enabled(
        if: generatorBuilt,
        "swift-argument-parser's generate-manual is not built: `swift build --product generate-manual` (scripts/test does)"))
    func installsBothCLIsWithManPagesAndCompletions() async throws {
        let prefix = try Self.temporaryPrefix()
        defer { try? FileManager.default.removeItem(at: prefix) }
        let binDirectory = try #require(Self.binDirectory)
        let install = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/bash")).run(
            [Self.script, "--prefix", prefix.path, "--from", binDirectory.path],
            environment: ["SOURCE_DATE_EPOCH": "1800000000"])
        #expect(install.status == 0, "\(install.stderr)")

        for tool in ["pin-check", "token-store"] {
            let help = try await BuiltBinary(url: prefix.appendingPathComponent("bin/\(tool)")).run(["--help"])
            #expect(help.status == 0, "\(tool) --help: \(help.stderr)")
            #expect(help.stdout.contains("USAGE: \(tool)"), "\(help.stdout)")

            let page = try String(contentsOf: prefix.appendingPathComponent("share/man/man1/\(tool).1"), encoding: .utf8)
            #expect(page.contains(".Dt \(tool.uppercased()) 1"))
            #expect(page.contains(".Dd January 15, 2027"))  // SOURCE_DATE_EPOCH: reproducible
            #expect(page.contains(".Nm \(tool)"))

            let completions = [
                ("share/bash-completion/completions/\(tool)", "complete"),
                ("share/zsh/site-functions/_\(tool)", "#compdef \(tool)"),
                ("share/fish/vendor_completions.d/\(tool).fish", "complete -c '\(tool)'"),
            ]
            for (path, marker) in completions {
                let text = try String(contentsOf: prefix.appendingPathComponent(path), encoding: .utf8)
                #expect(!text.isEmpty && text.contains(marker), "\(path) lacks \(marker)")
            }
            // The bash completion parses.
            let parse = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/bash")).run(
                ["-n", prefix.appendingPathComponent("share/bash-completion/completions/\(tool)").path])
            #expect(parse.status == 0, "\(parse.stderr)")
        }
    }

    @Test func aMissingBuildIsNamedNotHalfInstalled() async throws {
        let prefix = try Self.temporaryPrefix()
        defer { try? FileManager.default.removeItem(at: prefix) }
        let empty = prefix.appendingPathComponent("empty-build")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false)
        let install = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/bash")).run(
            [Self.script, "--prefix", prefix.appendingPathComponent("p").path, "--from", empty.path])
        #expect(install.status == 69)
        #expect(install.stderr.contains("pin-check is not built"))
        #expect(!FileManager.default.fileExists(atPath: prefix.appendingPathComponent("p").path))
        let usage = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/bash")).run([Self.script, "--bogus"])
        #expect(usage.status == 64)
    }
}
