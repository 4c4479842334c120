import Foundation
import HTTPTypes
import Testing
import TestSupport
@testable import ShopKitHTTPS

/// The chunks an HTTP/1.1 body reaches `HTTPBody` in: whatever each socket read decrypted, never cut below a
/// TLS record. Every chunk costs the reader a wake-up and the stream a lock, so a change that split a read's
/// plaintext into smaller pieces (per record, per decoder call) would slow every large body down.
@Suite(.timeLimit(.minutes(3))) struct BodyChunkSizeTests {
    @Test func aMiBArrivesInAtMostOneChunkPerTLSRecord() async throws {
        let body = pattern(1 << 20)
        // The server's TLS handler writes the body as records of 16 KiB: 64 of them.
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok(body) }
        let transport = makeTransport()
        for _ in 0..<3 {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
            let (response, responseBody) = try await transport.send(
                request, body: nil, baseURL: server.baseURL, operationID: "test")
            #expect(response.status == .ok)
            var received: [UInt8] = []
            var chunks = 0
            for try await chunk in try #require(responseBody) {
                chunks += 1
                received += chunk
            }
            #expect(received == body)
            // One chunk per read at most, and a read hands over only whole records: 64 records, plus one for the
            // record that carries the head and the body's start.
            #expect(chunks <= 65, "\(chunks) chunks for 1 MiB")
        }
        await transport.shutdown()
        await server.stop()
    }
}
