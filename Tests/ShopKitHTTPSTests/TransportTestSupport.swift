import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOEmbedded
import OpenAPIRuntime
import ShopKitPinning
import TestSupport
@testable import ShopKitHTTPS
import ShopKitTLS

/// The TLS the transport tests speak: ShopKit's OpenSSL handler trusting only the test root, pinned to the
/// loopback leaf with the backup intermediate as the second pin.
let loopbackClientTLS: TLSClientConfiguration = {
    let pins = ["leaf-localhost-ecdsa", "backup-intermediate"].map(TestCertificates.pin)
    return TLSClientConfiguration(
        trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
        pinning: PinningPolicy(pinSets: [try! PinSet(hostPattern: HostPattern("127.0.0.1"), pins: pins)]))
}()

/// The loopback server's side: ShopKit's OpenSSL handler in server role with the standard test chain.
let loopbackServerTLS: TLSServerContext = try! TLSServerContext(
    certificateChainPEM: TestCertificates.standardChain(),
    privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"))

/// The real OpenSSL-backed security for `loopbackClientTLS`, built as the public initializer builds it.
func realSecurity() -> any ConnectionSecurity {
    try! HTTPSTransport.makeSecurity(for: loopbackClientTLS)
}

/// A transport to the loopback server over real TLS (or over a test security given by the caller).
func makeTransport(
    timeouts: HTTPSTransport.Timeouts = HTTPSTransport.Timeouts.wide(),
    pool: HTTPSTransport.Pool = HTTPSTransport.Pool(),
    maxResponseBodyBytes: Int = 16 * 1024 * 1024,
    security: any ConnectionSecurity = realSecurity()
) -> HTTPSTransport {
    HTTPSTransport(
        configuration: HTTPSTransport.Configuration(
            timeouts: timeouts, pool: pool, maxResponseBodyBytes: maxResponseBodyBytes),
        security: security)
}

extension LoopbackHTTPServer {
    /// Starts the scripted server behind ShopKit's server-role TLS handler.
    static func startTLS(script: @escaping Script) async throws -> LoopbackHTTPServer {
        try await start(
            extraHandlers: { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(loopbackServerTLS.makeHandler(), position: .first)
                }
            },
            script: script)
    }

    /// The base URL of the server (https scheme: the transport accepts nothing else; the seam is plaintext).
    var baseURL: URL { URL(string: "https://127.0.0.1:\(port)")! }
}

extension HTTPSTransport {
    /// Sends a request and reads the whole body.
    func fetch(
        _ method: HTTPRequest.Method = .get, _ path: String = "/", baseURL: URL, body: HTTPBody? = nil,
        headers: HTTPFields = [:]
    ) async throws -> (HTTPResponse, [UInt8]) {
        let request = HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: headers)
        let (response, body) = try await send(request, body: body, baseURL: baseURL, operationID: "test")
        var bytes: [UInt8] = []
        if let body { bytes = try await [UInt8](collecting: body, upTo: .max) }
        return (response, bytes)
    }
}

/// Deterministic bytes of a given size.
func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
}

/// Whether `error` is exactly the given transport error, details included.
func isTransportError(_ error: any Error, _ expected: HTTPSTransportError) -> Bool {
    (error as? HTTPSTransportError) == expected
}

/// Whether `error` is a transport error of the given kind, whatever its details (a malformed response's reason).
func isTransportError(_ error: any Error, code: HTTPSTransportError.Code) -> Bool {
    (error as? HTTPSTransportError)?.code == code
}

/// A security layer whose verification never arrives: the gate's handshake deadline must end it.
let neverVerifyingSecurity = HandlerSecurity(
    makeHandler: { _, _ in SilentHandler() }, isVerified: { _ in false })

/// A handler that never says anything.
final class SilentHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
}

/// The HTTP exchange handler on a connected embedded channel (time is the embedded loop's), with one exchange
/// made ready but not started; the releases it reports are collected in `released`.
struct EmbeddedExchange {
    let channel: EmbeddedChannel
    let handler: HTTP1ConnectionHandler
    let exchange: ExchangeRecorder
    /// Completed with the exchange's response head, or failed with its ``ExchangeFailure``.
    let head: EventLoopPromise<HTTPResponseHead>
    let released: NIOLoopBoundBox<[Bool]>

    init(deadlineIn: TimeAmount = .seconds(60), idleRead: TimeAmount = .seconds(5), maxResponseBodyBytes: Int = 1_000) throws {
        channel = EmbeddedChannel()
        handler = HTTP1ConnectionHandler()
        try channel.pipeline.syncOperations.addHandler(handler)
        channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
        let loop = channel.embeddedEventLoop
        let released = NIOLoopBoundBox<[Bool]>([], eventLoop: loop)
        self.released = released
        let head = loop.makePromise(of: HTTPResponseHead.self)
        self.head = head
        exchange = ExchangeRecorder(
            id: .init(raw: 1),
            limits: .init(deadline: loop.now + deadlineIn, idleReadTimeout: idleRead, maxResponseBodyBytes: maxResponseBodyBytes),
            head: head, released: { released.value.append($0) })
    }
}
