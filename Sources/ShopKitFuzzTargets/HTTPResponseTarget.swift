import NIOCore
import NIOEmbedded
import NIOHTTP1
import ShopKitHTTPS
import ShopKitTLS

/// The HTTPS client's response path without TLS: bytes from the server go through the pipeline a real
/// connection has after its handshake (NIO's request encoder and
/// ``HTTP1ConnectionHandler``, which frames responses itself) on an `EmbeddedChannel`, with one exchange started and its request written.
///
/// Input: one control byte, then the response bytes.
/// - bit 0: the request is `HEAD` (a response body is then not expected even with a `Content-Length`);
/// - bit 1: the request says `Connection: close`;
/// - bits 2–6: the size of the reads the bytes arrive in (1–31 bytes; 0: all at once);
/// - bit 7: the connection ends without TLS close_notify (the TLS layer's `TLSUncleanShutdown` event, as on a
///   forged TCP close) instead of a clean close.
///
/// Invariants, checked after the connection closes: the exchange was released exactly once (the state
/// machine's promise: one owner per lease); the caller's response head was answered exactly once (a second
/// answer stops the process), success or failure; a delivered head was followed by the end of its body stream
/// (normal or failed).
package enum HTTPResponseTarget {
    /// What one run did, for the invariants and for tests of the harness itself.
    package struct Outcome: Equatable, Sendable {
        /// Each release of the connection, with whether it was reusable.
        package var releases: [Bool]
        /// The caller's response head was answered (delivered or failed).
        package var headAnswered: Bool
        /// The response head was delivered.
        package var headDelivered: Bool
        /// The body stream ended (normally or with an error).
        package var bodyEnded: Bool

        package init(releases: [Bool], headAnswered: Bool, headDelivered: Bool, bodyEnded: Bool) {
            self.releases = releases
            self.headAnswered = headAnswered
            self.headDelivered = headDelivered
            self.bodyEnded = bodyEnded
        }
    }

    static func run(_ bytes: [UInt8]) {
        guard let outcome = outcome(bytes) else { return }
        FuzzCheck.require(outcome.releases.count == 1, "the exchange was released \(outcome.releases.count) times")
        FuzzCheck.require(outcome.headAnswered, "the response head was never answered")
        if outcome.headDelivered {
            FuzzCheck.require(outcome.bodyEnded, "a delivered response's body stream never ended")
        }
        if outcome.releases == [true] {
            FuzzCheck.require(outcome.headDelivered, "released as reusable without a response")
            FuzzCheck.require(bytes[0] & 2 == 0, "released as reusable though the request said Connection: close")
        }
    }

    /// Runs one input (nil for an empty one, which has no control byte).
    package static func outcome(_ bytes: [UInt8]) -> Outcome? {
        guard let control = bytes.first else { return nil }
        let isHead = control & 1 != 0
        let requestKeepAlive = control & 2 == 0
        let readSize = Int(control >> 2) & 31
        let unclean = control & 0x80 != 0
        let response = bytes.dropFirst()

        let connection = EmbeddedHTTP1Connection()
        let (channel, handler, loop) = (connection.channel, connection.handler, connection.loop)

        let releases = NIOLoopBoundBox<[Bool]>([], eventLoop: loop)
        let headAnswered = NIOLoopBoundBox(false, eventLoop: loop)
        let headDelivered = NIOLoopBoundBox(false, eventLoop: loop)
        let bodyEnded = NIOLoopBoundBox(false, eventLoop: loop)
        let id = HTTP1ConnectionStateMachine.RequestID(raw: 1)
        let headPromise = loop.makePromise(of: HTTPResponseHead.self)
        let exchange = ExchangeRecorder(
            id: id,
            limits: .init(deadline: loop.now + .seconds(60), idleReadTimeout: .seconds(30), maxResponseBodyBytes: 8_192),
            requestKeepAlive: requestKeepAlive, isHead: isHead, head: headPromise,
            released: { reusable in releases.value.append(reusable) }, bodyEnded: { bodyEnded.value = true })
        headPromise.futureResult.whenComplete { result in
            headAnswered.value = true
            if case .success = result { headDelivered.value = true }
        }

        handler.start(exchange, id: id)
        var head = HTTPRequestHead(version: .http1_1, method: isHead ? .HEAD : .GET, uri: "/fuzz")
        head.headers.add(name: "Host", value: "127.0.0.1")
        if !requestKeepAlive { head.headers.add(name: "Connection", value: "close") }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        let written = loop.makePromise(of: Void.self)
        let boundHandler = NIOLoopBound(handler, eventLoop: loop)
        written.futureResult.whenSuccess { boundHandler.value.requestSent(id) }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: written)
        loop.run()

        connection.feed(response, readSize: readSize)
        connection.finish(unclean: unclean)

        return Outcome(
            releases: releases.value, headAnswered: headAnswered.value, headDelivered: headDelivered.value,
            bodyEnded: bodyEnded.value)
    }
}
