import HTTPTypes

extension HTTPRequest.Method {
    /// Whether the method is idempotent (RFC 9110 §9.2.2): sending the request twice has the effect of once.
    ///
    /// The one list both retry rules use: the transport's resend on a stale keep-alive connection and the
    /// retry decorator's.
    package var isIdempotent: Bool {
        switch self {
        case .get, .head, .options, .trace, .put, .delete: return true
        default: return false
        }
    }
}
