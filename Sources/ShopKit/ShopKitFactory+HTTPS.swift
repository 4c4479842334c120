import Foundation
import ShopKitAPI
import ShopKitHTTPS

extension ShopKitFactory {
    /// The whole stack over ShopKit's pinned HTTPS transport: the client, and the transport so the caller can
    /// `shutdown()` it when done.
    ///
    /// - Throws: `TLSContextError` (ShopKitTLS) when the TLS configuration cannot be loaded (e.g. unreadable anchors).
    public static func makeAPIClient(
        baseURL: URL, configuration: ShopKitConfiguration = ShopKitConfiguration(),
        https: HTTPSTransport.Configuration
    ) throws -> (client: APIClient, transport: HTTPSTransport) {
        let transport = try HTTPSTransport(configuration: https)
        return (makeAPIClient(baseURL: baseURL, configuration: configuration, transport: transport), transport)
    }
}
