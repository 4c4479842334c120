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
    /// Builds the connection security for `configuration` once per transport: one OpenSSL client context
    /// (one `SSL_CTX`, one session cache) shared by every connection, and ShopKit's ``TLSHandler`` in front of
    /// each pipeline. The handler fires ``TLSHandshakeCompleted`` only after chain, hostname and pins passed.
    ///
    /// - Throws: ``TLSContextError`` when the trust anchors or protocol settings cannot be loaded.
    static func makeSecurity(for configuration: TLSConfiguration) throws -> any ConnectionSecurity {
        let context = try TLSClientContext(configuration: configuration)
        return HandlerSecurity(
            makeHandler: { host, port in context.makeHandler(host: host, port: port) },
            isVerified: { $0 is TLSHandshakeCompleted })
    }
}
