import Testing
@testable import ShopKitHTTPS

/// Where the pool puts new connections: spread while they are open together, on one loop when they come one
/// at a time.
@Suite(.timeLimit(.minutes(3))) struct LoopPlacementTests {
    @Test func oneConnectionAtATimeStaysOnOneLoop() {
        var placement = LoopPlacement<Int>(loops: 4)
        for id in 0..<10 {
            #expect(placement.place(id) == 0)
            placement.remove(id)
        }
    }

    @Test func concurrentConnectionsSpreadEvenly() {
        var placement = LoopPlacement<Int>(loops: 3)
        let loops = (0..<9).map { placement.place($0) }
        #expect(loops.sorted() == [0, 0, 0, 1, 1, 1, 2, 2, 2])
        for index in 0..<3 { #expect(placement.connections(on: index) == 3) }
    }

    @Test func aFreedLoopIsFilledFirstAndTiesKeepTheLastLoop() {
        var placement = LoopPlacement<Int>(loops: 3)
        #expect(placement.place(1) == 0)
        #expect(placement.place(2) == 1)
        #expect(placement.place(3) == 2)
        placement.remove(2)
        #expect(placement.place(4) == 1)
        // All tie at one: the loop chosen last (1) is kept.
        placement.remove(4)
        placement.remove(1)
        placement.remove(3)
        #expect(placement.place(5) == 1)
    }

    @Test func removingTwiceOrAnUnknownConnectionChangesNothing() {
        var placement = LoopPlacement<Int>(loops: 2)
        _ = placement.place(1)
        placement.remove(1)
        placement.remove(1)
        placement.remove(99)
        #expect(placement.connections(on: 0) == 0)
        #expect(placement.connections(on: 1) == 0)
        // Placing again moves a connection instead of counting it twice.
        _ = placement.place(7)
        _ = placement.place(7)
        #expect(placement.connections(on: 0) + placement.connections(on: 1) == 1)
    }
}
