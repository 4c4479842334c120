// Declared here, with the types, so no product an app links (or leaves out) can change it.
@_exported import ShopKitCore

extension APIError: RetryClassifiableError {
    /// Always `false`: an ``APIError`` from below (e.g. the auth decorator's `unauthorized`) is a final answer.
    public var isRetryable: Bool { false }
}

extension ResponseBodyTooLargeError: RetryClassifiableError {
    /// Always `false`: the same response would be just as large.
    public var isRetryable: Bool { false }
}
