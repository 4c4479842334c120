import Foundation
import NIOConcurrencyHelpers
import ShopKitCore
import ShopKitOpenSSL
import ShopKitPinning

/// Resumable TLS sessions, each stored with the verified chain and pin verdict of the handshake that made it.
///
/// OpenSSL keeps no verified chain for a resumed session, so ShopKit keeps it here. An entry is keyed by
/// host, port, trust anchors, protocol floor, the host's pin set and the client identity: a session made under one
/// pin set, or with one client certificate (or none), is never offered under another. Sessions are single-use
/// (TLS 1.3 tickets should not be replayed); the newest one per key is kept, and the cache holds at most
/// `capacity` keys (the oldest is dropped first).
///
/// Share one cache between several `TLSClientContext`s to let connections of equal trust and pins resume.
public final class TLSSessionCache: Sendable {
    private let entries: NIOLockedValueBox<BoundedCache<Key, Entry>>
    /// The largest number of (host, port, trust, pins) keys kept.
    public let capacity: Int

    /// A cache of at most `capacity` sessions.
    public init(capacity: Int = 128) {
        self.capacity = max(1, capacity)
        self.entries = NIOLockedValueBox(BoundedCache(capacity: capacity))
    }

    /// The identity a cached session is bound to.
    struct Key: Hashable, Sendable {
        var host: String
        var port: Int
        var trust: TLSClientConfiguration.TrustRoots
        var minimumVersion: TLSClientConfiguration.MinimumVersion
        var pinSet: PinSet?
        /// The client identity's fingerprint (nil: none), so a session is never resumed with another identity.
        var clientIdentity: String?

        /// Hashes host and port only; equality still compares every field. Hashing the trust roots (whole PEM
        /// bundles) and the pin set cost ~15k instructions per new connection; keys that differ only there share
        /// a bucket and are told apart by `==`, whose string comparison is a pointer check when the strings come
        /// from one configuration.
        func hash(into hasher: inout Hasher) {
            hasher.combine(host)
            hasher.combine(port)
        }
    }

    /// A session with what the full handshake established.
    struct Entry: Sendable {
        var session: OpenSSLSession
        var verifiedChain: VerifiedChain
        var verdict: PinVerdict
    }

    /// Takes (removes) the session stored for `key`, if it can still be resumed.
    func take(_ key: Key) -> Entry? {
        guard let entry = entries.withLockedValue({ $0.removeValue(forKey: key) }) else { return nil }
        return entry.session.isResumable ? entry : nil
    }

    /// Stores `entry` for `key`, replacing an older one.
    func store(_ entry: Entry, for key: Key) {
        entries.withLockedValue { $0.insert(entry, for: key) }
    }

    /// How many sessions are cached.
    public var count: Int { entries.withLockedValue { $0.count } }

    /// Drops every cached session (e.g. after the pins changed at run time).
    public func removeAll() {
        entries.withLockedValue { $0.removeAll() }
    }
}
