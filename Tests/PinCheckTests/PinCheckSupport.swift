import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport

/// One entry of `TestCerts/vectors.json`.
struct PinCheckVector: Decodable, Sendable, CustomStringConvertible {
    let name: String
    /// tls | tls-weak | tls10 | not-tls | refused | silent | mute
    let server: String
    let presents: [String]?
    let key: String?
    let pins: [String]
    let servername: String?
    let trust: [String]
    let verdict: String
    let exit: Int32
    /// A phrase the verdict's reason must contain (OpenSSL's verify reason, the connect error, …).
    let reason: String?

    var description: String { name }

    static let all: [PinCheckVector] = {
        struct File: Decodable { let vectors: [PinCheckVector] }
        let url = TestCertificates.directory.appendingPathComponent("vectors.json")
        guard let data = FileManager.default.contents(atPath: url.path),
            let file = try? JSONDecoder().decode(File.self, from: data)
        else { fatalError("TestCerts/vectors.json is missing or malformed") }
        return file.vectors
    }()

    /// Pins by fixture name (pins.txt) or literal `sha256/…`.
    var resolvedPins: [SPKIPin] {
        pins.map { $0.hasPrefix("sha256/") ? try! SPKIPin($0) : TestCertificates.pin($0) }
    }

    var trustPEM: String { TestCertificates.chain(trust) }
}

/// The server a vector needs, on 127.0.0.1; `stop()` releases it.
struct VectorServer: Sendable {
    let port: Int
    let stop: @Sendable () async -> Void

    static func start(for vector: PinCheckVector) async throws -> VectorServer {
        switch vector.server {
        case "tls", "tls-weak", "tls10":
            let legacy: TLSServerContext.LegacyServer? =
                vector.server == "tls-weak" ? .weakCertificates : vector.server == "tls10" ? .onlyTLS10 : nil
            let context = try TLSServerContext(
                certificateChainPEM: TestCertificates.chain(vector.presents ?? []),
                privateKeyPEM: TestCertificates.privateKey(vector.key ?? ""), legacy: legacy)
            let server = try await LoopbackTLSServer.start(tlsContext: context)
            return VectorServer(port: server.port, stop: { try? await server.shutdown() })
        case "not-tls":
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(PlainTextGreeter()) }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            return VectorServer(port: channel.localAddress!.port!, stop: { try? await channel.close() })
        case "refused":
            let closed = try BoundClosedPort()
            return VectorServer(port: closed.port, stop: { closed.release() })
        case "silent":
            let listener = try StalledListener()
            return VectorServer(port: listener.port, stop: { listener.close() })
        case "mute":
            // Accepts the connection and reads the ClientHello into an empty pipeline: no ServerHello ever.
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
                .bind(host: "127.0.0.1", port: 0).get()
            return VectorServer(port: channel.localAddress!.port!, stop: { try? await channel.close() })
        default:
            fatalError("unknown server kind \(vector.server) in vectors.json")
        }
    }
}

/// A plain TCP server that answers anything with an HTTP error and closes: a non-TLS server.
final class PlainTextGreeter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let reply = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(string: reply))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}

/// Runs the built `pin-check` binary (`.build/<config>/pin-check`, beside the test bundle).
enum PinCheckBinary {
    typealias Outcome = BuiltBinary.Outcome

    /// The built binary.
    static func binary() throws -> BuiltBinary {
        guard let binary = BuiltBinary(named: "pin-check") else {
            throw TLSContextError(message: "pin-check binary not found; run swift build --build-tests")
        }
        return binary
    }

    /// Runs `pin-check` with `arguments` and an empty standard input; a run that checks a server gets a wide
    /// `--timeout` (``withWideTimeout(_:)``).
    static func run(_ arguments: [String]) async throws -> Outcome {
        try await binary().run(withWideTimeout(arguments))
    }

    /// The subcommands, which connect to nothing.
    static let subcommands: Set<String> = [
        "sign-pins", "verify-pins", "pins-document", "backup-key", "log-list", "log-list-document", "sign-log-list",
        "verify-log-list",
    ]

    /// `arguments` with `--timeout 60` when they check a server (the first is a host, or `pins-document`, which
    /// connects to its hosts) and set no timeout: a loaded
    /// machine can hold a handshake past the default 10 s (seen under `SHOPKIT_LOAD=4` with AddressSanitizer). A test
    /// whose subject is the timeout sets its own.
    static func withWideTimeout(_ arguments: [String]) -> [String] {
        guard let first = arguments.first, !first.hasPrefix("-"), !subcommands.contains(first) || first == "pins-document",
            !arguments.contains("--timeout")
        else { return arguments }
        return arguments + ["--timeout", "60"]
    }

