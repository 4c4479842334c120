import Foundation
import NIOCore
import NIOPosix

/// Why a TCP connection could not be made or broke, in a few words a person can act on, like curl's: never NIO's
/// type names, call sites or `errno` numbers. Shared by the transport's errors (direct and through a proxy) and
/// `pin-check`'s reports.
package enum SocketFailureWording {
    /// The reason for `error`: a name that did not resolve, nothing listening, an unreachable host, a timeout, a
    /// reset; otherwise the system's own text for the errno, or a plain fallback.
    package static func reason(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return reason(first.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return unresolved }
            return "no address to connect to"
        }
        if error is SocketAddressError { return unresolved }
        if let error = error as? IOError { return reason(errno: error.errnoCode) }
        return "the connection failed"
    }

    /// The name did not resolve.
    package static let unresolved = "the host name could not be resolved (check the name and DNS)"

    /// The reason for a socket error number.
    package static func reason(errno code: Int32) -> String {
        switch code {
        case ECONNREFUSED: return "Connection refused (nothing is listening there)"
        case ENETUNREACH, EHOSTUNREACH: return "the host is unreachable (check the network)"
        case ETIMEDOUT: return "the connection timed out"
        case ECONNRESET: return "the connection was reset (by the peer or something on the path)"
        case EPIPE: return "the peer closed the connection"
        default: return String(cString: strerror(code))
        }
    }
}
