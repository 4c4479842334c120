import ShopKitHTTPS

extension HTTPSTransport.Timeouts {
    /// Timeouts for tests whose subject is not a timeout: wide, so that a loaded machine (a handshake that takes
    /// seconds, a loop held up by other suites) cannot turn the outcome a test asserts into a timeout. A test whose
    /// subject is one timer sets that one small and leaves the others wide, so no other timer can fire first.
    package static func wide(
        connect: Duration = .seconds(60), handshake: Duration = .seconds(60), idleRead: Duration = .seconds(120),
        request: Duration = .seconds(180), http2PingInterval: Duration? = .seconds(30),
        http2PingTimeout: Duration = .seconds(60)
    ) -> Self {
        Self(
            connect: connect, handshake: handshake, idleRead: idleRead, request: request,
            http2PingInterval: http2PingInterval, http2PingTimeout: http2PingTimeout)
    }
}
