import Testing

@testable import ShopKitAPI

@Suite struct SingleFlightTests {
    typealias State = SingleFlight<String, String>

    @Test func firstWaiterStartsLaterOnesJoin() {
        var state = State()
        let a = state.makeWaiterID(), b = state.makeWaiterID()
        guard case .start(let flight) = state.join("k", waiterID: a, waiter: "a") else {
            Issue.record("the first waiter must start the flight")
            return
        }
        #expect(state.join("k", waiterID: b, waiter: "b") == .joined)
        #expect(state.join("other", waiterID: state.makeWaiterID(), waiter: "c") != .joined)
        #expect(state.flightCount == 2)
        #expect(Set(state.finish("k", flightID: flight)) == ["a", "b"])
        #expect(state.flightCount == 1)
    }

    @Test func finishOfAnEvictedFlightResumesNobody() {
        var state = State()
        let a = state.makeWaiterID()
        guard case .start(let old) = state.join("k", waiterID: a, waiter: "a") else { Issue.record("expected the waiter to start a flight"); return }
        guard case .resumeAndCancel("a", old) = state.leave("k", waiterID: a, cancelWhenEmpty: true) else {
            Issue.record("the last waiter leaving must cancel")
            return
        }
        let b = state.makeWaiterID()
        guard case .start(let new) = state.join("k", waiterID: b, waiter: "b") else {
            Issue.record("a cancelled flight must not be joined")
            return
        }
        #expect(state.finish("k", flightID: old).isEmpty)  // the cancelled one ends late
        #expect(state.finish("k", flightID: new) == ["b"])
    }

    @Test func leavingResumesOnlyThatWaiter() {
        var state = State()
        let a = state.makeWaiterID(), b = state.makeWaiterID()
        guard case .start(let flight) = state.join("k", waiterID: a, waiter: "a") else { Issue.record("expected the waiter to start a flight"); return }
        _ = state.join("k", waiterID: b, waiter: "b")
        guard case .resume("a") = state.leave("k", waiterID: a, cancelWhenEmpty: true) else {
            Issue.record("a waiter that is not the last must only be resumed")
            return
        }
        guard case .none = state.leave("k", waiterID: a, cancelWhenEmpty: true) else {
            Issue.record("leaving twice must do nothing")
            return
        }
        #expect(state.finish("k", flightID: flight) == ["b"])
        guard case .none = state.leave("k", waiterID: b, cancelWhenEmpty: true) else {
            Issue.record("leaving after the end must do nothing")
            return
        }
    }

    @Test func withoutCancelWhenEmptyTheFlightRunsOnAndCanBeJoined() {
        var state = State()
        let a = state.makeWaiterID()
        guard case .start(let flight) = state.join("k", waiterID: a, waiter: "a") else { Issue.record("expected the waiter to start a flight"); return }
        guard case .resume("a") = state.leave("k", waiterID: a, cancelWhenEmpty: false) else {
            Issue.record("expected a plain resume")
            return
        }
        #expect(state.flightCount == 1)
        #expect(state.join("k", waiterID: state.makeWaiterID(), waiter: "b") == .joined)
        #expect(state.finish("k", flightID: flight) == ["b"])
        #expect(state.waiterCount == 0)
    }
}
