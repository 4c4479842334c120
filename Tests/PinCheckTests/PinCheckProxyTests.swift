import Foundation
import TestSupport
import Testing

/// `pin-check --proxy` and `--proxy-from-env` through a real tinyproxy: the built binary, its exit status and
/// its JSON.
@Suite(.timeLimit(.minutes(3))) struct PinCheckProxyTests {
    private static let leafPin = TestCertificates.pin("leaf-localhost-ecdsa").description
    private static let backupPin = TestCertificates.pin("backup-intermediate").description

    /// Runs pin-check against a loopback server, with the test root as its only anchor.
    private static func run(_ extra: [String], environment: [String: String] = [:]) async throws -> (BuiltBinary.Outcome, Int) {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let caFile = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { try? FileManager.default.removeItem(at: caFile) }
        let outcome = try await PinCheckBinary.binary().run(
            ["127.0.0.1:\(server.port)", "--servername", "localhost", "--ca-file", caFile.path, "--timeout", "60"] + extra,
            environment: environment)
        try await server.shutdown()
        return (outcome, server.port)
    }

    @Test func checksPinsThroughTheTunnelAndSaysSoInJSON() async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let (outcome, port) = try await Self.run(
            ["--proxy", proxy.url.absoluteString, "--json", "--pin", Self.leafPin, "--pin", Self.backupPin])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(object["proxy"] as? String == "http://127.0.0.1:\(proxy.port)")
        #expect(object["verdict"] as? String == "ok")
        #expect(object["matchedPin"] as? String == Self.leafPin)
        try await proxy.waitForConnects(1)
        #expect(proxy.connectTargets == ["127.0.0.1:\(port)"])
    }

    /// Issue 39, item 3: a host in any spelling is made canonical before the tunnel, so `LocalHost` and
    /// `localhost.` reach the proxy as `CONNECT localhost:PORT` (not "invalid URL … no CONNECT is sent").
    @Test(arguments: ["LocalHost", "localhost."])
    func aHostInAnySpellingIsTunnelledUnderItsCanonicalName(_ host: String) async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let caFile = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        defer { try? FileManager.default.removeItem(at: caFile) }
        let outcome = try await PinCheckBinary.run(
            ["\(host):\(server.port)", "--ca-file", caFile.path, "--timeout", "60", "--proxy", proxy.url.absoluteString,
             "--json", "--pin", Self.leafPin, "--pin", Self.backupPin])
        try await server.shutdown()
        #expect(outcome.status == 0, "stdout: \(outcome.stdout)\nstderr: \(outcome.stderr)")
        #expect(outcome.verdict == "ok")
        try await proxy.waitForConnects(1)
        #expect(proxy.connectTargets == ["localhost:\(server.port)"])
    }

    @Test func directChecksHaveANullProxyInJSON() async throws {
        let (outcome, _) = try await Self.run(["--json"])
        #expect(outcome.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(object.keys.contains("proxy") && object["proxy"] is NSNull)
    }

    @Test func aRefusingProxyIsAConnectionFailure() async throws {
        let proxy = try await TinyproxyServer.start(.init(allowsConnect: false))
        defer { proxy.stop() }
        let (outcome, _) = try await Self.run(["--proxy", proxy.url.absoluteString])
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("via proxy http://127.0.0.1:\(proxy.port)"))
        #expect(outcome.stdout.contains("the proxy refused to open a tunnel (HTTP 403)"))
    }

    @Test func credentialsComeFromTheEnvironmentNeverArgv() async throws {
        let proxy = try await TinyproxyServer.start(.init(basicAuth: ("shopkit", "env-s3cret")))
        defer { proxy.stop() }
        let url = "http://shopkit:env-s3cret@127.0.0.1:\(proxy.port)"
        let (refused, _) = try await Self.run(["--proxy", url])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("--proxy-from-env"))
        #expect(!refused.stderr.contains("env-s3cret") && !refused.stdout.contains("env-s3cret"))

        let (wrong, _) = try await Self.run(
            ["--proxy-from-env"], environment: ["HTTPS_PROXY": "http://shopkit:wrong@127.0.0.1:\(proxy.port)", "NO_PROXY": ""])
        #expect(wrong.status == 4)
        #expect(wrong.stdout.contains("the proxy requires authentication"))

        let (ok, _) = try await Self.run(
            ["--proxy-from-env", "--json"], environment: ["https_proxy": url, "NO_PROXY": "", "no_proxy": ""])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(!ok.stdout.contains("env-s3cret"))
        #expect(ok.stdout.contains("(with credentials)"))
    }

    @Test func noProxyFromTheEnvironmentConnectsDirectly() async throws {
        let proxy = try await TinyproxyServer.start()
        defer { proxy.stop() }
        let (outcome, _) = try await Self.run(
            ["--proxy-from-env", "--json"], environment: ["HTTPS_PROXY": proxy.url.absoluteString, "NO_PROXY": "127.0.0.1"])
        #expect(outcome.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any])
        #expect(object["proxy"] is NSNull)
        #expect(proxy.connectTargets.isEmpty)
    }
}
