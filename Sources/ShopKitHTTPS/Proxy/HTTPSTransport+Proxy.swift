import ShopKitPinning
import ShopKitTLS

extension HTTPSTransport {
    /// The TLS of an `https://` proxy's own connection: its trust roots and protocol floor, no pins and no ALPN,
    /// one context per transport. Nil for an `http://` proxy.
    ///
    /// - Throws: `TLSContextError` when the proxy's trust anchors cannot be loaded.
    static func makeProxySecurity(for proxy: ProxyConfiguration) throws(TLSContextError) -> (any ConnectionSecurity)? {
        guard proxy.scheme == .https else { return nil }
        let tls = TLSClientConfiguration(
            trustRoots: proxy.trustRoots, pinning: PinningPolicy(), minimumVersion: proxy.minimumVersion)
        return try TLSClientContext(configuration: tls).makeSecurity()
    }
}
