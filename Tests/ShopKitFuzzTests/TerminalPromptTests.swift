import Foundation
import ShopKitFuzzTargets
import TestSupport
import Testing

/// Regression for the hang the `pem` fuzz target found: OpenSSL's default passphrase callback prompts
/// `Enter PEM pass phrase:` on the controlling terminal and waits, for any PEM block with encryption headers.
/// Off a terminal (CI, `swift test`) it fails at once, so the corpus replay cannot show it; this runs the built
/// replay driver over the encrypted corpus inputs in a real pseudo-terminal (util-linux `script`). Its input
/// holds empty lines, so a prompt that waits gets an (empty) answer and the test fails instead of hanging; a
/// `timeout` would not do, since the child inherits the test runner's blocked signals.
@Suite(.timeLimit(.minutes(3))) struct TerminalPromptTests {
    @Test func encryptedPEMNeverPromptsOnATerminal() async throws {
        let driver = try #require(BuiltBinary(named: "shopkit-fuzz"), "build shopkit-fuzz first (swift build)")
        let inputs = try CorpusReplayTests.inputs(of: .pem).filter { $0.lastPathComponent.hasPrefix("encrypted-") }
        #expect(inputs.count >= 4)
        let quoted = ([driver.url.path, "pem"] + inputs.map(\.path)).map { "'\($0)'" }.joined(separator: " ")
        let terminal = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/script"))
        let run = try await terminal.run(["-qec", quoted, "/dev/null"], stdin: String(repeating: "\n", count: 32))
        #expect(!run.stdout.contains("pass phrase"), "\(run.stdout)")
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdout.contains("pem: \(inputs.count) inputs ran"), "\(run.stdout)")
    }
}
