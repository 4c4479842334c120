import Testing
import ShopKitFuzzTargets

/// The HTTP response fuzz target drives the real response path: a well-formed keep-alive response gives the
/// connection back reusable, a malformed one fails the exchange and closes it. (A harness that never got a
/// response through would pass every fuzz run and prove nothing.)
@Suite(.timeLimit(.minutes(3))) struct HTTPResponseHarnessTests {
    static func input(control: UInt8, _ response: String) -> [UInt8] { [control] + Array(response.utf8) }

    @Test func aKeepAliveResponseIsDeliveredAndReleasedReusable() throws {
        let outcome = try #require(HTTPResponseTarget.outcome(Self.input(
            control: 0, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")))
        #expect(outcome == .init(releases: [true], headAnswered: true, headDelivered: true, bodyEnded: true))
    }

    @Test func byteByByteReadsGiveTheSameOutcome() throws {
        let outcome = try #require(HTTPResponseTarget.outcome(Self.input(
            control: 1 << 2, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")))
        #expect(outcome == .init(releases: [true], headAnswered: true, headDelivered: true, bodyEnded: true))
    }

    @Test func aRequestWithConnectionCloseIsNeverReused() throws {
        let outcome = try #require(HTTPResponseTarget.outcome(Self.input(
            control: 2, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")))
        #expect(outcome.releases == [false])
        #expect(outcome.headDelivered)
    }

    @Test func aMalformedResponseFailsTheExchange() throws {
        let outcome = try #require(HTTPResponseTarget.outcome(Self.input(control: 0, "not http at all\r\n\r\n")))
        #expect(outcome == .init(releases: [false], headAnswered: true, headDelivered: false, bodyEnded: true))
    }

    @Test func aBodyOverTheLimitFailsTheExchange() throws {
        let outcome = try #require(HTTPResponseTarget.outcome(Self.input(
            control: 0, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc")))
        #expect(outcome.releases == [false])
    }
}
