import NIOCore
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// The request state machine on its own, as an HTTP/2 stream uses it: no keep-alive, no hand-over.
@Suite(.timeLimit(.minutes(3))) struct HTTPRequestStateMachineTests {
    typealias Machine = HTTPRequestStateMachine

    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var limits: Machine.Limits { .init(deadline: t0 + .seconds(60), idleReadTimeout: .seconds(5), maxResponseBodyBytes: 100) }
    let h2Head = HTTPResponseHead(version: .http2, status: .ok)

    @Test func aCompletedRequestEndsOnceAndIgnoresLaterEvents() {
        var machine = Machine(limits: limits, requestKeepAlive: true, isHead: false, now: t0)
        #expect(machine.firstDeadline == t0 + .seconds(5))
        #expect(machine.requestWritten(now: t0) == .none)
        #expect(machine.responseHead(h2Head) == .deliver(h2Head))
        guard case .complete = machine.responseEnd() else {
            Issue.record("a response after the whole request completes the request")
            return
        }
        #expect(!machine.isRunning)
        #expect(machine.fail(.cancelled) == nil)  // over: nothing left to fail
        #expect(machine.timerFired(now: t0 + .seconds(100)) == .none)
    }

    /// An HTTP/2 stream resets a response that ended before the request did (RFC 9113 §8.1): the machine says so.
    @Test func aResponseBeforeTheRequestsEndIsAnEarlyResponse() {
        var machine = Machine(limits: limits, requestKeepAlive: true, isHead: false, now: t0)
        _ = machine.responseHead(h2Head)
        #expect(machine.responseEnd() == .earlyResponse(resumeRead: false))
        #expect(machine.awaitsRequestEnd)
        #expect(machine.timerFired(now: t0 + .seconds(100)) == .none)  // the response is in: no timer runs
        guard case .complete = machine.requestWritten(now: t0) else {
            Issue.record("the request's end completes an early response")
            return
        }
    }

    @Test func partsOutOfOrderAreTheServersFault() {
        var body = Machine(limits: limits, requestKeepAlive: true, isHead: false, now: t0)
        guard case .fail(let beforeHead) = body.responseBody(ByteBuffer(string: "x")) else {
            Issue.record("a body before the head must fail")
            return
        }
        #expect(beforeHead.failure == .transport(.malformedResponse(.unexpectedResponsePart)))
        var end = Machine(limits: limits, requestKeepAlive: true, isHead: false, now: t0)
        end.bytesRead(now: t0)
        guard case .fail(let endFirst) = end.responseEnd() else {
            Issue.record("an end before the head must fail")
            return
        }
        #expect(!endFirst.noResponseBytes && !endFirst.headDelivered)
    }
}
