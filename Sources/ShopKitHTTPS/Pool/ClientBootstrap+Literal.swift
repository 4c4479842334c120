import NIOCore
import NIOPosix

extension ClientBootstrap {
    /// Connects to `host`:`port`: an IP literal directly, any other name through NIO's resolver.
    ///
    /// The resolver runs `getaddrinfo` on a dispatch queue and races address families, a thread round trip per
    /// connection even for a literal. Skipping it for literals also keeps a connect timeout honest: the time
    /// counted is the TCP connect's, not a busy dispatch queue's. The transport, its proxy tunnels and pin-check
    /// all connect through here.
    package func connect(literalOrHost host: String, port: Int) -> EventLoopFuture<any Channel> {
        if let address = try? SocketAddress(ipAddress: host, port: port) {
            return connect(to: address)
        }
        return connect(host: host, port: port)
    }
}
