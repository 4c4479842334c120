import Testing
import ShopKitFuzzTargets

/// The HTTP/1.1 connection fuzz target hands the connection from one exchange to the next as the pool does: each
/// exchange gets its own response, a stray response ends the connection's use, and the invariants hold. (A harness
/// that never started a second exchange would pass every fuzz run and prove nothing.)
@Suite(.timeLimit(.minutes(3))) struct HTTPConnectionHarnessTests {
    static func response(_ body: String) -> String { "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)" }
    static func input(control: UInt8, _ responses: String) -> [UInt8] { [control] + Array(responses.utf8) }

    @Test func fourResponsesInOneReadServeFourExchangesInTurn() throws {
        let bytes = Self.input(control: 3, ["1", "2", "3", "4"].map(Self.response).joined())
        let outcomes = try #require(HTTPConnectionTarget.outcome(bytes))
        // All four responses came in one read: the first exchange takes its response, and the rest of that read
        // (three complete responses nobody had asked for yet) makes the connection doubtful.
        #expect(outcomes.count == 1)
        #expect(outcomes.first?.releases == [false])
        #expect(outcomes.first?.headDelivered == true)
        FuzzTarget.http1Connection.run(bytes)
    }

    @Test func oneResponsePerReadServesEachExchangeOnTheSameConnection() throws {
        // Reads of 1 byte: each response is complete at the end of its own read.
        let bytes = Self.input(control: 3 | 1 << 2, ["1", "2", "3", "4"].map(Self.response).joined())
        let outcomes = try #require(HTTPConnectionTarget.outcome(bytes))
        #expect(outcomes.count == 4)
        #expect(outcomes.allSatisfy { $0.releases == [true] && $0.headDelivered && $0.bodyEnded })
        #expect(outcomes.map(\.startedInRead) == outcomes.map(\.startedInRead).sorted())
        FuzzTarget.http1Connection.run(bytes)
    }

    @Test func aStrayResponseAfterTheFirstEndsTheConnectionsUse() throws {
        let bytes = Self.input(control: 1, Self.response("one") + Self.response("INJECTED12345"))
        let outcomes = try #require(HTTPConnectionTarget.outcome(bytes))
        #expect(outcomes.count == 1)
        #expect(outcomes.first?.releases == [false])
        FuzzTarget.http1Connection.run(bytes)
    }
}