    /// Runs pin-check against a loopback server presenting `chain`, trusting only the test root, checking
    /// `localhost`.
    static func runAgainstServer(
        chain: [String] = ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"],
        key: String = "leaf-localhost-ecdsa", host: String = "127.0.0.1", _ extra: [String]
    ) async throws -> Outcome {
        let server = try await LoopbackTLSServer.start(chain: chain, key: key, host: host)
        let caFile = try temporaryFile(TestCertificates.certificate("root"))
        defer { try? FileManager.default.removeItem(at: caFile) }
        let target = host.contains(":") ? "[\(host)]:\(server.port)" : "\(host):\(server.port)"
        let outcome = try await run([target, "--servername", "localhost", "--ca-file", caFile.path] + extra)
        try await server.shutdown()
        return outcome
    }

    /// A temporary file with `contents`, removed by the caller.
    static func temporaryFile(_ contents: String, suffix: String = ".pem") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pin-check-\(UUID())\(suffix)")
        try contents.write(to: url, atomically: true, encoding: .utf8)
        return url
    }
}

extension BuiltBinary.Outcome {
    /// Standard output from the line starting with `heading` to the next line that is not indented.
    func section(_ heading: String) -> String? {
        let lines = stdout.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(heading) }) else { return nil }
        let body = lines[(start + 1)...].prefix { $0.hasPrefix(" ") }
        return ([lines[start]] + body).joined(separator: "\n")
    }

    /// The `verdict` of a `--json` run.
    var verdict: String? { jsonField("verdict") }

    /// The `reason` of a `--json` run.
    var reason: String? { jsonField("reason") }

    private func jsonField(_ key: String) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any]
        return object?[key] as? String
    }
}

/// A vector through the library's `HTTPSTransport` with the vector's pins *enforced* (the way an app uses
/// ShopKit): the verdict is what a GET to `https://NAME:PORT/` ends in.
enum TransportVerdict {
    struct Outcome: Sendable {
        var verdict: String
        var reason: String
    }

    static func run(
        _ vector: PinCheckVector, port: Int, timeout: Duration, group: (any EventLoopGroup)? = nil
    ) async throws -> Outcome {
        let name = vector.servername ?? "127.0.0.1"
        let pinning =
            vector.resolvedPins.isEmpty
            ? PinningPolicy()
            : PinningPolicy(pinSets: [
                try PinSet(hostPattern: HostPattern(name), pins: vector.resolvedPins, acceptingSinglePin: true)
            ])
        let transport = try HTTPSTransport(
            configuration: HTTPSTransport.Configuration(
                tls: TLSClientConfiguration(trustRoots: .pem(vector.trustPEM, addingToSystem: false), pinning: pinning),
                // The whole-request deadline runs from `send`, the handshake's from the end of the connect: a
                // wide margin keeps a connect delayed by a loaded machine from turning a handshake timeout into
                // a request timeout (a vector that waits for one still ends after `timeout`). For the same
                // reason the connect has that margin too, except against the listener that never completes one
                // (`silent`), whose vector is the connect timeout: a loopback connect to the `mute` server, which
                // accepts at once, was seen to end in a connect timeout on a loaded machine.
                timeouts: HTTPSTransport.Timeouts.wide(
                    connect: vector.server == "silent" ? timeout : timeout * 10, handshake: timeout,
                    request: timeout * 10),
                eventLoopGroup: group, connectAddresses: [name: "127.0.0.1"]))
        let host = name.contains(":") ? "[\(name)]" : name
        let outcome: Outcome
        do {
            let (response, _) = try await transport.send(
                HTTPRequest(method: .get, scheme: "https", authority: nil, path: "/"), body: nil,
                baseURL: URL(string: "https://\(host):\(port)")!, operationID: "vector")
            outcome = Outcome(verdict: response.status == .ok ? "ok" : "status \(response.status.code)", reason: "")
        } catch let error as TLSError {
            outcome = Outcome(verdict: verdict(of: error), reason: error.description)
        } catch let error as HTTPSTransportError {
            outcome = Outcome(verdict: verdict(of: error), reason: error.description)
        } catch {
            outcome = Outcome(verdict: "unexpected: \(error)", reason: "\(error)")
        }
        await transport.shutdown()
        return outcome
    }

    /// The vector verdict a transport error stands for.
    static func verdict(of error: TLSError) -> String {
        switch error.code {
        case .pinMismatch: return "pin-mismatch"
        case .untrustedChain: return "untrusted"
        case .hostnameMismatch: return "hostname-mismatch"
        case .handshakeFailed, .handshakeTimeout, .clientCertificateRequired, .clientCertificateRejected:
            return "connect-failed"
        default: return "unexpected: \(error)"  // connectionClosed, hostNotPinned, pinSetExpired
        }
    }

    /// The vector verdict a failure around TLS stands for.
    static func verdict(of error: HTTPSTransportError) -> String {
        switch error.code {
        case .connectFailed: return "connect-failed"
        case .timeout where error.timeout == .connect: return "connect-failed"
        default: return "unexpected: \(error)"
        }
    }
}
