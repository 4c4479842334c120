import Foundation
import Logging
import ShopKitAPI
import ShopKitHTTPS
import ShopKitPinning
import ShopKitTLS

extension ShopKitFactory {
    /// The whole stack over ShopKit's pinned HTTPS transport: the client, and the transport so the caller can
    /// `shutdown()` it when done.
    ///
    /// `configuration.logger` is the one logging knob: it reaches the client, its middlewares, and the transport's
    /// HTTP and TLS layers, except a layer whose own logger `https` sets (`https.tls.logger` for TLS events,
    /// `https.logger` for HTTP events, which otherwise follow the TLS logger as they always do).
    ///
    /// - Throws: `TLSContextError` (ShopKitTLS) when the TLS configuration cannot be loaded (e.g. unreadable anchors).
    public static func makeAPIClient(
        baseURL: URL, configuration: ShopKitConfiguration = ShopKitConfiguration(),
        https: HTTPSTransport.Configuration
    ) throws(TLSContextError) -> (client: APIClient, transport: HTTPSTransport) {
        let transport = try HTTPSTransport(configuration: https.logging(to: configuration.logger))
        return (makeAPIClient(baseURL: baseURL, configuration: configuration, transport: transport), transport)
    }

    /// The whole stack over a transport pinning `pinning`'s hosts (`HTTPSTransport(pinning:)`, every other
    /// setting at its default), logging to `configuration.logger` at every layer.
    ///
    /// - Throws: `TLSContextError`, naming the host of an entry at fault (see `HTTPSTransport(pinning:)`).
    public static func makeAPIClient(
        baseURL: URL, configuration: ShopKitConfiguration = ShopKitConfiguration(), pinning: PinnedHosts
    ) throws(TLSContextError) -> (client: APIClient, transport: HTTPSTransport) {
        let transport = try HTTPSTransport(pinning: pinning, logger: configuration.logger)
        return (makeAPIClient(baseURL: baseURL, configuration: configuration, transport: transport), transport)
    }
}

extension HTTPSTransport.Configuration {
    /// This configuration with `logger` in the layers it leaves unset: TLS when `tls.logger` was not given, and so
    /// HTTP too unless ``logger`` is set (HTTP events follow the TLS logger).
    func logging(to logger: Logger) -> Self {
        var configuration = self
        if !configuration.tls.hasLogger { configuration.tls.logger = logger }
        return configuration
    }
}
