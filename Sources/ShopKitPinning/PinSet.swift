import Foundation

/// The pins for one host pattern, with its expiry and enforcement mode.
///
/// A set needs at least two distinct pins (the current key and a backup that is not in use yet), so that a
/// key rotation or a compromised key does not lock every client out. Pass `acceptingSinglePin: true` to
/// allow one pin knowingly.
///
/// - Warning: A set whose pins all match the chain the server presents today has no real backup; check
///   ``PinningPolicy/backupWarning(host:chain:at:)`` once with the live chain and log it.
public struct PinSet: Sendable, Hashable {
    /// Which hosts this set covers.
    public let hostPattern: HostPattern
    /// The accepted pins (current and backup keys), without duplicates, in the order given.
    public let pins: [SPKIPin]
    /// After this instant (UTC) the set is not enforced: a mismatch gives ``PinVerdict/expired(_:)``.
    public let expiration: Date?
    /// Mismatches are reported (``PinVerdict/reportOnlyMismatch(_:)``) but do not close the connection.
    ///
    /// Only pin mismatches can be report-only: chain and hostname failures always close the connection.
    public let reportOnly: Bool

    /// A pin set for `hostPattern`.
    ///
    /// - Parameters:
    ///   - hostPattern: the hosts the set covers: one name, or a wildcard pattern (see ``HostPattern``).
    ///   - pins: the accepted keys; a connection passes when any certificate of its verified chain has one of
    ///     them. Duplicates are dropped; at least two distinct pins are needed, one of them a backup key.
    ///   - expiration: when the set stops being enforced (a `Date` is an instant, so UTC by construction).
    ///   - reportOnly: deliver mismatches to the reporter instead of closing the connection.
    ///   - acceptingSinglePin: allow a set with only one distinct pin (no backup key).
    /// - Throws: ``PinSetError/noPins(_:)`` or ``PinSetError/singlePin(_:)``.
    public init(
        hostPattern: HostPattern, pins: [SPKIPin], expiration: Date? = nil, reportOnly: Bool = false,
        acceptingSinglePin: Bool = false
    ) throws(PinSetError) {
        var seen = Set<SPKIPin>()
        let distinct = pins.filter { seen.insert($0).inserted }
        guard !distinct.isEmpty else { throw .noPins(hostPattern) }
        guard distinct.count >= 2 || acceptingSinglePin else { throw .singlePin(hostPattern) }
        self.hostPattern = hostPattern
        self.pins = distinct
        self.expiration = expiration
        self.reportOnly = reportOnly
    }

    /// A pin set from text: a host pattern and `sha256/BASE64` pins.
    ///
    /// - Throws: ``PinningConfigurationError`` wrapping the pattern, pin or set error.
    public init(
        host pattern: String, pins: [String], expiration: Date? = nil, reportOnly: Bool = false,
        acceptingSinglePin: Bool = false
    ) throws(PinningConfigurationError) {
        let hostPattern: HostPattern
        do { hostPattern = try HostPattern(pattern) } catch { throw .hostPattern(error) }
        var parsed: [SPKIPin] = []
        for text in pins {
            do { parsed.append(try SPKIPin(text)) } catch { throw .pin(error) }
        }
        do {
            try self.init(
                hostPattern: hostPattern, pins: parsed, expiration: expiration, reportOnly: reportOnly,
                acceptingSinglePin: acceptingSinglePin)
        } catch {
            throw .pinSet(error)
        }
    }

    /// Whether the set is past its expiration at `now`.
    package func isExpired(at now: Date) -> Bool {
        guard let expiration else { return false }
        return now >= expiration
    }

    /// A warning when every pin of the set matches `chain`: then no pin is a real backup, and replacing the
    /// server's keys would lock clients out. Nil when at least one pin is not in use (a real backup). Package
    /// access: `PinningPolicy.backupWarning(host:chain:at:)` is the one public check (it also picks the set).
    package func backupWarning(for chain: VerifiedChain) -> PinBackupWarning? {
        let chainPins = Set(chain.certificates.map(\.spkiPin))
        guard pins.allSatisfy(chainPins.contains) else { return nil }
        return PinBackupWarning(hostPattern: hostPattern, pins: pins)
    }
}

/// A pin set whose every pin is in use on the current chain: it has no backup key.
public struct PinBackupWarning: Sendable, Hashable, CustomStringConvertible {
    /// The pattern of the set.
    public let hostPattern: HostPattern
    /// The set's pins, all of which the current verified chain uses.
    public let pins: [SPKIPin]

    /// A log line naming the set and its pins, and what to do.
    public var description: String {
        "pin set for \(hostPattern) has no real backup: all its pins (\(pins.map(\.description).joined(separator: ", "))) "
            + "match the current chain; add the pin of a backup key that is not deployed yet"
    }
}

/// Why a pin set was refused.
public enum PinSetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The set has no pins.
    case noPins(HostPattern)
    /// The set has only one distinct pin and `acceptingSinglePin` was not given.
    case singlePin(HostPattern)

    /// What is wrong with the set and how to fix it.
    public var description: String {
        switch self {
        case .noPins(let pattern):
            return "pin set for \(pattern) has no pins; give the current key's pin and a backup key's pin"
        case .singlePin(let pattern):
            return "pin set for \(pattern) has a single pin; add a backup key's pin (recommended) "
                + "or pass acceptingSinglePin: true to accept the lock-out risk"
        }
    }
}

/// Any error from building pinning configuration from text.
public enum PinningConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host pattern was refused.
    case hostPattern(HostPatternError)
    /// A pin was refused.
    case pin(PinParseError)
    /// The pin set was refused.
    case pinSet(PinSetError)
    /// Two pin sets of one ``PinnedHosts`` literal have this pattern.
    case duplicateHostPattern(HostPattern)

    /// The wrapped error's message.
    public var description: String {
        switch self {
        case .hostPattern(let error): return error.description
        case .pin(let error): return error.description
        case .pinSet(let error): return error.description
        case .duplicateHostPattern(let pattern):
            return "\(pattern) is pinned twice; give each host pattern one entry with all its pins"
        }
    }
}
