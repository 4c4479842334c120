import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitOpenSSL
import TestSupport
import Testing
import ShopKit

/// The "Rotating pins" walkthrough of the "Pinning in operation" article, run as written: its shell block's commands (the built pin-check and
/// the openssl command, in a temporary directory; `api.example.com` is the loopback server's `localhost`, and
/// pins-document trusts the test CA) between the app's own steps, against in-process TLS servers.
@Suite(.timeLimit(.minutes(3))) struct RotatingPinsWalkthroughTests {
    static let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))
    static let shell = BuiltBinary(url: URL(fileURLWithPath: "/bin/sh"))

    /// The article with the walkthrough.
    static let article = "Sources/ShopKit/ShopKit.docc/PinningInOperationGuide.md"

    /// The walkthrough block, split at its `# N.` step comments: index 0 is the setup before step 1.
    static func steps() throws -> [[String]] {
        let readme = try READMESnippets.document(Self.article)
        let section = try #require(readme.range(of: "\n## Rotating pins\n"))
        let block = try #require(readme[section.upperBound...].range(of: "```sh\n"))
        let end = try #require(readme[block.upperBound...].range(of: "```\n"))
        var steps: [[String]] = [[]]
        for line in readme[block.upperBound..<end.lowerBound].split(separator: "\n").map(String.init) {
            if line.range(of: #"^# [1-5]\. "#, options: .regularExpression) != nil { steps.append([]) }
            if !line.hasPrefix("#"), !line.trimmingCharacters(in: .whitespaces).isEmpty { steps[steps.count - 1].append(line) }
        }
        return steps
    }

    /// Runs one line of the walkthrough in `directory` with the built pin-check first on PATH.
    static func run(_ line: String, in directory: String) async throws {
        var command = line.replacingOccurrences(of: "api.example.com", with: "localhost")
        if command.hasPrefix("pin-check pins-document") { command += " --ca-file root.pem" }
        let pinCheck = try #require(BuiltBinary(named: "pin-check"))
        let path = pinCheck.url.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let outcome = try await shell.run(["-c", "cd '\(directory)' && \(command)"], environment: ["PATH": path])
        #expect(outcome.status == 0, "\(command): \(outcome.stderr)")
    }

    /// A loopback HTTPS server for `localhost` with `chain` and `key`, serving `document` at /pins.jws.
    static func server(chain: String, key: String, document: NIOLockedValueBox<String>) async throws -> LoopbackHTTPServer {
        let tls = try TLSServerContext(certificateChainPEM: chain, privateKeyPEM: key)
        return try await LoopbackHTTPServer.start(
            extraHandlers: { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(tls.makeHandler(), position: .first)
                }
            },
            script: { request in request.uri == "/pins.jws" ? .ok(Array(document.withLockedValue { $0 }.utf8)) : .ok() })
    }

    static func transport(_ pinning: PinningPolicy) throws -> HTTPSTransport {
        try HTTPSTransport(
            configuration: .init(
                tls: TLSClientConfiguration(
                    trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false), pinning: pinning), timeouts: .wide(),
                connectAddresses: ["localhost": "127.0.0.1"]))
    }

    @Test func theFiveStepRotation() async throws {
        let steps = try Self.steps()
        #expect(steps.count == 6)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rotation-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func file(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }
        try TestCertificates.certificate("root").write(toFile: file("root.pem"), atomically: true, encoding: .utf8)

        // The app: its baseline pins the key in use and a backup intermediate, strictly (hosts without pins are
        // refused); its signing keys come from setup.
        for line in steps[0] { try await Self.run(line, in: directory) }
        let baseline = PinningPolicy(
            pinSets: [
                try PinSet(hostPattern: HostPattern("localhost"), pins: ["leaf-localhost-ecdsa", "backup-intermediate"].map(TestCertificates.pin))
            ], unpinnedHosts: .refuse)
        let transport = try Self.transport(baseline)
        let document = NIOLockedValueBox("")
        let oldServer = try await Self.server(
            chain: TestCertificates.standardChain(), key: TestCertificates.privateKey("leaf-localhost-ecdsa"), document: document)
        let verifier = try PinSetVerifier(publicKeys: [
            "signing-1": String(contentsOfFile: file("signing-1.pub"), encoding: .utf8),
            "signing-2": String(contentsOfFile: file("signing-2.pub"), encoding: .utf8),
        ], audience: "com.example.shop")
        let updates = PinUpdates(
            transport: transport, documentURL: URL(string: "https://localhost:\(oldServer.port)/pins.jws")!,
            verifier: verifier, storePath: file("app/pins.jws"))
        await updates.start()

        // 1. A backup key; 2. a document pinning the key in use and the backup, signed and checked.
        for line in steps[1] { try await Self.run(line, in: directory) }
        try "localhost:\(oldServer.port)\n".write(toFile: file("hosts.txt"), atomically: true, encoding: .utf8)
        for line in steps[2] { try await Self.run(line, in: directory) }
        document.withLockedValue { $0 = try! String(contentsOfFile: file("pins.jws"), encoding: .utf8) }

        // 3. The app picks it up.
        #expect(try await updates.update() == 1)
        #expect(transport.pinning.unpinnedHosts == .refuse)
        let backupPin = try Self.pin(ofKey: file("backup/localhost.key"))
        #expect(transport.pinning.pinSet(for: "localhost")?.pins.contains(backupPin) == true)

        // 4. The new key goes live, certified by another CA of the chain (so only the backup pin matches it).
        let ca = TestCertificates.directory
        let signed = try await Self.openssl.run([
            "x509", "-req", "-in", file("backup/localhost.csr"), "-CA", ca.appendingPathComponent("intermediate-1.pem").path,
            "-CAkey", ca.appendingPathComponent("intermediate-1.key").path, "-set_serial", "27", "-days", "30",
            "-copy_extensions", "copy", "-out", file("new-leaf.pem"),
        ])
        #expect(signed.status == 0, "openssl: \(signed.stderr)")
        let newServer = try await Self.server(
            chain: String(contentsOfFile: file("new-leaf.pem"), encoding: .utf8) + TestCertificates.certificate("intermediate-1"),
            key: String(contentsOfFile: file("backup/localhost.key"), encoding: .utf8), document: document)
        let newURL = URL(string: "https://localhost:\(newServer.port)")!
        #expect(try await transport.send(.init(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: newURL, operationID: "t").0.status == .ok)
        // Without the document, the app's baseline would refuse the new key.
        let baselineOnly = try Self.transport(baseline)
        await #expect {
            _ = try await baselineOnly.send(.init(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: newURL, operationID: "t")
        } throws: { error in
            if (error as? TLSError)?.code == .pinMismatch { return true }
            return false
        }
        await baselineOnly.shutdown()

        // 5. A document without the old key, fetched from the new server.
        try "localhost:\(newServer.port)\n".write(toFile: file("hosts.txt"), atomically: true, encoding: .utf8)
        for line in steps[5] { try await Self.run(line, in: directory) }
        document.withLockedValue { $0 = try! String(contentsOfFile: file("pins.jws"), encoding: .utf8) }
        let newUpdates = PinUpdates(
            transport: transport, documentURL: newURL.appendingPathComponent("pins.jws"), verifier: verifier,
            storePath: file("app/pins.jws"))
        await newUpdates.start()
        #expect(try await newUpdates.update() == 2)
        #expect(transport.pinning.unpinnedHosts == .refuse)
        let pins = try #require(transport.pinning.pinSet(for: "localhost")?.pins)
        #expect(pins.contains(backupPin))
        #expect(!pins.contains(TestCertificates.pin("leaf-localhost-ecdsa")))
        #expect(try await transport.send(.init(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: newURL, operationID: "t").0.status == .ok)

        await transport.shutdown()
        await oldServer.stop()
        await newServer.stop()
    }

    /// The SPKI pin of the private key in `path`.
    static func pin(ofKey path: String) throws -> SPKIPin {
        try OpenSSLKey.privateKey(pem: String(contentsOfFile: path, encoding: .utf8)).spkiPin
    }
}
