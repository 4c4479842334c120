import AsyncHTTPClient
import CBenchSHA
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// AsyncHTTPClient 1.x over swift-nio-ssl (BoringSSL), trusting only the benchmark root.
///
/// Pinning: AsyncHTTPClient has no verification hook. With `leafPins`, the pins are checked in its
/// `http1_1ConnectionDebugInitializer`, which runs once per new connection *after* the TLS handshake
/// (BoringSSL has already verified the chain and the IP/host name) and before the connection is handed to the
/// pool: a mismatch fails the connection, so no request is sent on it. Only the leaf is available there
/// (`nioSSL_peerCertificate`; the validated chain needs a custom verification callback AHC does not expose),
/// so it is a leaf-only pin — "ahc-leafpin" in the tables. Without `leafPins` it is plainly unpinned ("ahc").
///
/// HTTP version: HTTP/1.1 only, except with `http2` (the h2-* workloads), where it uses AsyncHTTPClient's
/// `.automatic` (h2 and http/1.1 in ALPN; one connection with concurrent streams when the server picks h2) and
/// counts the connections it opens through its per-connection debug initializers.
final class AHCBenchClient: BenchClient {
    private let client: HTTPClient
    private let baseURL: String
    private let counter: ConnectionCounter?

    init(baseURL: String, rootPEMPath: String, connections: Int, leafPins: [[UInt8]], http2: Bool = false) throws {
        var tls = NIOSSL.TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(rootPEMPath))
        tls.certificateVerification = .fullVerification

        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = http2 ? .automatic : .http1Only
        configuration.decompression = .disabled
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        if !leafPins.isEmpty {
            let pins = Set(leafPins)
            configuration.http1_1ConnectionDebugInitializer = { channel in
                channel.nioSSL_peerCertificate().flatMapThrowing { leaf in
                    guard let leaf else { throw BenchFailure("no peer certificate after the handshake") }
                    let digest = sha256(try leaf.extractPublicKey().toSPKIBytes())
                    guard pins.contains(digest) else { throw BenchFailure("leaf SPKI pin mismatch") }
                }
            }
        }
        let counter = http2 ? ConnectionCounter() : nil
        if let counter {
            guard leafPins.isEmpty else { throw BenchFailure("ahc-leafpin does not run the h2-* workloads") }
            configuration.http1_1ConnectionDebugInitializer = { channel in
                counter.increment()
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            configuration.http2ConnectionDebugInitializer = { channel in
                counter.increment()
                return channel.eventLoop.makeSucceededVoidFuture()
            }
        }
        self.counter = counter
        self.client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        self.baseURL = baseURL
    }

    func get(_ path: String, closeConnection: Bool) async throws -> Int {
        var request = HTTPClientRequest(url: baseURL + path)
        if closeConnection { request.headers.add(name: "Connection", value: "close") }
        let response = try await client.execute(request, timeout: .seconds(30))
        guard response.status == .ok else { throw BenchFailure("AsyncHTTPClient: HTTP \(response.status.code)") }
        var bytes = 0
        for try await buffer in response.body { bytes += buffer.readableBytes }
        return bytes
    }

    func shutdown() async throws { try await client.shutdown() }

    var connectionsOpened: Int? { counter?.value }
}

/// SHA-256 by the system libcrypto.
func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
    _ = bytes.withUnsafeBufferPointer { input in
        digest.withUnsafeMutableBufferPointer { output in
            SHA256(input.baseAddress, input.count, output.baseAddress)
        }
    }
    return digest
}
