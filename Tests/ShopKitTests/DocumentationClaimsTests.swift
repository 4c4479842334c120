import Foundation
import HTTPTypes
import ShopKitCore
import Testing
import TestSupport

/// The README and every DocC article say what the code does: the claims that went stale once are checked here
/// against the code they describe.
@Suite(.timeLimit(.minutes(3))) struct DocumentationClaimsTests {
    /// README.md and every `.docc` article, with their paths.
    static func documents() throws -> [(path: String, text: String)] {
        let root = READMESnippets.root
        var paths = ["README.md", "CONTRIBUTING.md"]
        let sources = root.appendingPathComponent("Sources")
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            let catalog = sources.appendingPathComponent(module).appendingPathComponent("\(module).docc")
            guard let articles = try? FileManager.default.contentsOfDirectory(atPath: catalog.path) else { continue }
            paths += articles.filter { $0.hasSuffix(".md") }.map { "Sources/\(module)/\(module).docc/\($0)" }
        }
        return try paths.map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) }
    }

    /// Every list of idempotent methods names exactly ShopKitCore's one list (RFC 9110 §9.2.2).
    @Test func everyListOfIdempotentMethodsIsTheCodesList() throws {
        let all: [HTTPRequest.Method] = [.get, .head, .options, .trace, .put, .delete, .post, .patch, .connect]
        let idempotent = Set(all.filter(\.isIdempotent).map(\.rawValue))
        var lists = 0
        for (path, text) in try Self.documents() {
            // "idempotent (GET, HEAD, …)" or "idempotent methods (GET, …)", possibly across a line break.
            let flat = text.replacingOccurrences(of: "\n", with: " ")
            var rest = Substring(flat)
            while let found = rest.range(of: "idempotent") {
                rest = rest[found.upperBound...]
                guard let open = rest.firstIndex(of: "("), rest[..<open].count <= 12,
                    let close = rest[open...].firstIndex(where: { $0 == ")" || $0 == ":" })
                else { continue }
                let named = rest[rest.index(after: open)..<close]
                    .split(whereSeparator: { $0 == "," || $0 == " " })
                    .map(String.init).filter { $0.allSatisfy(\.isUppercase) && !$0.isEmpty }
                lists += 1
                #expect(Set(named) == idempotent, "\(path): idempotent methods listed as \(named)")
            }
        }
        #expect(lists >= 4, "the lists were not found: the check would prove nothing")
    }

    /// Public requests reach the auth middleware as a task-local value or an AuthenticationRequirement, never as
    /// a header marker (which a caller could forge and a server could see).
    @Test func noDocumentDescribesAHeaderMarker() throws {
        for (path, text) in try Self.documents() {
            // Named only to say that such a header does nothing.
            for line in text.split(separator: "\n") where line.contains("X-ShopKit-") {
                #expect(line.contains("cannot"), "\(path) describes an X-ShopKit- header: \(line)")
            }
        }
    }

    /// The README's `openssl` one-liners compute the pins `TestCerts/generate.sh` recorded.
    @Test func theREADMEsOpenSSLPinCommandsGiveThePin() async throws {
        let readme = try READMESnippets.readme()
        let commands = readme.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("openssl x509 -in cert.pem") || $0.hasPrefix("openssl pkey -in key.pem") }
        #expect(commands.count == 2, "the README's two pin commands were not found")
        let directory = TestCertificates.directory.path
        let expected = TestCertificates.pin("leaf-localhost-ecdsa").description
        for command in commands {
            let concrete = command
                .replacingOccurrences(of: "cert.pem", with: "'\(directory)/leaf-localhost-ecdsa.pem'")
                .replacingOccurrences(of: "key.pem", with: "'\(directory)/leaf-localhost-ecdsa.key'")
            let run = try await BuiltBinary(url: URL(fileURLWithPath: "/bin/sh")).run(["-c", concrete])
            #expect(run.status == 0, "\(command): \(run.stderr)")
            #expect("sha256/" + run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == expected, "\(command)")
        }
    }
}
