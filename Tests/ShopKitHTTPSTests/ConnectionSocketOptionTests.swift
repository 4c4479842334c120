#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import Testing
import TestSupport
@testable import ShopKitHTTPS

/// The transport's TCP connections turn Nagle's algorithm off (`TCP_NODELAY` at `IPPROTO_TCP`) and set nothing else
/// by mistake: `SO_DEBUG` has `TCP_NODELAY`'s number at `SOL_SOCKET`, and setting it needs `CAP_NET_ADMIN`, so in a
/// process without that capability (any unprivileged user) no connection could be opened.
@Suite(.timeLimit(.minutes(3))) struct ConnectionSocketOptionTests {
    @Test func connectionsTurnNagleOffAndLeaveSocketDebuggingAlone() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = HTTPSTransport(configuration: .init(timeouts: .wide()), security: realSecurity())
        let target = try RequestTarget(baseURL: server.baseURL)
        let lease = try await transport.pool.lease(target, deadline: .now() + .seconds(120))
        let channel = lease.connection.channel
        #expect(try await channel.getOption(.tcpOption(.tcp_nodelay)).get() == 1)
        #expect(try await channel.getOption(.socketOption(.init(rawValue: SO_DEBUG))).get() == 0)
        transport.pool.release(lease, reusable: false)
        await transport.shutdown()
        await server.stop()
    }
}
