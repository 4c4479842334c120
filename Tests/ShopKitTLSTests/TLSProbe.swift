import NIOConcurrencyHelpers
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import ShopKitPinning
import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import TestSupport

/// One HTTPS GET over a real socket through ShopKit's client `TLSHandler`: what the handshake established and
/// the response body, or the error the handler raised.
struct ProbeResult: Sendable {
    let info: TLSConnectionInfo
    let body: String
}

enum Probe {
    /// Trust only the committed test root.
    static let testTrust = TLSClientConfiguration.TrustRoots.pem(TestCertificates.certificate("root"), addingToSystem: false)

    static func configuration(
        pins: [String] = [], reportOnly: Bool = false, reporter: (any PinFailureReporter)? = nil
    ) throws -> TLSClientConfiguration {
        let sets = pins.isEmpty
            ? []
            : [try PinSet(hostPattern: HostPattern("localhost"), pins: pins.map(TestCertificates.pin), reportOnly: reportOnly)]
        // The probe speaks HTTP/1.1 and says so in ALPN (TLSClientConfiguration offers nothing by default).
        return TLSClientConfiguration(
            trustRoots: testTrust, pinning: PinningPolicy(pinSets: sets), pinFailureReporter: reporter,
            applicationProtocols: ["http/1.1"])
    }

    /// Connects to 127.0.0.1:`port`, verifying the certificate for `host`, sends `GET path` (written before the
    /// handshake finishes, so it is buffered) and waits for the whole response or the first error.
    static func get(context: TLSClientContext, port: Int, host: String = "localhost", path: String = "/") async throws
        -> ProbeResult
    {
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: ProbeResult.self)
        // A wide connect timeout: a loaded machine (under AddressSanitizer) held a loopback connect past NIO's
        // default 10 s. The promise is failed on every path, so a failed connect never leaks it.
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(60))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(context.makeHandler(host: host, port: port))
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(ProbeHandler(promise: promise))
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
        } catch {
            promise.fail(error)
            throw error
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "host", value: host)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        do {
            let result = try await promise.futureResult.get()
            // A server that closes after its response (s_server -www) has closed the channel already.
            try? await channel.close()
            return result
        } catch {
            try? await channel.close()
            throw error
        }
    }
}

/// Collects the handshake event and the response; fails the promise on the first error or an early close.
final class ProbeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<ProbeResult>
    private var info: TLSConnectionInfo?
    private var body: [UInt8] = []
    private var done = false

    init(promise: EventLoopPromise<ProbeResult>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? TLSHandshakeCompleted { info = completed.info }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: break
        case .body(let buffer): body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let info else { return finish(.failure(TLSError.handshakeFailed(reason: "response before handshake event"))) }
            finish(.success(ProbeResult(info: info, body: String(decoding: body, as: UTF8.self))))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(TLSError.connectionClosed))
    }

    private func finish(_ result: Result<ProbeResult, any Error>) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
    }
}

/// Collects pin failure reports.
final class CollectingReporter: PinFailureReporter, Sendable {
    private let stored = NIOLockedValueBox<[PinFailureReport]>([])

    private let storedCT = NIOLockedValueBox<[CTComplianceReport]>([])

    func report(_ report: PinFailureReport) { stored.withLockedValue { $0.append(report) } }
    var reports: [PinFailureReport] { stored.withLockedValue { $0 } }
    func report(_ report: CTComplianceReport) { storedCT.withLockedValue { $0.append(report) } }
    var ctReports: [CTComplianceReport] { storedCT.withLockedValue { $0 } }
}
