import Testing

@testable import ShopKitAPI

@Suite(.timeLimit(.minutes(3))) struct SingleFlightTests {
    typealias State = SingleFlight<String, String>

    @Test func firstCallerLeadsLaterOnesFollow() throws {
        var state = State()
        let started = state.lead("k")
        let flight = try #require(started)
        #expect(state.lead("k") == nil)
        #expect(state.follow("k", waiterID: 2, follower: "b") == .following)
        #expect(state.lead("other") != nil)
        #expect(state.flightCount == 2)
        #expect(state.waiterCount == 3)
        guard case .resume(let followers) = state.finish("k", flightID: flight, handOver: false) else {
            Issue.record("a leader with a result must end its flight")
            return
        }
        #expect(followers == ["b"])
        #expect(state.flightCount == 1)
    }

    @Test func followingAnEndedFlightLeadsANewOne() throws {
        var state = State()
        let started = state.lead("k")
        let old = try #require(started)
        guard case .resume([]) = state.finish("k", flightID: old, handOver: false) else {
            Issue.record("a flight without followers resumes nobody")
            return
        }
        guard case .lead(let new) = state.follow("k", waiterID: 2, follower: "b") else {
            Issue.record("with no flight running, the caller must lead")
            return
        }
        #expect(new != old)
        #expect(state.waiterCount == 1)
        #expect(state.lead("k") == nil)
    }

    @Test func aCancelledLeaderHandsTheFlightToTheOldestFollower() throws {
        var state = State()
        let started = state.lead("k")
        let first = try #require(started)
        _ = state.follow("k", waiterID: 2, follower: "b")
        _ = state.follow("k", waiterID: 3, follower: "c")
        guard case .handOver("b", let second) = state.finish("k", flightID: first, handOver: true) else {
            Issue.record("the oldest follower must be handed the flight")
            return
        }
        #expect(second != first)
        #expect(state.flightCount == 1)
        #expect(state.waiterCount == 2)  // b leads, c follows
        #expect(state.leave("k", waiterID: 2) == nil)  // b leads now: it no longer waits
        guard case .resume([]) = state.finish("k", flightID: first, handOver: false) else {
            Issue.record("the old leader's late report must not end the flight")
            return
        }
        guard case .resume(let followers) = state.finish("k", flightID: second, handOver: false) else {
            Issue.record("the new leader's result must end the flight")
            return
        }
        #expect(followers == ["c"])
        #expect(state.flightCount == 0)
    }

    @Test func aCancelledLeaderWithoutFollowersEndsTheFlight() throws {
        var state = State()
        let started = state.lead("k")
        let flight = try #require(started)
        guard case .resume([]) = state.finish("k", flightID: flight, handOver: true) else {
            Issue.record("no follower can be handed the flight")
            return
        }
        #expect(state.flightCount == 0)
        #expect(state.lead("k") != nil)
    }

    @Test func leavingRemovesOnlyThatFollower() throws {
        var state = State()
        let started = state.lead("k")
        let flight = try #require(started)
        _ = state.follow("k", waiterID: 2, follower: "b")
        _ = state.follow("k", waiterID: 3, follower: "c")
        #expect(state.leave("k", waiterID: 2) == "b")
        #expect(state.leave("k", waiterID: 2) == nil)  // leaving twice does nothing
        #expect(state.waiterCount == 2)
        guard case .handOver("c", _) = state.finish("k", flightID: flight, handOver: true) else {
            Issue.record("a follower that left must not be handed the flight")
            return
        }
        #expect(state.leave("k", waiterID: 3) == nil)
        #expect(state.leave("other", waiterID: 2) == nil)
    }

    // A task of its own leads, every caller follows (the auth decorator's refresh).

    @Test func aTaskLedFlightResumesEveryFollowerOnce() throws {
        var state = State()
        let started = state.lead("k")
        let flight = try #require(started)
        let a = state.makeWaiterID(), b = state.makeWaiterID()
        #expect(state.follow("k", waiterID: a, follower: "a") == .following)
        #expect(state.lead("k") == nil)
        #expect(state.follow("k", waiterID: b, follower: "b") == .following)
        guard case .resume(let followers) = state.finish("k", flightID: flight, handOver: false) else {
            Issue.record("the leader's result must end the flight")
            return
        }
        #expect(Set(followers) == ["a", "b"])
        guard case .resume(let late) = state.finish("k", flightID: flight, handOver: false) else {
            Issue.record("a late report must not hand anything over")
            return
        }
        #expect(late.isEmpty)  // reported twice: nobody is resumed again
    }

    @Test func aTaskLedFlightEveryoneLeftRunsOnAndCanBeJoined() throws {
        var state = State()
        let started = state.lead("k")
        let flight = try #require(started)
        let a = state.makeWaiterID()
        _ = state.follow("k", waiterID: a, follower: "a")
        #expect(state.leave("k", waiterID: a) == "a")
        #expect(state.leave("k", waiterID: a) == nil)  // leaving twice does nothing
        #expect(state.flightCount == 1)
        #expect(state.lead("k") == nil)  // still running: a later caller joins it
        #expect(state.follow("k", waiterID: state.makeWaiterID(), follower: "b") == .following)
        guard case .resume(let followers) = state.finish("k", flightID: flight, handOver: false) else {
            Issue.record("the leader's result must end the flight")
            return
        }
        #expect(followers == ["b"])
        #expect(state.waiterCount == 0)
    }
}
