import Foundation
// The transport seam's types, so `import ShopKit` is enough to name `ClientTransport`, `HTTPBody`, `HTTPRequest`.
@_exported import HTTPTypes
@_exported import OpenAPIRuntime
import ShopKitAPI

/// The one composition root: builds the decorator chain and the API client from a ``ShopKitConfiguration``.
///
/// The chain, outermost first, and why in this order:
///
///     APIClient
///       → RetryingTransport        retries transient failures; each retry goes through auth again
///       → AuthenticatingTransport  attaches the bearer token; one shared refresh and one replay on 401
///       → DeduplicatingTransport   merges identical in-flight GETs; under auth, so Authorization is in its key
///       → base transport           the pinned HTTPS transport (ShopKitTLS) or a stub in tests
///
/// Retry sits above auth so a retried attempt picks up a refreshed token, and a 401 (a final
/// `APIError.unauthorized` from auth) is never retried. Dedup sits below auth so two users' requests can
/// never share a response.
public enum ShopKitFactory {
    /// The decorator chain over `base`, outermost first: retry → auth → dedup → `base`.
    public static func makeTransport(
        _ configuration: ShopKitConfiguration, base: any ClientTransport
    ) -> any ClientTransport {
        let dedup = DeduplicatingTransport(wrapping: base, maxBodyBytes: configuration.maxResponseBodyBytes)
        let auth = AuthenticatingTransport(
            wrapping: dedup, store: configuration.tokenStore, refresher: configuration.tokenRefresher,
            observer: configuration.signOutObserver)
        return RetryingTransport(
            wrapping: auth, policy: configuration.retryPolicy, sleeper: configuration.sleeper,
            random: configuration.randomSource)
    }

    /// An `APIClient` for `configuration.baseURL` over the full chain on top of `transport`.
    ///
    /// - Warning: `transport` is what carries the bearer token. In production pass the pinned HTTPS transport;
    ///   a transport without TLS would send tokens in clear text.
    public static func makeAPIClient(
        _ configuration: ShopKitConfiguration, transport: any ClientTransport
    ) -> APIClient {
        APIClient(
            baseURL: configuration.baseURL, transport: makeTransport(configuration, base: transport),
            decoder: configuration.decoder, maxResponseBodyBytes: configuration.maxResponseBodyBytes)
    }
}

extension ShopKitFactory {
    /// The whole stack over ShopKit's pinned HTTPS transport: the client, and the transport so the caller can
    /// `shutdown()` it when done.
    ///
    /// - Throws: `TLSContextError` (ShopKitTLS) when the TLS configuration cannot be loaded (e.g. unreadable anchors).
    public static func makeAPIClient(
        _ configuration: ShopKitConfiguration, https: HTTPSTransport.Configuration
    ) throws -> (client: APIClient, transport: HTTPSTransport) {
        let transport = try HTTPSTransport(configuration: https)
        return (makeAPIClient(configuration, transport: transport), transport)
    }
}
