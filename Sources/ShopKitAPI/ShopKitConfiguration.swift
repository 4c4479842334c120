import Foundation
import Logging

/// How ShopKit's decorator chain behaves: retry, deduplication and, when ``auth`` is set, authentication.
///
/// It holds no base URL: the chain does not need one (each request carries its own), so the URL goes where it
/// is used, to ``ShopKitFactory/makeAPIClient(baseURL:configuration:transport:)`` or to a generated client's
/// `Client(serverURL:transport:middlewares:)`. Retry and dedup alone need no credentials:
///
/// ```swift
/// let anonymous = ShopKitConfiguration()  // retry → dedup
/// let signedIn = ShopKitConfiguration(auth: .init(tokenStore: store, tokenRefresher: refresher))
/// ```
public struct ShopKitConfiguration: Sendable {
    /// The auth decorator's credentials and rules.
    public struct Auth: Sendable {
        /// Where the user's tokens live (ShopKitCredentials's keyring or encrypted-file store in production,
        /// ``InMemoryTokenStore`` for tests, demos and short-lived processes).
        public var tokenStore: any TokenStore
        /// Trades rejected tokens for fresh ones.
        public var tokenRefresher: any TokenRefresher
        /// Told when the auth decorator signs the user out.
        public var signOutObserver: (any SignOutObserver)?
        /// Which operations carry the token. Default: every one (``APIClient`` requests with
        /// `requiresAuth == false` never do).
        public var requirement: AuthenticationRequirement

        /// Creates the auth settings; only the store and the refresher are required.
        public init(
            tokenStore: any TokenStore, tokenRefresher: any TokenRefresher,
            signOutObserver: (any SignOutObserver)? = nil, requirement: AuthenticationRequirement = .everyOperation
        ) {
            self.tokenStore = tokenStore
            self.tokenRefresher = tokenRefresher
            self.signOutObserver = signOutObserver
            self.requirement = requirement
        }
    }

    /// When and how often to retry. Default: `RetryPolicy()`.
    public var retryPolicy: RetryPolicy
    /// The auth decorator's settings; `nil` (the default) builds the chain without auth, and no request carries
    /// a token.
    public var auth: Auth?
    /// The largest 2xx response body buffered, by the client and by the dedup decorator. Default 16 MiB (`ResponseBodyLimit.defaultBytes`), the transport's default too.
    public var maxResponseBodyBytes: Int
    /// Waits between retries: `Task.sleep`, unless a test injects another (package access).
    package var sleeper: any Sleeper
    /// Draws retry jitter: the system generator, unless a test injects another (package access).
    package var randomSource: any RandomSource
    /// Decodes response bodies (used by ``ShopKitFactory``'s `makeAPIClient` only).
    public var decoder: JSONDecoder
    /// The client's one logging knob: where the client, the retry, auth and dedup middlewares log (each decision at
    /// `debug`: a request and its status, a retry and its wait, a refresh, a joined request; a sign-out at
    /// `notice`) and, when the umbrella's `ShopKitFactory.makeAPIClient(baseURL:configuration:https:)` builds the
    /// pinned transport, its HTTP and TLS layers too. Never a token, a header value or a body.
    ///
    /// Default: nowhere, whatever logging backend the app bootstrapped; pass a `Logger` to see ShopKit's lines.
    /// A logger set on a lower layer (`TLSClientConfiguration.logger`, `HTTPSTransport.Configuration.logger`)
    /// wins for that layer; this one fills every layer left unset.
    public var logger: Logger

    /// The default ``logger``: drops everything, so a library writes nothing unless the app asks.
    package static let quietLogger = Logger(label: "ShopKit", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Creates a configuration; every parameter has a default, and without `auth` nothing needs credentials.
    public init(
        retryPolicy: RetryPolicy = RetryPolicy(), auth: Auth? = nil,
        maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes, decoder: JSONDecoder = JSONDecoder(),
        logger: Logger? = nil
    ) {
        self.init(
            retryPolicy: retryPolicy, auth: auth, maxResponseBodyBytes: maxResponseBodyBytes, sleeper: TaskSleeper(),
            decoder: decoder, logger: logger ?? Self.quietLogger)
    }

    /// The same with the retry middleware's waits and jitter injected (tests).
    package init(
        retryPolicy: RetryPolicy = RetryPolicy(), auth: Auth? = nil,
        maxResponseBodyBytes: Int = ResponseBodyLimit.defaultBytes, sleeper: any Sleeper,
        randomSource: any RandomSource = SystemRandomSource(), decoder: JSONDecoder = JSONDecoder(),
        logger: Logger = ShopKitConfiguration.quietLogger
    ) {
        self.logger = logger
        self.retryPolicy = retryPolicy
        self.auth = auth
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.sleeper = sleeper
        self.randomSource = randomSource
        self.decoder = decoder
    }
}
