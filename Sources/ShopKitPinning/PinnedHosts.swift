/// Hosts and their pins as written in code: a dictionary literal of host pattern → `sha256/BASE64` pins, the short
/// form of a ``PinningPolicy`` (as OkHttp's `CertificatePinner.Builder().add(host, pin1, pin2)`).
///
/// ```swift
/// let transport = try HTTPSTransport(pinning: [
///     "api.example.com": ["sha256/r/mIkG3eEpVdm+u/ko/cwxzOMo1bk4TyHIlByibiA5E=", "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],
/// ])
/// ```
///
/// A literal cannot throw, so it only keeps the text; it is checked, once, where it becomes a policy:
/// ``PinningPolicy/init(_:unpinnedHosts:)`` (and `HTTPSTransport(pinning:)`, which reports the host at fault).
/// Each entry follows ``PinSet/init(host:pins:expiration:reportOnly:acceptingSinglePin:)``'s rules: a valid
/// pattern, valid pins and at least two distinct pins (the current key and a backup). A pattern given twice is
/// refused, where a `Dictionary` literal would trap. For expiry, report-only sets or a single pin, build
/// ``PinSet`` values (the long form).
public struct PinnedHosts: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The entries, in the order written: a host pattern and its pins.
    public let entries: [Entry]

    /// One host pattern and its pins, as text.
    public struct Entry: Sendable, Hashable {
        /// The host pattern (see ``HostPattern``).
        public let host: String
        /// The pins, `sha256/BASE64`.
        public let pins: [String]
    }

    /// The hosts of a literal, in the order written.
    public init(dictionaryLiteral elements: (String, [String])...) {
        entries = elements.map { Entry(host: $0.0, pins: $0.1) }
    }

    /// A pin set that cannot be built, and the host pattern it was written for.
    package struct Failure: Error, Sendable {
        /// The host pattern as written.
        package let host: String
        /// What is wrong with it.
        package let error: PinningConfigurationError
    }

    /// The pin sets, in the order written; the first entry at fault, with its host, when one is.
    package func pinSets() throws(Failure) -> [PinSet] {
        var sets: [PinSet] = []
        for entry in entries {
            let set: PinSet
            do { set = try PinSet(host: entry.host, pins: entry.pins) } catch { throw Failure(host: entry.host, error: error) }
            if sets.contains(where: { $0.hostPattern == set.hostPattern }) {
                throw Failure(host: entry.host, error: .duplicateHostPattern(set.hostPattern))
            }
            sets.append(set)
        }
        return sets
    }
}

extension PinningPolicy {
    /// The policy of a ``PinnedHosts`` literal: one ``PinSet`` per host, in the order written.
    ///
    /// `try PinningPolicy(["api.example.com": [current, backup]])` is
    /// `PinningPolicy(pinSets: [try PinSet(host: "api.example.com", pins: [current, backup])])`.
    ///
    /// - Throws: the first entry's ``PinningConfigurationError`` (a bad pattern or pin, a set without a backup pin,
    ///   a pattern given twice).
    public init(_ hosts: PinnedHosts, unpinnedHosts: UnpinnedHosts = .allow) throws(PinningConfigurationError) {
        do {
            self.init(pinSets: try hosts.pinSets(), unpinnedHosts: unpinnedHosts)
        } catch {
            throw error.error
        }
    }
}
