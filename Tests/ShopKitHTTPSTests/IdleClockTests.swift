import NIOCore
import Testing
@testable import ShopKitHTTPS

/// The pool's idle rule on a clock the test moves: a connection closes once it has been idle for the whole
/// timeout since its last park, with one timer armed per idle period, not one per request.
@Suite(.timeLimit(.minutes(3))) struct IdleClockTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    let timeout = TimeAmount.seconds(60)

    @Test func aConnectionIdleForTheWholeTimeoutCloses() {
        var clock = IdleClock(timeout: timeout)
        #expect(clock.parked(now: t0) == t0 + timeout)
        #expect(clock.fired(now: t0 + timeout) == .close)
        #expect(!clock.armed)
    }

    @Test func reuseWithinTheTimeoutArmsNoNewTimerAndPushesTheCloseBack() {
        var clock = IdleClock(timeout: timeout)
        #expect(clock.parked(now: t0) == t0 + timeout)
        // A thousand requests on the connection: no timer work for any of them.
        for i in 1...1_000 {
            clock.leased()
            #expect(clock.parked(now: t0 + .milliseconds(Int64(i))) == nil)
        }
        let lastPark = t0 + .milliseconds(1_000)
        // The first timer fires early for the last park: armed again for the rest.
        #expect(clock.fired(now: t0 + timeout) == .rearm(lastPark + timeout))
        #expect(clock.armed)
        #expect(clock.fired(now: lastPark + timeout) == .close)
    }

    @Test func aTimerThatFiresWhileTheConnectionIsInUseStops() {
        var clock = IdleClock(timeout: timeout)
        _ = clock.parked(now: t0)
        clock.leased()
        #expect(clock.fired(now: t0 + timeout) == .stop)
        #expect(!clock.armed)
        // The next park arms a new timer, for a full period from then.
        let later = t0 + .seconds(90)
        #expect(clock.parked(now: later) == later + timeout)
        #expect(clock.fired(now: later + timeout - .nanoseconds(1)) == .rearm(later + timeout))
        #expect(clock.fired(now: later + timeout) == .close)
    }
}
