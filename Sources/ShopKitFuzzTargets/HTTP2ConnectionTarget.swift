import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTP2
import ShopKitHTTPS
import ShopKitTLS

/// One HTTP/2 connection carrying several requests at once, facing a server byte stream the fuzzer chooses, cut
/// into reads where it chooses: the pipeline a real connection has after its handshake (swift-nio-http2's
/// `NIOHTTP2Handler`, ``HTTP2ConnectionHandler``) on an `EmbeddedChannel`. Like the pool, the harness opens its
/// streams when the server's first SETTINGS arrive; the harness sends that SETTINGS frame itself, so every input
/// reaches the streams.
///
/// Input: one control byte, then the server's bytes after its SETTINGS.
/// - bits 0–2: how many requests run (1–8), on streams 1, 3, 5, …;
/// - bits 3–7: the size of the reads the bytes arrive in (1–31 bytes; 0: all at once).
///
/// Invariants:
/// - each request is released exactly once, and its head answered exactly once (a second answer stops the
///   process); a delivered head is followed by the end of its body stream (once the channel has closed, nothing
///   is left without an outcome);
/// - the body a request received is a prefix of the DATA payloads the server sent on that request's stream:
///   no byte of one stream ever reaches another stream's caller;
/// - no request received more than its body limit.
package enum HTTP2ConnectionTarget {
    /// The response-body limit of each request.
    static let bodyLimit = 8_192

    /// What one request saw.
    package struct StreamOutcome: Equatable, Sendable {
        /// The stream's id.
        package var streamID: Int
        /// Each release, with whether the slot was reusable.
        package var releases: [Bool] = []
        package var headAnswered = false
        package var headDelivered = false
        package var bodyEnded = false
        /// The body bytes the caller read.
        package var body: [UInt8] = []
    }

    static func run(_ bytes: [UInt8]) {
        guard let (outcomes, sent) = outcome(bytes) else { return }
        for outcome in outcomes {
            let name = "stream \(outcome.streamID)"
            FuzzCheck.require(outcome.releases.count == 1, "\(name) was released \(outcome.releases.count) times")
            FuzzCheck.require(outcome.headAnswered, "\(name)'s response head was never answered")
            if outcome.headDelivered { FuzzCheck.require(outcome.bodyEnded, "\(name)'s body stream never ended") }
            FuzzCheck.require(outcome.body.count <= bodyLimit, "\(name) received more than its body limit")
            let data = sent[outcome.streamID] ?? []
            FuzzCheck.require(
                outcome.body.count <= data.count && Array(data.prefix(outcome.body.count)) == outcome.body,
                "\(name) received bytes the server did not send on it")
        }
    }

    /// Runs one input (nil for an empty one, which has no control byte): one outcome per request, and the DATA
    /// payloads the server sent per stream id.
    package static func outcome(_ bytes: [UInt8]) -> (streams: [StreamOutcome], dataSent: [Int: [UInt8]])? {
        guard let control = bytes.first else { return nil }
        let wanted = Int(control & 7) + 1
        let readSize = Int(control >> 3) & 31
        // The server's SETTINGS (empty) in a read of its own (the streams' requests go out at its end, before any
        // answer can come), then the fuzzer's bytes.
        let settings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]
        let server = bytes.dropFirst()

        let channel = EmbeddedChannel()
        let loop = channel.embeddedEventLoop
        let outcomes = NIOLoopBoundBox<[StreamOutcome]>([], eventLoop: loop)
        let exchanges = NIOLoopBoundBox<[ExchangeRecorder]>([], eventLoop: loop)
        let handlerBox = NIOLoopBoundBox<HTTP2ConnectionHandler?>(nil, eventLoop: loop)
        var started = false

        // Opens the streams and writes their requests, as the pool does when the first SETTINGS arrive.
        let startAll = {
            guard !started, let handler = handlerBox.value else { return }
            started = true
            for index in 0..<wanted {
                guard let stream = handler.openStream() else { return }
                // The id is taken when the HEADERS go out (below).
                outcomes.value.append(StreamOutcome(streamID: 0))
                let head = loop.makePromise(of: HTTPResponseHead.self)
                head.futureResult.whenComplete { result in
                    outcomes.value[index].headAnswered = true
                    if case .success = result { outcomes.value[index].headDelivered = true }
                }
                let id = HTTP1ConnectionStateMachine.RequestID(raw: index + 1)
                let exchange = ExchangeRecorder(
                    id: id,
                    limits: .init(
                        deadline: loop.now + .seconds(60), idleReadTimeout: .seconds(30), maxResponseBodyBytes: bodyLimit),
                    head: head, released: { outcomes.value[index].releases.append($0) },
                    bodyEnded: { outcomes.value[index].bodyEnded = true })
                exchanges.value.append(exchange)
                stream.start(exchange, id: id)
                var requestHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/fuzz/\(index + 1)")
                requestHead.headers.add(name: "Host", value: "127.0.0.1")
                stream.write(.head(requestHead), flush: false, promise: nil)
                let written = loop.makePromise(of: Void.self)
                let bound = NIOLoopBound(stream, eventLoop: loop)
                written.futureResult.whenSuccess { bound.value.requestSent(id) }
                stream.write(.end(nil), flush: true, promise: written)
                if let id = stream.id {
                    outcomes.value[index].streamID = Int(Int32(id))
                    // Ids reach the wire in the order they are taken (swift-nio-http2 would refuse a smaller one).
                    precondition(index == 0 || outcomes.value[index - 1].streamID < Int(Int32(id)), "stream ids out of order")
                }
            }
        }
        let handler = HTTP2ConnectionHandler(
            eventLoop: loop, logger: TLSClientConfiguration.disabledLogger,
            observer: .init(settings: { _ in startAll() }, goAway: {}))
        handlerBox.value = handler
        do {
            // Connected first, as a verified TLS channel is when the HTTP/2 handlers are added.
            channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOHTTP2Handler(mode: .client, initialSettings: HTTP2ConnectionHandler.initialSettings))
            try sync.addHandler(handler)
        } catch {
            fatalError("cannot set up the embedded channel: \(error)")
        }
        loop.run()
        _ = try? channel.writeInbound(channel.allocator.buffer(bytes: settings))
        loop.run()
        var offset = server.startIndex
        while offset < server.endIndex {
            let end = readSize == 0 ? server.endIndex : min(offset + readSize, server.endIndex)
            _ = try? channel.writeInbound(channel.allocator.buffer(bytes: server[offset..<end]))
            offset = end
            loop.run()
            while (try? channel.readOutbound(as: ByteBuffer.self)) != nil {}
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)
        loop.run()

        var result = outcomes.value
        for (index, exchange) in exchanges.value.enumerated() {
            // The channel is closed: every body has ended (an open one breaks the first invariant).
            result[index].body = exchange.receivedBody
        }
        return (result, dataFrames(Array(server)))
    }

    /// The DATA payloads (padding removed) per stream id in `bytes`, frame by frame (RFC 9113 §4.1, §6.1), up to
    /// the end or the first malformed padding.
    static func dataFrames(_ bytes: [UInt8]) -> [Int: [UInt8]] {
        var sent: [Int: [UInt8]] = [:]
        var offset = 0
        while bytes.count - offset >= 9 {
            let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            let (type, flags) = (bytes[offset + 3], bytes[offset + 4])
            let id = Int(bytes[offset + 5] & 0x7F) << 24 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 8
                | Int(bytes[offset + 8])
            // swift-nio-http2 hands over a DATA frame's payload as it arrives: the last, incomplete frame counts
            // with the bytes that came (without its padding).
            let complete = bytes.count - offset - 9 >= length
            var payload = bytes[(offset + 9)..<min(offset + 9 + length, bytes.count)]
            offset += 9 + length
            if type == 0 {
                if flags & 0x8 != 0 {
                    guard let pad = payload.first, Int(pad) < length else { break }
                    payload = payload.dropFirst().prefix(length - 1 - Int(pad))
                }
                sent[id, default: []] += payload
            }
            if !complete { break }
        }
        return sent
    }
}
