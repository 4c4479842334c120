import Foundation
import ShopKitAPI

/// Everything the composition root needs to build an API client: backend, retry, credentials, limits.
public struct ShopKitConfiguration: Sendable {
    /// The backend's base URL, e.g. `https://shop.example/api`.
    public var baseURL: URL
    /// When and how often to retry. Default: `RetryPolicy.default`.
    public var retryPolicy: RetryPolicy
    /// Where the user's tokens live (ShopKitAuth's keyring or encrypted-file store in production).
    public var tokenStore: any TokenStore
    /// Trades rejected tokens for fresh ones.
    public var tokenRefresher: any TokenRefresher
    /// Told when the auth decorator signs the user out.
    public var signOutObserver: (any SignOutObserver)?
    /// The largest response body buffered, by the client and by the dedup decorator. Default 10 MiB.
    public var maxResponseBodyBytes: Int
    /// Waits between retries. Default: `Task.sleep`.
    public var sleeper: any Sleeper
    /// Draws retry jitter. Default: the system generator.
    public var randomSource: any RandomSource
    /// Decodes response bodies.
    public var decoder: JSONDecoder

    /// Creates a configuration; only the backend and the credentials are required.
    public init(
        baseURL: URL, retryPolicy: RetryPolicy = .default, tokenStore: any TokenStore,
        tokenRefresher: any TokenRefresher, signOutObserver: (any SignOutObserver)? = nil,
        maxResponseBodyBytes: Int = APIClient.defaultMaxResponseBodyBytes, sleeper: any Sleeper = TaskSleeper(),
        randomSource: any RandomSource = SystemRandomSource(), decoder: JSONDecoder = JSONDecoder()
    ) {
        self.baseURL = baseURL
        self.retryPolicy = retryPolicy
        self.tokenStore = tokenStore
        self.tokenRefresher = tokenRefresher
        self.signOutObserver = signOutObserver
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.sleeper = sleeper
        self.randomSource = randomSource
        self.decoder = decoder
    }
}
