import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// A TCP listener on 127.0.0.1 that never accepts and whose accept queue is full, so that new connection
/// attempts hang in SYN-SENT: the way to exercise a connect timeout without any outside network.
///
/// Linux drops a SYN when the listener's accept queue is full; with a backlog of 0 one queued connection
/// fills it. The filler sockets are kept open until ``close()``.
package final class StalledListener: Sendable {
    /// The port to connect to.
    package let port: Int
    /// Taken out by the first ``close()``, so a second one cannot close a descriptor number reused meanwhile.
    private let descriptors: NIOLockedValueBox<[Int32]>

    /// Opens the listener and fills its accept queue.
    package init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw StalledListenerError.socket(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(listener, generic, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, generic, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            Glibc.close(listener)
            throw StalledListenerError.socket(code)
        }
        var descriptors = [listener]
        // A few non-blocking connects: the first fills the queue, the others stay half-open.
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard filler >= 0 else { continue }
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                    connect(filler, generic, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            descriptors.append(filler)
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.descriptors = NIOLockedValueBox(descriptors)
    }

    /// Closes the listener and the filler sockets (once; later calls do nothing). A client whose connect was
    /// left waiting is then refused at its next SYN retransmission.
    package func close() {
        let open = descriptors.withLockedValue { open -> [Int32] in
            defer { open = [] }
            return open
        }
        for descriptor in open { Glibc.close(descriptor) }
    }
}

/// The listener could not be set up.
package enum StalledListenerError: Error {
    /// A socket call failed with this errno.
    case socket(Int32)
}
