import Foundation
import ShopKitHTTPS
import ShopKitTLS
import TestSupport
import Testing

/// The security-review vectors again, over HTTP/2: for every vector whose server speaks TLS 1.2 or later, the same
/// certificates behind a server that offers only `h2` in ALPN and speaks only HTTP/2. The transport's verdict must
/// be the vector's: the pin, chain and hostname checks run before any HTTP/2 byte, and an accepted connection
/// really speaks HTTP/2 (the server counts the request).
@Suite("PinCheck vectors over HTTP/2", .timeLimit(.minutes(3)))
struct PinCheckVectorHTTP2Tests {
    static let h2Vectors = PinCheckVector.all.filter { ["tls", "tls-weak"].contains($0.server) }

    @Test("vector over h2", arguments: h2Vectors)
    func vector(_ vector: PinCheckVector) async throws {
        let context = try TLSServerContext(
            certificateChainPEM: TestCertificates.chain(vector.presents ?? []),
            privateKeyPEM: TestCertificates.privateKey(vector.key ?? ""),
            legacy: vector.server == "tls-weak" ? .weakCertificates : nil, applicationProtocols: ["h2"])
        let server = try await LoopbackHTTP2Server.start(tlsContext: context)
        // No h2 vector waits for the timeout: it only bounds a handshake a loaded machine delayed (15 s was seen
        // to run out under SHOPKIT_LOAD=4 with AddressSanitizer).
        let outcome = try await TransportVerdict.run(vector, port: server.port, timeout: .seconds(60))
        #expect(outcome.verdict == vector.verdict, "transport over h2: \(outcome.reason)")
        #expect(server.counts.requests == (vector.verdict == "ok" ? 1 : 0))
        try await server.shutdown()
    }
}
