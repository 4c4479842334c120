import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ShopKitTLS

/// An in-process HTTPS/1.1 server on a loopback address (127.0.0.1 unless told; port chosen by the kernel)
/// using ShopKit's server-role `TLSHandler`, for the demos and tests. It counts full handshakes and resumptions.
package final class LoopbackTLSServer: Sendable {
    /// What the responder sends back.
    package struct Response: Sendable {
        /// The status line's code.
        package var status: HTTPResponseStatus
        /// Extra headers (content-length is added unless given or chunked).
        package var headers: [(String, String)]
        /// The body bytes.
        package var body: [UInt8]

        /// A response; the default is 200 with the given body.
        package init(status: HTTPResponseStatus = .ok, headers: [(String, String)] = [], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// Builds a response from the request head and its body.
    package typealias Responder = @Sendable (HTTPRequestHead, [UInt8]) -> Response

    /// The bound port.
    package let port: Int
    /// The server's TLS context (its `statistics` count handshakes).
    package let tlsContext: TLSServerContext
    private let channel: any Channel
    private let accepted: NIOLockedValueBox<[EventLoopFuture<Void>]>

    /// Full handshakes served so far.
    package var fullHandshakes: Int { tlsContext.statistics.fullHandshakes }
    /// Resumed handshakes served so far.
    package var resumptions: Int { tlsContext.statistics.resumptions }

    private init(port: Int, tlsContext: TLSServerContext, channel: any Channel, accepted: NIOLockedValueBox<[EventLoopFuture<Void>]>) {
        self.port = port
        self.tlsContext = tlsContext
        self.channel = channel
        self.accepted = accepted
    }

    /// Returns once every connection accepted so far has closed, so the counters include everything those
    /// connections did. A client that gives up after its handshake (a refused pin) may return before the server
    /// has read its last flight; waiting here makes the server's count final without a sleep.
    package func connectionsClosed() async {
        for closed in accepted.withLockedValue({ $0 }) { try? await closed.get() }
    }

    /// Starts a server presenting `certificateChainPEM` (sent exactly in that order) with `privateKeyPEM`.
    /// The default responder answers every request with 200 and `hello`; `maximumVersion` caps the protocol.
    package static func start(
        certificateChainPEM: String, privateKeyPEM: String, maximumVersion: TLSClientConfiguration.MinimumVersion? = nil,
        host: String = "127.0.0.1", group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        responder: @escaping Responder = { _, _ in Response(body: Array("hello".utf8)) }
    ) async throws -> LoopbackTLSServer {
        let tlsContext = try TLSServerContext(
            certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM, maximumVersion: maximumVersion)
        return try await start(tlsContext: tlsContext, host: host, group: group, responder: responder)
    }

    /// Starts a server presenting the `TestCerts` certificates `chain` (leaf first, any order or extras) with
    /// the key `key`, both read from `certificates`.
    package static func start(
        chain: [String], key: String, certificates: DemoCertificates,
        maximumVersion: TLSClientConfiguration.MinimumVersion? = nil, host: String = "127.0.0.1",
        responder: @escaping Responder = { _, _ in Response(body: Array("hello".utf8)) }
    ) async throws -> LoopbackTLSServer {
        try await start(
            certificateChainPEM: certificates.chain(chain), privateKeyPEM: certificates.privateKey(key),
            maximumVersion: maximumVersion, host: host, responder: responder)
    }

    /// Starts a server with a ready-made TLS context, listening on `host` (an IP literal such as `::1`).
    package static func start(
        tlsContext: TLSServerContext, host: String = "127.0.0.1",
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        responder: @escaping Responder = { _, _ in Response(body: Array("hello".utf8)) }
    ) async throws -> LoopbackTLSServer {
        let accepted = NIOLockedValueBox<[EventLoopFuture<Void>]>([])
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0.append(channel.closeFuture) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(tlsContext.makeHandler())
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(LoopbackResponder(responder: responder))
                }
            }
            .bind(host: host, port: 0).get()
        guard let port = channel.localAddress?.port else { throw TLSContextError(message: "server has no port") }
        return LoopbackTLSServer(port: port, tlsContext: tlsContext, channel: channel, accepted: accepted)
    }

    /// Stops listening (open connections are closed by their peers or when the loop shuts down).
    package func shutdown() async throws {
        try await channel.close()
    }
}

/// Answers each HTTP/1.1 request with the responder's response, keeping the connection alive.
final class LoopbackResponder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: LoopbackTLSServer.Responder
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(responder: @escaping LoopbackTLSServer.Responder) { self.responder = responder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body = []
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let requestHead = head else { return }
            let response = responder(requestHead, body)
            var headers = HTTPHeaders(response.headers)
            if !headers.contains(name: "content-length") && !headers.contains(name: "transfer-encoding") {
                headers.add(name: "content-length", value: "\(response.body.count)")
            }
            let responseHead = HTTPResponseHead(version: requestHead.version, status: response.status, headers: headers)
            context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            head = nil
        }
    }
}
