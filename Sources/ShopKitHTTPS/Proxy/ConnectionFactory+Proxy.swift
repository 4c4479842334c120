import NIOCore
import NIOPosix
import ShopKitPinning
import ShopKitTLS

extension ConnectionFactory {
    /// Opens a `CONNECT` tunnel to `target` through `proxy` on `loop`: TCP to the proxy, then (for an `https://` proxy)
    /// TLS verified with the proxy's own trust and no pins, then ``ProxyTunnelHandler``. The future's channel is
    /// ready for the origin's TLS handlers, which go behind the proxy's.
    ///
    /// Every failure is the proxy's own error, never one that could be mistaken for the origin's:
    /// ``HTTPSTransportError/proxyConnectFailed(host:port:reason:)`` (TCP, or an answer that is not HTTP),
    /// ``HTTPSTransportError/proxyTLSFailed(_:)``, ``HTTPSTransportError/proxyAuthenticationRequired``,
    /// ``HTTPSTransportError/proxyRefused(status:)``, ``HTTPSTransportError/proxyClosed``, and
    /// ``HTTPSTransportError/timeout(_:)`` (`.connect`) when the proxy does not connect or answer in time.
    func tunnel(to target: RequestTarget, through proxy: ProxyConfiguration, on loop: any EventLoop) -> EventLoopFuture<any Channel> {
        ProxyTunnel.open(
            to: target, through: proxy, proxySecurity: proxySecurity,
            connect: { tcpConnect(host: proxy.host, port: proxy.port, on: loop) }, connectTimeout: connectTimeout,
            handshakeTimeout: handshakeTimeout)
    }
}

/// Opening a `CONNECT` tunnel, shared by the transport's ``ConnectionFactory`` and pin-check's inspector.
package enum ProxyTunnel {
    /// Opens a tunnel to `host`:`port` through `proxy` on `group`, for a caller that adds its own TLS handlers
    /// to the returned channel (pin-check). Failures are as for ``ConnectionFactory/tunnel(to:through:on:)``.
    ///
    /// `host` may be any spelling of a server name (`Example.com`, `localhost.`, `[::1]`): the `CONNECT` line
    /// carries its canonical ``ServerName`` form, as the transport's does. A host that is no server name is
    /// refused without a `CONNECT` (``HTTPSTransportError/invalidURL(reason:)``).
    ///
    /// - Throws: `TLSContextError` when an `https://` proxy's trust anchors cannot be loaded.
    package static func open(
        to host: String, port: Int, through proxy: ProxyConfiguration, group: any EventLoopGroup, timeout: TimeAmount
    ) throws(TLSContextError) -> EventLoopFuture<any Channel> {
        let proxySecurity = try HTTPSTransport.makeProxySecurity(for: proxy)
        let bootstrap = ClientBootstrap(group: group).connectTimeout(timeout)
        return open(
            to: RequestTarget(host: (try? ServerName(host))?.text ?? host, port: port), through: proxy,
            proxySecurity: proxySecurity,
            connect: { bootstrap.connect(literalOrHost: proxy.host, port: proxy.port) }, connectTimeout: timeout,
            handshakeTimeout: timeout)
    }

    static func open(
        to target: RequestTarget, through proxy: ProxyConfiguration, proxySecurity: (any ConnectionSecurity)?,
        connect: () -> EventLoopFuture<any Channel>, connectTimeout: TimeAmount, handshakeTimeout: TimeAmount
    ) -> EventLoopFuture<any Channel> {
        connect().flatMapErrorThrowing { error -> any Channel in
            if case ChannelError.connectTimeout = error { throw HTTPSTransportError.timeout(.connect) }
            throw HTTPSTransportError.proxyConnectFailed(
                host: proxy.host, port: proxy.port, reason: SocketFailureWording.reason(error))
        }.flatMap { channel in
            let secured: EventLoopFuture<Void>
            switch (proxy.scheme, proxySecurity) {
            case (.http, _):
                secured = channel.eventLoop.makeSucceededVoidFuture()
            case (.https, let proxySecurity?):
                secured = proxySecurity.addHandlers(
                    to: channel, host: proxy.host, port: proxy.port, handshakeTimeout: handshakeTimeout
                ).map { _ in }.flatMapErrorThrowing { error in
                    throw HTTPSTransportError.proxyTLSFailed(
                        error as? TLSError ?? .handshakeFailed(reason: "\(error)"))
                }
            case (.https, nil):
                // Never silently in the clear: an https:// proxy without its TLS is a programming error.
                secured = channel.eventLoop.makeFailedFuture(
                    HTTPSTransportError.invalidProxy(reason: "no TLS context was built for the https proxy"))
            }
            return secured.hop(to: channel.eventLoop).flatMap { () -> EventLoopFuture<Void> in
                let open = channel.eventLoop.makePromise(of: Void.self)
                let handler = ProxyTunnelHandler(
                    host: target.host, port: target.port, proxyHost: proxy.host, proxyPort: proxy.port,
                    authorization: proxy.credentials?.authorizationValue, timeout: connectTimeout, promise: open)
                do {
                    try channel.pipeline.syncOperations.addHandler(handler)
                } catch {
                    open.fail(HTTPSTransportError.proxyClosed)
                }
                return open.futureResult
            }.map { channel }.flatMapErrorThrowing { error in
                channel.close(promise: nil)
                throw error
            }
        }
    }
}
