import Foundation

/// The time source that ages presence proofs in ``CredentialVault``.
///
/// Why not the wall clock: anyone who can set the date (or an NTP step) could make an hour-old proof fresh again
/// by stepping it back. A presence clock only moves forward, and it keeps counting while the machine is suspended,
/// so closing the lid does not stretch a reuse window. Injectable so tests can step time (package access: a test
/// seam; an app's vault always uses ``BootTimeClock``).
package protocol PresenceClock: Sendable {
    /// The time since a fixed origin (for ``BootTimeClock``, boot); it never decreases.
    func now() -> Duration
}

/// `CLOCK_BOOTTIME`: monotonic, counts time spent suspended, unaffected by `settimeofday`, NTP or the user
/// setting the date. The default clock of ``CredentialVault``.
package struct BootTimeClock: PresenceClock {
    /// The system's boot-time clock.
    package init() {}

    /// The time since boot, including suspend.
    package func now() -> Duration {
        var time = timespec()
        // Cannot fail on Linux 2.6.39 and later: CLOCK_BOOTTIME is a valid clock id and `time` is writable.
        let status = clock_gettime(CLOCK_BOOTTIME, &time)
        precondition(status == 0, "clock_gettime(CLOCK_BOOTTIME) failed")
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }
}
