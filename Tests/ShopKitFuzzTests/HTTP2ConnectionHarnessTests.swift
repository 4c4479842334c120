import Foundation
import Testing
import ShopKitFuzzTargets

/// The HTTP/2 connection fuzz target runs several requests on the streams of one connection: each gets the
/// DATA of its own stream, and the invariants hold on the seed corpus's shapes. (A harness whose streams never
/// received a byte would pass every fuzz run and prove nothing.)
@Suite(.timeLimit(.minutes(3))) struct HTTP2ConnectionHarnessTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/http2-connection")

    static func seed(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: corpus.appendingPathComponent(name)))
    }

    @Test func interleavedStreamsEachGetTheirOwnData() throws {
        let bytes = try Self.seed("two-streams-interleaved")
        let (streams, sent) = try #require(HTTP2ConnectionTarget.outcome(bytes))
        #expect(streams.map(\.streamID) == [1, 3])
        #expect(streams.map { String(decoding: $0.body, as: UTF8.self) } == ["oneONE", "three"])
        #expect(streams.map(\.releases) == [[true], [true]])
        #expect(streams.map(\.headDelivered) == [true, true])
        #expect(streams.map(\.bodyEnded) == [true, true])
        #expect(sent[1] == Array("oneONE".utf8))
        FuzzTarget.http2Connection.run(bytes)
    }

    @Test func paddingIsNotBodyEvenInOneByteReads() throws {
        let bytes = try Self.seed("padded-data-one-byte-reads")
        let (streams, _) = try #require(HTTP2ConnectionTarget.outcome(bytes))
        #expect(streams.first?.body == Array("padded".utf8))
        #expect(streams.first?.releases == [true])
        FuzzTarget.http2Connection.run(bytes)
    }

    @Test func aResetStreamFailsAloneAndAHeadWithoutStatusIsRefused() throws {
        let reset = try #require(HTTP2ConnectionTarget.outcome(try Self.seed("reset-and-goaway")))
        #expect(reset.streams.map(\.releases) == [[true], [false], [false]])
        #expect(reset.streams[0].headDelivered && !reset.streams[1].headDelivered)
        // swift-nio-http2 takes a response without :status as a connection error: the connection is closed.
        let noStatus = try #require(HTTP2ConnectionTarget.outcome(try Self.seed("no-status")))
        #expect(noStatus.streams[0].headDelivered == false)
        #expect(noStatus.streams[0].releases == [false])
    }

    @Test func trailersEndTheBodyAndAreDropped() throws {
        let trailers = try #require(HTTP2ConnectionTarget.outcome(try Self.seed("trailers-after-data")))
        #expect(trailers.streams.map(\.body) == [Array("x".utf8)])
        #expect(trailers.streams.map(\.releases) == [[true]])
    }
}
