import ShopKitOpenSSL
import TestSupport
import Testing

/// Ciphertext lent to OpenSSL (`withCiphertext`) rather than copied in: records split across loans, bytes left
/// unread when a loan ends, and loans mixed with copies must all reach OpenSSL once, in order.
@Suite(.timeLimit(.minutes(3))) struct LentCiphertextTests {
    static func pair() throws -> BackToBack {
        try BackToBack(
            serverChain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], serverKey: "leaf-localhost-ecdsa")
    }

    /// Lends `bytes` to `to` in pieces of `piece` bytes, running `step` inside every loan.
    static func lend(_ bytes: [UInt8], to: OpenSSLConnection, in piece: Int, step: () -> Void) {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + piece, bytes.count)
            bytes[offset..<end].withUnsafeBytes { chunk in to.withCiphertext(chunk) { step() } }
            offset = end
        }
    }

    @Test(arguments: [1, 7, 5_000])
    func handshakeAndDataSurviveAnySplit(piece: Int) throws {
        let pair = try Self.pair()
        var client = pair.client.handshake()
        var server = TLSStepResult.wantRead
        for _ in 0..<20 where client != .complete || server != .complete {
            if let bytes = pair.client.takeCiphertext() {
                Self.lend(bytes, to: pair.server, in: piece) { if server != .complete { server = pair.server.handshake() } }
            }
            if let bytes = pair.server.takeCiphertext() {
                Self.lend(bytes, to: pair.client, in: piece) { if client != .complete { client = pair.client.handshake() } }
            }
        }
        #expect(client == .complete)
        #expect(server == .complete)

        let message = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }  // three TLS records
        _ = message.withUnsafeBytes { pair.server.writePlaintext($0) }
        let ciphertext = try #require(pair.server.takeCiphertext())
        var received: [UInt8] = []
        Self.lend(ciphertext, to: pair.client, in: piece) { _ = pair.client.readPlaintext(into: &received) }
        #expect(received == message)
        #expect(pair.client.unreadCiphertextCount == 0)
    }

    @Test func bytesLeftUnreadByALoanAreKeptAndReadFirst() throws {
        let pair = try Self.pair()
        #expect(pair.handshake() == .complete)
        _ = Array("first".utf8).withUnsafeBytes { pair.server.writePlaintext($0) }
        let first = try #require(pair.server.takeCiphertext())
        _ = Array("second".utf8).withUnsafeBytes { pair.server.writePlaintext($0) }
        let second = try #require(pair.server.takeCiphertext())

        // A loan whose steps read nothing: all of it must be kept, and count as unread (after the session
        // tickets the server sent at the end of the handshake, fed but not read yet).
        let tickets = pair.client.unreadCiphertextCount
        first.withUnsafeBytes { bytes in pair.client.withCiphertext(bytes) {} }
        #expect(pair.client.unreadCiphertextCount == tickets + first.count)
        // A copy fed afterwards comes after the kept bytes.
        pair.client.feedCiphertext(second)
        var received: [UInt8] = []
        #expect(pair.client.readPlaintext(into: &received) == .wantRead)
        #expect(String(decoding: received, as: UTF8.self) == "firstsecond")
        #expect(pair.client.unreadCiphertextCount == 0)
    }

    @Test func aNestedLoanIsCopiedAndKeepsItsOrder() throws {
        let pair = try Self.pair()
        #expect(pair.handshake() == .complete)
        let records = try ["one", "two"].map { text in
            _ = Array(text.utf8).withUnsafeBytes { pair.server.writePlaintext($0) }
            return try #require(pair.server.takeCiphertext())
        }
        var received: [UInt8] = []
        records[0].withUnsafeBytes { outer in
            pair.client.withCiphertext(outer) {
                records[1].withUnsafeBytes { inner in pair.client.withCiphertext(inner) {} }
                _ = pair.client.readPlaintext(into: &received)
            }
        }
        #expect(String(decoding: received, as: UTF8.self) == "onetwo")
    }
}
