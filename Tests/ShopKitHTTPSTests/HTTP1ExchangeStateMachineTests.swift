import NIOCore
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// Every transition of the HTTP/1.1 exchange state machine, with no channel and no clock: events in, actions
/// out. The property that matters most: each started exchange is released exactly once.
@Suite struct HTTP1ExchangeStateMachineTests {
    typealias Machine = HTTP1ExchangeStateMachine
    typealias Actions = Machine.Actions

    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var limits: Machine.Limits { .init(deadline: t0 + .seconds(60), idleReadTimeout: .seconds(5), maxResponseBodyBytes: 100) }
    let id = Machine.ExchangeID(raw: 1)

    func head(_ code: UInt, keepAlive: Bool = true, length: Int? = nil) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        if let length { headers.add(name: "Content-Length", value: "\(length)") }
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        return HTTPResponseHead(version: .http1_1, status: .init(statusCode: Int(code)), headers: headers)
    }

    func started(keepAlive: Bool = true, isHead: Bool = false) -> Machine {
        var machine = Machine()
        let actions = machine.start(id, limits: limits, requestKeepAlive: keepAlive, isHead: isHead, now: t0, channelActive: true)
        #expect(actions.timer == .arm(t0 + .seconds(5)))
        #expect(actions.release == nil && actions.fail == nil)
        return machine
    }

    /// The releases in a sequence of actions.
    func releases(_ all: [Actions]) -> [Bool] { all.compactMap(\.release) }

    @Test func aKeptAliveExchangeIsReleasedReusableOnceBeforeTheBodyEnds() {
        var machine = started()
        var all: [Actions] = []
        all.append(machine.requestWritten(id, now: t0))
        let headActions = machine.responseHead(head(200, length: 3))
        #expect(headActions.head != nil)
        all.append(headActions)
        let body = machine.responseBody(ByteBuffer(string: "abc"))
        #expect(body.body == ByteBuffer(string: "abc"))
        all.append(body)
        let end = machine.responseEnd()
        // Released once the read that ended the response is fully processed, never inside it.
        #expect(end.release == nil && !end.finishBody && !end.close && end.timer == .cancel)
        all.append(end)
        #expect(!machine.isIdle)
        let done = machine.readComplete()
        #expect(done.release == true && done.finishBody && !done.close)
        all.append(done)
        #expect(releases(all) == [true])
        #expect(machine.isIdle)
        // Late events for the ended exchange change nothing.
        #expect(machine.requestWritten(id, now: t0) == .none)
        #expect(machine.cancel(id) == .none)
    }

    /// Anything after a complete response in the same read makes the connection doubtful: it is released as
    /// not reusable (and closed) when the read completes, and the response that ended still stands.
    @Test func anythingAfterTheEndInTheSameReadMakesTheConnectionNotReusable() {
        let strays: [(String, (inout Machine) -> Actions)] = [
            ("a second head", { $0.responseHead(head(200, length: 0)) }),
            ("a body part", { $0.responseBody(ByteBuffer(string: "x")) }),
            ("an end", { $0.responseEnd() }),
            ("raw bytes", { $0.bytesRead(now: t0); return .none }),
            ("an unclean shutdown", { $0.uncleanShutdown() }),
        ]
        for (what, stray) in strays {
            var machine = started()
            _ = machine.requestWritten(id, now: t0)
            _ = machine.responseHead(head(200, length: 0))
            _ = machine.responseEnd()
            let strayActions = stray(&machine)
            #expect(strayActions.release == nil && strayActions.fail == nil, "\(what)")
            let done = machine.readComplete()
            #expect(done.release == false && done.close && done.finishBody && done.fail == nil, "\(what)")
            #expect(!machine.isIdle, "\(what)")
        }
    }

    /// An error after the response's end, before the read completes: the response stands, the connection closes.
    @Test func anErrorAfterTheEndKeepsTheResponseAndClosesTheConnection() {
        var machine = started()
        _ = machine.requestWritten(id, now: t0)
        _ = machine.responseHead(head(200, length: 0))
        _ = machine.responseEnd()
        let error = machine.errorCaught(.transport(.malformedResponse("stray")))
        #expect(error.release == false && error.close && error.finishBody && error.fail == nil)
        #expect(machine.readComplete() == .none)  // released once
    }

    /// The client never asks for a protocol switch: a 101 is the server's protocol error.
    @Test func switchingProtocolsFailsTheExchange() {
        var machine = started()
        _ = machine.requestWritten(id, now: t0)
        let actions = machine.responseHead(head(101))
        guard case .transport(.malformedResponse(let why))? = actions.fail?.failure else {
            Issue.record("expected malformedResponse, got \(String(describing: actions.fail))")
            return
        }
        #expect(why.contains("101"))
        #expect(actions.head == nil && actions.release == false && actions.close)
    }

    @Test func connectionCloseOnEitherSideIsNotReusable() {
        for (requestKeepAlive, responseKeepAlive) in [(false, true), (true, false)] {
            var machine = started(keepAlive: requestKeepAlive)
            _ = machine.requestWritten(id, now: t0)
            _ = machine.responseHead(head(200, keepAlive: responseKeepAlive, length: 0))
            #expect(machine.responseEnd().release == nil)
            let end = machine.readComplete()
            #expect(end.release == false && end.close && end.finishBody)
            #expect(!machine.isIdle)
        }
    }

    @Test func anEarlyResponseWaitsForTheRequestsEndBeforeRelease() {
        var machine = started()
        _ = machine.responseHead(head(200, length: 0))
        let end = machine.responseEnd()
        #expect(end.release == nil && end.finishBody && end.timer == .cancel)
        let written = machine.requestWritten(id, now: t0)
        #expect(written.release == true && !written.close)
        #expect(machine.isIdle)
    }

    @Test func aStreamsCompletedExchangeIsReleasedWithoutAClose() {
        var machine = Machine(stream: true)
        _ = machine.start(id, limits: limits, requestKeepAlive: true, isHead: false, now: t0, channelActive: true)
        _ = machine.requestWritten(id, now: t0)
        // An HTTP/2 response head (version 2.0): HTTP/1.1's keep-alive rules do not apply.
        let head = HTTPResponseHead(version: .http2, status: .ok)
        #expect(machine.responseHead(head).head == head)
        #expect(machine.responseEnd().timer == .cancel)
        let end = machine.readComplete()
        #expect(end.release == true && !end.close && end.finishBody)
        // The stream then closes by itself; nothing fails.
        #expect(machine.channelInactive().fail == nil)
    }

    @Test func aStreamsResponseThatEndsBeforeTheRequestResetsTheStream() {
        var machine = Machine(stream: true)
        _ = machine.start(id, limits: limits, requestKeepAlive: true, isHead: false, now: t0, channelActive: true)
        _ = machine.responseHead(HTTPResponseHead(version: .http2, status: .ok))
        #expect(machine.responseEnd().release == nil)
        let end = machine.readComplete()
        #expect(end.release == false && end.close && end.finishBody)
        #expect(machine.requestWritten(id, now: t0) == .none)
    }

    @Test func anEarlyResponseWhoseRequestFailsIsClosed() {
        var machine = started()
        _ = machine.responseHead(head(200, length: 0))
        _ = machine.responseEnd()
        let failed = machine.requestWriteFailed(id)
        #expect(failed.release == false && failed.close)
        #expect(machine.requestWriteFailed(id) == .none)
    }

    @Test func informationalHeadsAreSkipped() {
        var machine = started()
        #expect(machine.responseHead(head(100)) == .none)
        #expect(machine.responseHead(head(200)).head != nil)
    }

    @Test func oversizedBodiesFailWithTheLimit() {
        var declared = started()
        let tooLong = declared.responseHead(head(200, length: 101))
        #expect(tooLong.fail?.failure == .transport(.responseBodyTooLarge(limit: 100)))
        #expect(tooLong.release == false && tooLong.close)

        var streamed = started()
        _ = streamed.responseHead(head(200))
        _ = streamed.responseBody(ByteBuffer(repeating: 0, count: 60))
        let over = streamed.responseBody(ByteBuffer(repeating: 0, count: 41))
        #expect(over.fail?.failure == .transport(.responseBodyTooLarge(limit: 100)))
        #expect(over.fail?.headDelivered == true && over.release == false)
    }

    @Test func aHeadResponseMayDeclareAnyLength() {
        var machine = started(isHead: true)
        #expect(machine.responseHead(head(200, length: 10_000)).head != nil)
    }

    @Test func failuresBeforeAnyByteAllowARetry() {
        var machine = started()
        let closed = machine.channelInactive()
        #expect(closed.fail?.failure == .transport(.connectionClosed))
        #expect(closed.fail?.noResponseBytes == true && closed.fail?.headDelivered == false)
        #expect(closed.release == false && !closed.close)  // already closed

        var read = started()
        read.bytesRead(now: t0)
        #expect(read.channelInactive().fail?.noResponseBytes == false)
    }

    @Test func startingOnAClosedOrInactiveConnectionFailsAndReleasesAtOnce() {
        var inactive = Machine()
        let refused = inactive.start(id, limits: limits, requestKeepAlive: true, isHead: false, now: t0, channelActive: false)
        #expect(refused.fail?.failure == .transport(.connectionClosed) && refused.fail?.noResponseBytes == true)
        #expect(refused.release == false)

        var busy = started()
        let second = busy.start(.init(raw: 2), limits: limits, requestKeepAlive: true, isHead: false, now: t0, channelActive: true)
        #expect(second.release == false && second.fail != nil)
        // The running exchange is untouched.
        #expect(busy.responseHead(head(200)).head != nil)
    }

    @Test func cancellationClosesAndReleasesOnce() {
        var machine = started()
        _ = machine.responseHead(head(200))
        #expect(machine.cancel(.init(raw: 7)) == .none)  // another exchange
        let cancelled = machine.cancel(id)
        #expect(cancelled.fail?.failure == .cancelled && cancelled.release == false && cancelled.close)
        #expect(machine.cancel(id) == .none)
        #expect(machine.channelInactive().release == nil)
    }

    @Test func uncleanShutdownFailsTheExchangeInProgressOnly() {
        var machine = started()
        _ = machine.responseHead(head(200))
        let cut = machine.uncleanShutdown()
        #expect(cut.fail?.failure == .transport(.connectionClosed) && cut.release == false)
        var idle = Machine()
        #expect(idle.uncleanShutdown() == .none)
    }

    @Test func unsolicitedBytesCloseAnIdleConnection() {
        var machine = Machine()
        let actions = machine.responseHead(head(200))
        #expect(actions.close && actions.release == nil && actions.fail == nil)
    }

    @Test func pipelineErrorsKeepTheirType() {
        var machine = started()
        let actions = machine.errorCaught(.tls(.handshakeFailed(reason: "bad record mac")))
        #expect(actions.fail?.failure == .tls(.handshakeFailed(reason: "bad record mac")))
    }

    @Test func timersFollowTheRequestAndTheReader() {
        var machine = started()
        // Still uploading at the first firing: not the server's silence.
        #expect(machine.timerFired(now: t0 + .seconds(5)).timer == .arm(t0 + .seconds(10)))
        _ = machine.requestWritten(id, now: t0 + .seconds(6))
        machine.bytesRead(now: t0 + .seconds(8))
        #expect(machine.timerFired(now: t0 + .seconds(10)).timer == .arm(t0 + .seconds(13)))
        // A slow reader holds reads back, and its wait is not the server's silence either.
        machine.readerBehind()
        #expect(machine.readRequested() == .none)
        #expect(machine.timerFired(now: t0 + .seconds(13)).timer == .arm(t0 + .seconds(18)))
        let caughtUp = machine.readerCaughtUp(now: t0 + .seconds(14))
        #expect(caughtUp.read)
        let idle = machine.timerFired(now: t0 + .seconds(19))
        #expect(idle.fail?.failure == .transport(.timeout(.idleRead)) && idle.release == false)
    }

    @Test func theRequestDeadlineWins() {
        var machine = started()
        _ = machine.requestWritten(id, now: t0)
        machine.bytesRead(now: t0 + .seconds(59))
        let late = machine.timerFired(now: t0 + .seconds(60))
        #expect(late.fail?.failure == .transport(.timeout(.request)))
    }

    @Test func readsPassWhenNotPaused() {
        var machine = Machine()
        #expect(machine.readRequested().read)
    }
}
