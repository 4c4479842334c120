import Foundation
import ShopKitTLS

/// An HTTP proxy that the transport reaches origins through, with an HTTP `CONNECT` tunnel.
///
/// TLS to the origin runs inside the tunnel: its chain, hostname and pins are checked exactly as on a direct
/// connection, so a proxy can neither read nor alter the traffic. An `https://` proxy is itself reached over
/// TLS, verified against ``trustRoots`` (the system store by default); the origin's pins never apply to it.
///
/// Nothing is read from the environment unless the app asks: build one explicitly, or call
/// ``fromEnvironment(_:)`` and pass the result to ``HTTPSTransport/Configuration/proxy``.
public struct ProxyConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The proxy's scheme.
    public enum Scheme: String, Sendable, Hashable {
        /// The `CONNECT` request goes to the proxy in the clear (the tunnelled traffic is still TLS).
        case http
        /// The proxy is reached over TLS first; `CONNECT` and the credentials are sent inside it.
        case https
    }

    /// `http` or `https`.
    public let scheme: Scheme
    /// The proxy's host name or IP literal (lowercased, IPv6 without brackets).
    public let host: String
    /// The proxy's port (default 1080 as curl for `http`, 443 for `https` when the URL has none).
    public let port: Int
    /// Basic credentials sent to the proxy (never to the origin), or nil.
    public var credentials: Credentials?
    /// Hosts reached directly, never through the proxy.
    public var noProxy: NoProxyRules
    /// Trust anchors for an `https://` proxy's own certificate (default: the system store). Pins never apply.
    public var trustRoots: TLSClientConfiguration.TrustRoots
    /// Protocol floor for an `https://` proxy's own TLS (default: TLS 1.2).
    public var minimumVersion: TLSClientConfiguration.MinimumVersion

    /// A proxy at `url` (`http://host:port` or `https://host:port`).
    ///
    /// Credentials written in the URL (`http://user:password@proxy:3128`) are percent-decoded into
    /// ``credentials`` (an explicit `credentials` argument wins); the URL is not kept, so they are never printed.
    ///
    /// - Throws: ``HTTPSTransportError/invalidProxy(reason:)`` for another scheme, a missing host, a path, or a
    ///   bad port.
    public init(
        url: URL, credentials: Credentials? = nil, noProxy: NoProxyRules = NoProxyRules(),
        trustRoots: TLSClientConfiguration.TrustRoots = .system,
        minimumVersion: TLSClientConfiguration.MinimumVersion = .tls12
    ) throws(HTTPSTransportError) {
        guard let scheme = url.scheme.flatMap({ Scheme(rawValue: $0.lowercased()) }) else {
            throw .invalidProxy(reason: "the proxy URL's scheme must be http or https (got \(url.scheme ?? "none"))")
        }
        guard let rawHost = url.host, !rawHost.isEmpty else {
            throw .invalidProxy(reason: "the proxy URL has no host")
        }
        guard url.path.isEmpty || url.path == "/", url.query == nil else {
            throw .invalidProxy(reason: "the proxy URL must be scheme://host[:port] with no path or query")
        }
        let port = url.port ?? (scheme == .https ? 443 : 1080)
        guard (1...65535).contains(port) else { throw .invalidProxy(reason: "the proxy port \(port) is out of range") }
        var host = rawHost.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.scheme = scheme
        self.host = host
        self.port = port
        if let credentials {
            self.credentials = credentials
        } else if let user = url.user(percentEncoded: false), !user.isEmpty {
            self.credentials = Credentials(username: user, password: url.password(percentEncoded: false) ?? "")
        } else {
            self.credentials = nil
        }
        self.noProxy = noProxy
        self.trustRoots = trustRoots
        self.minimumVersion = minimumVersion
    }

    /// `scheme://host:port`, and whether credentials are set; never the credentials themselves.
    public var description: String {
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return "\(scheme.rawValue)://\(name):\(port)" + (credentials == nil ? "" : " (with credentials)")
    }

    /// Whether requests to `host`:`port` go through the proxy (false when ``noProxy`` matches).
    package func applies(toHost host: String, port: Int) -> Bool {
        !noProxy.matches(host: host, port: port)
    }

    /// Basic credentials for the proxy.
    ///
    /// - Warning: The password is never printed: `description` (which `String(reflecting:)` falls back to) and
    ///   reflection redact it.
    ///   It is sent only to the proxy, in `Proxy-Authorization` on the `CONNECT` request (inside TLS for an
    ///   `https://` proxy, in the clear for an `http://` one).
    public struct Credentials: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
        /// The user name (printed).
        public let username: String
        private let password: String

        /// Credentials for `username` (which Basic cannot carry if it holds a `:`).
        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }

        /// The `Proxy-Authorization` value: `Basic base64(username:password)`.
        var authorizationValue: String {
            "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
        }

        public var description: String { "\(username):<redacted>" }
        public var customMirror: Mirror { Mirror(self, children: ["username": username, "password": "<redacted>"]) }
    }
}

/// How a connection reaches its origin: directly, or through a proxy's `CONNECT` tunnel. Part of the pool key,
/// so a tunnelled connection is never handed to a direct request (or to another origin).
enum Route: Hashable, Sendable {
    /// A TCP connection to the origin.
    case direct
    /// A tunnel through this proxy.
    case tunnel(ProxyConfiguration)
}
