import Foundation

extension ProxyConfiguration {
    /// The proxy that curl would use for `https` URLs in `environment`: `https_proxy` (or `HTTPS_PROXY`), with
    /// `no_proxy` (or `NO_PROXY`) as ``noProxy``; the lowercase name wins when both are set, as in curl.
    ///
    /// The transport never reads the environment by itself: call this and pass the result to
    /// ``HTTPSTransport/Configuration/proxy`` to opt in. A value without a scheme (`proxy:3128`) is taken as
    /// `http://`, as curl does.
    ///
    /// - Returns: nil when no proxy variable is set (or it is empty).
    /// - Throws: ``HTTPSTransportError/invalidProxy(reason:)`` when the variable is set but cannot be used; the
    ///   message names the variable, never its value (which may hold a password).
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(HTTPSTransportError) -> ProxyConfiguration? {
        guard let (name, value) = lookup(["https_proxy", "HTTPS_PROXY"], in: environment) else { return nil }
        let text = value.contains("://") ? value : "http://" + value
        guard let url = URL(string: text) else {
            throw .invalidProxy(reason: "\(name) is not a URL; expected http://host:port or https://host:port")
        }
        var proxy: ProxyConfiguration
        do {
            proxy = try ProxyConfiguration(url: url)
        } catch {
            guard error.code == .invalidProxy, let reason = error.reason else { throw error }
            throw .invalidProxy(reason: "\(name): \(reason)")
        }
        if let (_, list) = lookup(["no_proxy", "NO_PROXY"], in: environment) {
            proxy.noProxy = NoProxyRules(list)
        }
        return proxy
    }

    private static func lookup(_ names: [String], in environment: [String: String]) -> (String, String)? {
        for name in names {
            if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty {
                return (name, value)
            }
        }
        return nil
    }
}
