import Logging
import ShopKitPinning
import ShopKitTLS

extension HTTPSTransport {
    /// A transport pinning `pinning`'s hosts, with every other setting at its default: the short form.
    ///
    /// ```swift
    /// let transport = try HTTPSTransport(pinning: [
    ///     "api.example.com": ["sha256/r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E=",   // current key
    ///                         "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],  // backup key
    /// ])
    /// ```
    ///
    /// It is `HTTPSTransport(configuration: .init(tls: TLSClientConfiguration(trustRoots: trustRoots, pinning:
    /// try PinningPolicy(pinning, unpinnedHosts: unpinnedHosts), logger: logger), logger: logger))`, with one error
    /// type: a literal cannot throw, so its entries are checked here, and an entry at fault (a bad pattern or pin,
    /// a set without a backup pin, a pattern given twice) throws `TLSContextError` of kind `.invalidInput`
    /// naming it in `host` (and the reason in `pinning`), as a trust store that does not load throws it. Use
    /// ``init(configuration:)`` for everything else (timeouts, pool, proxy, client certificates, expiring or
    /// report-only sets).
    ///
    /// - Parameters:
    ///   - pinning: host pattern → `sha256/BASE64` pins, at least two per host (the current key and a backup).
    ///   - unpinnedHosts: `.refuse` fails every host the literal does not cover; default `.allow`.
    ///   - trustRoots: the trust anchors; default the system store.
    ///   - logger: where the TLS and HTTP layers log (never a token or a body); default nowhere.
    /// - Throws: `TLSContextError`.
    public init(
        pinning: PinnedHosts, unpinnedHosts: PinningPolicy.UnpinnedHosts = .allow,
        trustRoots: TLSClientConfiguration.TrustRoots = .system, logger: Logger? = nil
    ) throws(TLSContextError) {
        try self.init(
            pinning: pinning, unpinnedHosts: unpinnedHosts, trustRoots: trustRoots, logger: logger, timeouts: Timeouts())
    }

    /// The short form with its timeouts given (package access: the tests' wide timeouts on a loaded machine).
    package init(
        pinning: PinnedHosts, unpinnedHosts: PinningPolicy.UnpinnedHosts = .allow,
        trustRoots: TLSClientConfiguration.TrustRoots = .system, logger: Logger? = nil, timeouts: Timeouts
    ) throws(TLSContextError) {
        let pinSets: [PinSet]
        do { pinSets = try pinning.pinSets() } catch { throw TLSContextError(host: error.host, pinning: error.error) }
        let tls = TLSClientConfiguration(
            trustRoots: trustRoots, pinning: PinningPolicy(pinSets: pinSets, unpinnedHosts: unpinnedHosts),
            logger: logger)
        try self.init(configuration: Configuration(tls: tls, timeouts: timeouts))
    }
}
