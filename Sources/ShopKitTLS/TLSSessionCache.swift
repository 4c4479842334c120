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
/// `capacity` keys (the oldest is dropped first). A session is offered only until
/// `TLSClientConfiguration.maximumSessionAge` after the full handshake that verified its chain (tickets received
/// on resumed connections inherit that time), and never past the earliest `notAfter` of that chain.
///
/// Share one cache between several `TLSClientContext`s to let connections of equal trust and pins resume.
public final class TLSSessionCache: Sendable {
    private let entries: NIOLockedValueBox<BoundedCache<Key, Entry>>
    /// The largest number of (host, port, trust, pins) keys kept.
    package let capacity: Int

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
        /// Whether static RSA key exchange was allowed, so a session made with it is never offered where it is not.
        var allowsStaticRSA: Bool
        /// The CT log list the session's SCTs were checked against (its context's, replaced with every new list):
        /// a session is resumed only under the list that checked its SCTs, whose statuses it carries; a new list
        /// means a full handshake, with every SCT checked again.
        var certificateTransparencyList: UUID

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
        /// The SCTs the full handshake received, each as checked then (judged again on resumption, under the CT
        /// policy and log list in force).
        var signedCertificateTimestamps: [SignedCertificateTimestamp] = []
        /// When the full handshake that verified `verifiedChain` ran: sessions from resumed connections inherit it.
        var verifiedAt: Date

        /// Whether the session may still be offered at `now`: younger than `maximumAge` since its full handshake,
        /// and before the earliest `notAfter` of its verified chain (RFC 8446 §4.6.1). OpenSSL's own timeout
        /// restarts with every ticket, so it alone never makes a client verify the chain again.
        func isOfferable(at now: Date, maximumAge: Duration) -> Bool {
            let age = now.timeIntervalSince(verifiedAt)
            let limit = Double(maximumAge.components.seconds) + Double(maximumAge.components.attoseconds) / 1e18
            guard age < limit else { return false }
            guard let notAfter = verifiedChain.certificates.map(\.notAfter).min() else { return false }
            return now < notAfter
        }
    }

    /// Takes (removes) the session stored for `key`, if it can still be resumed: OpenSSL would offer it, and it is
    /// offerable at `now` (see ``Entry/isOfferable(at:maximumAge:)``).
    func take(_ key: Key, now: Date, maximumAge: Duration) -> Entry? {
        guard let entry = entries.withLockedValue({ $0.removeValue(forKey: key) }) else { return nil }
        return entry.session.isResumable && entry.isOfferable(at: now, maximumAge: maximumAge) ? entry : nil
    }

    /// Stores `entry` for `key`, replacing an older one.
    func store(_ entry: Entry, for key: Key) {
        entries.withLockedValue { $0.insert(entry, for: key) }
    }

    /// How many sessions are cached.
    package var count: Int { entries.withLockedValue { $0.count } }

    /// Drops every cached session (e.g. after the pins changed at run time).
    public func removeAll() {
        entries.withLockedValue { $0.removeAll() }
    }
}
