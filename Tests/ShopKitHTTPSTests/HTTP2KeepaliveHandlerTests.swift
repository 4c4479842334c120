import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing
@testable import ShopKitHTTPS

/// The HTTP/2 keepalive on the embedded event loop's clock: a PING after the silence interval, none while
/// frames arrive, the connection closed (with the reason its streams report) when the PING goes unanswered.
@Suite(.timeLimit(.minutes(3))) struct HTTP2KeepaliveHandlerTests {
    final class Harness {
        let channel = EmbeddedChannel()
        let reason: NIOLoopBoundBox<HTTPSTransportError?>

        init(interval: TimeAmount = .seconds(30), timeout: TimeAmount = .seconds(10)) throws {
            let reason = NIOLoopBoundBox<HTTPSTransportError?>(nil, eventLoop: channel.embeddedEventLoop)
            self.reason = reason
            try channel.pipeline.syncOperations.addHandler(
                HTTP2KeepaliveHandler(interval: interval, timeout: timeout, logger: .init(label: "test")) {
                    reason.value = $0
                })
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        }

        /// Closes the channel, which stops the handler's timer (it holds the handler and its context).
        deinit {
            _ = try? channel.finish(acceptAlreadyClosed: true)
        }

        func advance(by amount: TimeAmount) { channel.embeddedEventLoop.advanceTime(by: amount) }

        /// The PINGs the handler wrote since the last call (acknowledgements excluded).
        func sentPings() throws -> [HTTP2PingData] {
            var pings: [HTTP2PingData] = []
            while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
                if case .ping(let data, ack: false) = frame.payload { pings.append(data) }
            }
            return pings
        }

        func receive(_ payload: HTTP2Frame.FramePayload, stream: HTTP2StreamID = .rootStream) throws {
            try channel.writeInbound(HTTP2Frame(streamID: stream, payload: payload))
            _ = try channel.readInbound(as: HTTP2Frame.self)  // passed on to the multiplexer
        }
    }

    @Test func aSilentConnectionIsPingedAfterTheIntervalAndNotBefore() throws {
        let harness = try Harness()
        harness.advance(by: .seconds(29))
        #expect(try harness.sentPings().isEmpty)
        harness.advance(by: .seconds(1))
        #expect(try harness.sentPings().count == 1)
        #expect(harness.channel.isActive)
    }

    @Test func framesFromTheServerPostponeThePing() throws {
        let harness = try Harness()
        for _ in 0..<5 {
            harness.advance(by: .seconds(20))
            try harness.receive(.windowUpdate(windowSizeIncrement: 1))
        }
        #expect(try harness.sentPings().isEmpty)
        harness.advance(by: .seconds(30))
        #expect(try harness.sentPings().count == 1)
    }

    @Test func anAcknowledgedPingKeepsTheConnectionAndTheNextComesAfterAnotherInterval() throws {
        let harness = try Harness()
        harness.advance(by: .seconds(30))
        for _ in 0..<3 {
            let pings = try harness.sentPings()
            #expect(pings.count == 1)
            harness.advance(by: .seconds(9))
            try harness.receive(.ping(try #require(pings.first), ack: true))
            harness.advance(by: .seconds(10))  // past the acknowledgement's deadline: nothing happens
            #expect(harness.channel.isActive)
            #expect(try harness.sentPings().isEmpty)
            harness.advance(by: .seconds(20))  // the rest of the interval since the acknowledgement
        }
        #expect(harness.reason.value == nil)
    }

    @Test func anUnansweredPingClosesTheConnectionWithAPingTimeout() throws {
        let harness = try Harness()
        harness.advance(by: .seconds(30))
        let ping = try #require(try harness.sentPings().first)
        // Other frames, or an acknowledgement of some other PING, do not count as the answer.
        try harness.receive(.windowUpdate(windowSizeIncrement: 1))
        try harness.receive(.ping(HTTP2PingData(withInteger: ~ping.integer), ack: true))
        harness.advance(by: .milliseconds(9_999))
        #expect(harness.channel.isActive)
        harness.advance(by: .milliseconds(1))
        #expect(!harness.channel.isActive)
        #expect(harness.reason.value == .timeout(.ping))
    }
}
