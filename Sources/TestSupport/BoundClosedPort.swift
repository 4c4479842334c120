#if canImport(Glibc)
import Glibc
#endif

/// A loopback port that is bound (so no other test can take it) but not listening, so connects are refused.
package struct BoundClosedPort {
    let fd: Int32
    /// The refused port.
    package let port: Int

    /// Binds a loopback port without listening.
    package init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, ok else { throw BindFailed() }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Closes the socket.
    package func release() { close(fd) }
}

/// The loopback port could not be bound.
package struct BindFailed: Error {}
