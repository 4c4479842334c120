import Foundation
import NIOCore
import NIOPosix

/// Plain sentences for the failures `pin-check` meets most, like curl's: what happened and what to do, never
/// NIO's internal type names or a bare OpenSSL string.
package enum FailureWording {
    /// A failed TCP connect to `host:port` in one sentence: the name did not resolve, nothing listens, the host
    /// is unreachable; otherwise the system's own error text.
    package static func connectFailure(host: String, port: Int, error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first {
                return connectFailure(host: host, port: port, error: first.error)
            }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return unresolved(host) }
            return "could not connect to \(host) port \(port): no address to connect to"
        }
        if error is SocketAddressError { return unresolved(host) }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED:
                return "could not connect to \(host) port \(port): Connection refused (nothing is listening there)"
            case ENETUNREACH, EHOSTUNREACH:
                return "could not connect to \(host) port \(port): the host is unreachable (check the network)"
            case ETIMEDOUT:
                return "could not connect to \(host) port \(port): the connection timed out"
            default:
                return "could not connect to \(host) port \(port): \(String(cString: strerror(error.errnoCode)))"
            }
        }
        return "could not connect to \(host) port \(port)"
    }

    private static func unresolved(_ host: String) -> String {
        "could not resolve host \(host) (check the name and DNS)"
    }

    /// A plain hint for a handshake failure whose OpenSSL text is one of the common ones, or nil.
    ///
    /// | OpenSSL says | hint |
    /// | --- | --- |
    /// | `tlsv1 alert protocol version`, `unsupported protocol` | protocol too old |
    /// | `excessive message size` | certificate list over 100 KiB |
    /// | `dh key too small` | DH key too small (key exchange, not the chain) |
    /// | `certificate required` alert | client certificate required |
    /// | `no shared cipher`, `no ciphers available`, `sslv3 alert handshake failure` | no cipher in common |
    package static func handshakeHint(_ openSSLText: String) -> String? {
        let text = openSSLText.lowercased()
        if text.contains("alert protocol version") || text.contains("unsupported protocol") {
            return "the server speaks only a TLS version older than 1.2 (protocol too old): ShopKit needs TLS 1.2 "
                + "or later; the server must be upgraded"
        }
        if text.contains("excessive message size") {
            return "the server's certificate list is over 100 KiB, more than OpenSSL accepts: the server sends too "
                + "many or too large certificates"
        }
        if text.contains("dh key too small") {
            return "the server's Diffie-Hellman key is too small: a key exchange failure, not a certificate problem; "
                + "the server needs a DH group of 2048 bits or more, or ECDHE"
        }
        if text.contains("certificate required") {
            return "the server requires a client certificate: pass --cert FILE --key FILE"
        }
        if text.contains("no shared cipher") || text.contains("no ciphers available")
            || text.contains("alert handshake failure")
        {
            return "no cipher suite in common: the server offers none of ShopKit's (TLS 1.2: ECDHE with AES-GCM or "
                + "ChaCha20-Poly1305; TLS 1.3); for a legacy server with static RSA only, pass --allow-static-rsa"
        }
        return nil
    }
}
