import NIOHTTP1
import ShopKitDemoSupport
import ShopKitTLS

extension LoopbackTLSServer {
    /// Starts a server with a chain of `TestCerts` fixtures (leaf first, any order or extras) and a key.
    package static func start(
        chain: [String], key: String, maximumVersion: TLSClientConfiguration.MinimumVersion? = nil,
        host: String = "127.0.0.1", responder: @escaping Responder = { _, _ in Response(body: Array("hello".utf8)) }
    ) async throws -> LoopbackTLSServer {
        try await start(
            chain: chain, key: key, certificates: TestCertificates.store, maximumVersion: maximumVersion, host: host,
            responder: responder)
    }
}
