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

    @Test func aLateReportOfAnEndedFlightResumesNobody() {
        var state = State()
        let a = state.makeWaiterID()
        guard case .start(let old) = state.join("k", waiterID: a, waiter: "a") else { Issue.record("expected the waiter to start a flight"); return }
        #expect(state.finish("k", flightID: old) == ["a"])
        let b = state.makeWaiterID()
        guard case .start(let new) = state.join("k", waiterID: b, waiter: "b") else {
            Issue.record("an ended flight must not be joined")
            return
        }
        #expect(state.finish("k", flightID: old).isEmpty)  // the old flight reports again
        #expect(state.finish("k", flightID: new) == ["b"])
    }

    @Test func leavingResumesOnlyThatWaiter() {
        var state = State()
        let a = state.makeWaiterID(), b = state.makeWaiterID()
        guard case .start(let flight) = state.join("k", waiterID: a, waiter: "a") else { Issue.record("expected the waiter to start a flight"); return }
        _ = state.join("k", waiterID: b, waiter: "b")
        #expect(state.leave("k", waiterID: a) == "a")
        #expect(state.leave("k", waiterID: a) == nil)  // leaving twice does nothing
        #expect(state.finish("k", flightID: flight) == ["b"])
        #expect(state.leave("k", waiterID: b) == nil)  // leaving after the end does nothing
    }

    @Test func aFlightEveryoneLeftRunsOnAndCanBeJoined() {
        var state = State()
        let a = state.makeWaiterID()
        guard case .start(let flight) = state.join("k", waiterID: a, waiter: "a") else { Issue.record("expected the waiter to start a flight"); return }
        #expect(state.leave("k", waiterID: a) == "a")
        #expect(state.flightCount == 1)
        #expect(state.join("k", waiterID: state.makeWaiterID(), waiter: "b") == .joined)
        #expect(state.finish("k", flightID: flight) == ["b"])
        #expect(state.waiterCount == 0)
    }
}
