import Foundation
import HTTPTypes
import OpenAPIRuntime

/// The one composition root: builds the decorators (as swift-openapi-runtime middlewares, their one form) and the
/// API client from a ``ShopKitConfiguration``.
///
/// It lives in ShopKitAPI, beside the types it composes, so an app that keeps its tokens in memory or in a store
/// of its own links neither libsecret nor GLib: ShopKitHTTPS + ShopKitAPI are enough. The umbrella adds
/// `makeAPIClient(baseURL:configuration:https:)`, which also builds the pinned transport.
///
/// The chain, outermost first, and why in this order:
///
///     APIClient or a generated Client
///       → retry   RetryMiddleware: retries transient failures; each retry goes through auth again
///       → auth    AuthenticationMiddleware: attaches the bearer token; one shared
///                 refresh and one replay on 401 (left out when the configuration has no `auth`)
///       → dedup   DeduplicationMiddleware: merges identical in-flight GETs; under auth,
///                 so Authorization is in its key
///       → base transport   the pinned HTTPS transport (ShopKitTLS) or a stub in tests
///
/// Retry sits above auth so a retried attempt picks up a refreshed token, and a 401 (a final
/// `APIError.unauthorized` from auth) is never retried. Dedup sits below auth so two users' requests can
/// never share a response. ``makeMiddlewares(_:)`` returns the same order as an array for
/// `Client(serverURL:transport:middlewares:)`, whose first middleware is the outermost.
public enum ShopKitFactory {
    /// The decorators as swift-openapi-runtime middlewares, outermost first: `[retry, auth, dedup]`, or
    /// `[retry, dedup]` without ``ShopKitConfiguration/auth``. Pass them to a generated client as they are:
    ///
    /// ```swift
    /// let client = Client(serverURL: url, transport: https, middlewares: ShopKitFactory.makeMiddlewares(configuration))
    /// ```
    ///
    /// Each call makes new middlewares; share one array between clients that should share token refreshes and
    /// in-flight requests.
    public static func makeMiddlewares(_ configuration: ShopKitConfiguration) -> [any ClientMiddleware] {
        var middlewares: [any ClientMiddleware] = [
            RetryMiddleware(
                policy: configuration.retryPolicy, sleeper: configuration.sleeper, random: configuration.randomSource,
                logger: configuration.logger)
        ]
        if let auth = configuration.auth {
            middlewares.append(
                AuthenticationMiddleware(
                    store: auth.tokenStore, refresher: auth.tokenRefresher, observer: auth.signOutObserver,
                    requirement: auth.requirement, logger: configuration.logger))
        }
        middlewares.append(
            DeduplicationMiddleware(maxResponseBodyBytes: configuration.maxResponseBodyBytes, logger: configuration.logger))
        return middlewares
    }

    /// An `APIClient` for `baseURL` over the chain on top of `transport`.
    ///
    /// - Warning: `transport` is what carries the bearer token. In production pass the pinned HTTPS transport;
    ///   a transport without TLS would send tokens in clear text.
    public static func makeAPIClient(
        baseURL: URL, configuration: ShopKitConfiguration = ShopKitConfiguration(), transport: any ClientTransport
    ) -> APIClient {
        APIClient(
            baseURL: baseURL, transport: transport, middlewares: makeMiddlewares(configuration),
            decoder: configuration.decoder, maxResponseBodyBytes: configuration.maxResponseBodyBytes,
            logger: configuration.logger)
    }
}
