import NIOCore

/// The TLS seam: what secures a freshly connected channel before the transport adds its HTTP codec.
///
/// An implementation is built once per ``TLSConfiguration`` (one OpenSSL context shared by every
/// connection) and asked, for each new TCP connection, to add its handlers at the front of the pipeline.
/// The returned future succeeds only once the connection is verified (chain, hostname and pins passed) and
/// fails with a ``TLSError`` otherwise. The transport then adds the HTTP/1.1 codec behind those handlers,
/// so every HTTP byte goes through them.
///
/// The transport applies the handshake timeout around the returned future and closes the channel when it
/// fails or times out; implementations must complete (fail) the future when the channel closes first.
package protocol ConnectionSecurity: Sendable {
    /// Adds the security handlers to `channel` (connected, on its event loop's terms) for `host`:`port`.
    ///
    /// - Returns: a future that succeeds when the connection is verified and ready for application data.
    func addHandlers(to channel: any Channel, host: String, port: Int) -> EventLoopFuture<Void>
}

/// The default security until the OpenSSL handler is wired in: every connection fails, clearly.
///
/// The integrator replaces ``HTTPSTransport/makeSecurity(for:)`` with the real OpenSSL implementation.
struct UnintegratedTLSSecurity: ConnectionSecurity {
    func addHandlers(to channel: any Channel, host: String, port: Int) -> EventLoopFuture<Void> {
        channel.eventLoop.makeFailedFuture(TLSError.handshakeFailed(reason: "TLS handler not yet integrated"))
    }
}

/// No security at all: for the transport's tests against a plain-HTTP loopback server only.
///
/// - Warning: Package access only; never reachable from the public API, whose initializer always uses TLS.
package struct PlaintextTestingSecurity: ConnectionSecurity {
    /// The plaintext test security.
    package init() {}

    /// Adds nothing and succeeds at once.
    package func addHandlers(to channel: any Channel, host: String, port: Int) -> EventLoopFuture<Void> {
        channel.eventLoop.makeSucceededVoidFuture()
    }
}

extension HTTPSTransport {
    /// Builds the connection security for `configuration` once per transport.
    ///
    /// THE INTEGRATION POINT: return the OpenSSL-backed security here, built once from `configuration` (one
    /// client context for every connection; a failure to build it is thrown from
    /// ``HTTPSTransport/init(configuration:)``). With a handler that fires a "verified" user event,
    /// ``HandlerSecurity`` does the rest:
    ///
    ///     let context = try TLSClientContext(configuration)            // names as the TLS layer has them
    ///     return HandlerSecurity(
    ///         makeHandler: { host, port in try context.makeClientHandler(host: host, port: port) },
    ///         isVerified: { $0 is TLSVerifiedEvent })
    static func makeSecurity(for configuration: TLSConfiguration) throws -> any ConnectionSecurity {
        UnintegratedTLSSecurity()
    }
}
