import ShopKitOpenSSL
import TestSupport
import Testing

/// Ciphertext handed to a sink as OpenSSL writes it (`setCiphertextSink`) rather than kept for `takeCiphertext`:
/// every record reaches the sink once, in order, whether the sink was set before the handshake or after bytes
/// were kept.
@Suite(.timeLimit(.minutes(3))) struct CiphertextSinkTests {
    /// Collects what a connection's sink receives.
    final class Collected {
        var bytes: [UInt8] = []
        var writes = 0

        func take() -> [UInt8]? {
            defer { bytes = [] }
            return bytes.isEmpty ? nil : bytes
        }
    }

    static func sink(_ connection: OpenSSLConnection) -> Collected {
        let collected = Collected()
        connection.setCiphertextSink { record in
            collected.bytes.append(contentsOf: record)
            collected.writes += 1
        }
        return collected
    }

    @Test func handshakeAndDataGoThroughTheSinks() throws {
        let pair = try LentCiphertextTests.pair()
        let fromClient = Self.sink(pair.client)
        let fromServer = Self.sink(pair.server)
        var client = pair.client.handshake()
        var server = TLSStepResult.wantRead
        for _ in 0..<20 where client != .complete || server != .complete {
            if let bytes = fromClient.take() {
                pair.server.feedCiphertext(bytes)
                if server != .complete { server = pair.server.handshake() }
            }
            if let bytes = fromServer.take() {
                pair.client.feedCiphertext(bytes)
                if client != .complete { client = pair.client.handshake() }
            }
        }
        #expect(client == .complete)
        #expect(server == .complete)
        // Nothing is kept while a sink is set.
        #expect(pair.client.pendingCiphertextCount == 0)
        #expect(pair.client.takeCiphertext() == nil)

        let message = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }  // three TLS records
        let writesBefore = fromServer.writes
        #expect(message.withUnsafeBytes { pair.server.writePlaintext($0) } == .complete)
        #expect(fromServer.writes - writesBefore >= 3)
        #expect(pair.server.pendingCiphertextCount == 0)
        let ciphertext = try #require(fromServer.take())
        // Cut at odd places on the way in.
        var received: [UInt8] = []
        LentCiphertextTests.lend(ciphertext, to: pair.client, in: 7) { _ = pair.client.readPlaintext(into: &received) }
        #expect(received == message)
    }

    @Test func bytesKeptBeforeTheSinkIsSetGoToItFirst() throws {
        let pair = try LentCiphertextTests.pair()
        #expect(pair.handshake() == .complete)
        _ = Array("first".utf8).withUnsafeBytes { pair.server.writePlaintext($0) }
        let kept = pair.server.pendingCiphertextCount
        #expect(kept > 0)
        let sink = Self.sink(pair.server)
        #expect(pair.server.pendingCiphertextCount == 0)
        #expect(sink.bytes.count == kept)
        _ = Array("second".utf8).withUnsafeBytes { pair.server.writePlaintext($0) }
        pair.client.feedCiphertext(try #require(sink.take()))
        var received: [UInt8] = []
        #expect(pair.client.readPlaintext(into: &received) == .wantRead)
        #expect(String(decoding: received, as: UTF8.self) == "firstsecond")
    }

    @Test func removingTheSinkKeepsBytesAgain() throws {
        let pair = try LentCiphertextTests.pair()
        #expect(pair.handshake() == .complete)
        let sink = Self.sink(pair.server)
        _ = Array("to the sink".utf8).withUnsafeBytes { pair.server.writePlaintext($0) }
        pair.server.setCiphertextSink(nil)
        _ = Array(", then kept".utf8).withUnsafeBytes { pair.server.writePlaintext($0) }
        pair.client.feedCiphertext(try #require(sink.take()))
        pair.client.feedCiphertext(try #require(pair.server.takeCiphertext()))
        var received: [UInt8] = []
        _ = pair.client.readPlaintext(into: &received)
        #expect(String(decoding: received, as: UTF8.self) == "to the sink, then kept")
    }
}
