import NIOCore
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS
import ShopKitTLS

/// Every transition of the HTTP/1.1 connection state machine, with no channel and no clock: events in, one action
/// per event out. The property that matters most: each started request is released exactly once, and never
/// inside the read that ended its response.
@Suite(.timeLimit(.minutes(3))) struct HTTP1ConnectionStateMachineTests {
    typealias Machine = HTTP1ConnectionStateMachine
    typealias Failed = HTTPRequestStateMachine.Failed

    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var limits: HTTPRequestStateMachine.Limits {
        .init(deadline: t0 + .seconds(60), idleReadTimeout: .seconds(5), maxResponseBodyBytes: 100)
    }
    let id = Machine.RequestID(raw: 1)

    func head(_ code: UInt, keepAlive: Bool = true, length: Int? = nil) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        if let length { headers.add(name: "Content-Length", value: "\(length)") }
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        return HTTPResponseHead(version: .http1_1, status: .init(statusCode: Int(code)), headers: headers)
    }

    func started(keepAlive: Bool = true, isHead: Bool = false) -> Machine {
        var machine = Machine()
        let action = machine.start(id, limits: limits, requestKeepAlive: keepAlive, isHead: isHead, now: t0, channelActive: true)
        #expect(action == .start(armTimer: t0 + .seconds(5)))
        return machine
    }

    /// The request's failure, when `action` fails it.
    func failed(_ action: Machine.CloseAction) -> Failed? {
        if case .failRequest(let failed) = action { return failed }
        return nil
    }

    @Test func aKeptAliveRequestIsReleasedReusableOnceAfterItsRead() {
        var machine = started()
        #expect(machine.requestWritten(id, now: t0) == .none)
        #expect(machine.responseHead(head(200, length: 3)) == .deliver(head(200, length: 3)))
        #expect(machine.responseBody(ByteBuffer(string: "abc")) == .deliver(ByteBuffer(string: "abc")))
        // Released once the read that ended the response is fully processed, never inside it.
        #expect(machine.responseEnd() == .awaitReadComplete(resumeRead: false))
        #expect(!machine.isIdle)
        #expect(machine.readComplete() == .release(reusable: true))
        #expect(machine.isIdle)
        #expect(machine.readComplete() == .none)  // released once
        // Late events for the ended request change nothing.
        #expect(machine.requestWritten(id, now: t0) == .none)
        #expect(machine.cancel(id) == .none)
    }

    /// Anything after a complete response in the same read makes the connection doubtful: it is released as
    /// not reusable (and closed) when the read completes, and the response that ended still stands.
    @Test func anythingAfterTheEndInTheSameReadMakesTheConnectionNotReusable() {
        let strays: [(String, (inout Machine) -> Bool)] = [
            ("a second head", { $0.responseHead(head(200, length: 0)) == .close(.none) }),
            ("a body part", { $0.responseBody(ByteBuffer(string: "x")) == .close(.none) }),
            ("an end", { $0.responseEnd() == .close(.none) }),
            ("raw bytes", { !$0.bytesRead(now: t0) }),
            ("an unclean shutdown", { $0.uncleanShutdown() == .none }),
        ]
        for (what, stray) in strays {
            var machine = started()
            _ = machine.requestWritten(id, now: t0)
            _ = machine.responseHead(head(200, length: 0))
            _ = machine.responseEnd()
            let quiet = stray(&machine)
            #expect(quiet, "\(what): neither fails nor releases anything by itself")
            #expect(machine.readComplete() == .release(reusable: false), "\(what)")
            #expect(!machine.isIdle, "\(what)")
        }
    }

    /// An error after the response's end, before the read completes: the response stands, the connection closes.
    /// Bytes on an idle connection (before the first request, or between two) answer nobody: the connection
    /// closes, and they never reach the decoder, which would keep a partial head for the next request's response.
    @Test func bytesOnAnIdleConnectionCloseItAndAreNotDecoded() {
        var fresh = Machine()
        #expect(fresh.bytesRead(now: t0) == true)
        let refused = fresh.start(id, limits: limits, requestKeepAlive: true, isHead: false, now: t0, channelActive: true)
        guard case .refuse = refused else { Issue.record("a closed connection started a request: \(refused)"); return }

        var machine = started()
        #expect(machine.requestWritten(id, now: t0) == .none)
        #expect(machine.bytesRead(now: t0) == false)
        #expect(machine.responseHead(head(200, length: 0)) == .deliver(head(200, length: 0)))
        #expect(machine.responseEnd() == .awaitReadComplete(resumeRead: false))
        #expect(machine.readComplete() == .release(reusable: true))
        #expect(machine.bytesRead(now: t0 + .seconds(1)) == true)
        #expect(machine.bytesRead(now: t0 + .seconds(2)) == false)  // closed already: nothing more to do
    }

    @Test func anErrorAfterTheEndKeepsTheResponseAndClosesTheConnection() {
        var machine = started()
        _ = machine.requestWritten(id, now: t0)
        _ = machine.responseHead(head(200, length: 0))
        _ = machine.responseEnd()
        #expect(machine.errorCaught(.transport(.malformedResponse(.bytesAfterResponseEnd))) == .endResponseAndClose)
        #expect(machine.readComplete() == .none)  // released once
    }

    /// The client never asks for a protocol switch: a 101 is the server's protocol error.
    @Test func switchingProtocolsFailsTheRequestAndClosesTheConnection() {
        var machine = started()
        _ = machine.requestWritten(id, now: t0)
        guard case .close(.failRequest(let failed)) = machine.responseHead(head(101)),
            case .transport(let error) = failed.failure, let why = error.malformedResponseReason
        else {
            Issue.record("a 101 must fail the request as malformed")
            return
        }
        #expect(why == .unrequestedUpgrade && why.description.contains("101"))
        #expect(!failed.headDelivered)
        #expect(!machine.isIdle)
    }

    @Test func connectionCloseOnEitherSideIsNotReusable() {
        for (requestKeepAlive, responseKeepAlive) in [(false, true), (true, false)] {
            var machine = started(keepAlive: requestKeepAlive)
            _ = machine.requestWritten(id, now: t0)
            _ = machine.responseHead(head(200, keepAlive: responseKeepAlive, length: 0))
            #expect(machine.responseEnd() == .awaitReadComplete(resumeRead: false))
            #expect(machine.readComplete() == .release(reusable: false))
            #expect(!machine.isIdle)
        }
    }

    @Test func anEarlyResponseWaitsForTheRequestsEndBeforeRelease() {
        var machine = started()
        _ = machine.responseHead(head(200, length: 0))
        #expect(machine.responseEnd() == .earlyResponse(resumeRead: false))
        #expect(machine.readComplete() == .none)  // the request is still being written
        #expect(machine.requestWritten(id, now: t0) == .release(reusable: true))
        #expect(machine.isIdle)
    }

    @Test func anEarlyResponseWhoseRequestFailsIsClosed() {
        var machine = started()
        _ = machine.responseHead(head(200, length: 0))
        _ = machine.responseEnd()
        let failure = failed(machine.requestWriteFailed(id))
        #expect(failure?.failure == .transport(.connectionClosed) && failure?.headDelivered == true)
        #expect(machine.requestWriteFailed(id) == .none)
    }

    @Test func informationalHeadsAreSkipped() {
        var machine = started()
        #expect(machine.responseHead(head(100)) == .none)
        #expect(machine.responseHead(head(200)) == .deliver(head(200)))
    }

    @Test func oversizedBodiesFailWithTheLimit() {
        var declared = started()
        guard case .close(.failRequest(let tooLong)) = declared.responseHead(head(200, length: 101)) else {
            Issue.record("a declared length above the limit must fail")
            return
        }
        #expect(tooLong.failure == .transport(.responseBodyTooLarge(limit: 100)) && !tooLong.headDelivered)

        var streamed = started()
        _ = streamed.responseHead(head(200))
        _ = streamed.responseBody(ByteBuffer(repeating: 0, count: 60))
        guard case .close(.failRequest(let over)) = streamed.responseBody(ByteBuffer(repeating: 0, count: 41)) else {
            Issue.record("a streamed body above the limit must fail")
            return
        }
        #expect(over.failure == .transport(.responseBodyTooLarge(limit: 100)) && over.headDelivered)
    }

    @Test func aHeadResponseMayDeclareAnyLength() {
        var machine = started(isHead: true)
        #expect(machine.responseHead(head(200, length: 10_000)) == .deliver(head(200, length: 10_000)))
    }

    @Test func failuresBeforeAnyByteAllowARetry() {
        var machine = started()
        #expect(
            machine.channelInactive()
                == .failRequest(Failed(failure: .transport(.connectionClosed), noResponseBytes: true, headDelivered: false)))

        var read = started()
        #expect(read.bytesRead(now: t0) == false)
        guard case .failRequest(let failed) = read.channelInactive() else {
            Issue.record("a close under a running request must fail it")
            return
        }
        #expect(!failed.noResponseBytes)
    }

    @Test func startingOnAClosedOrInactiveConnectionFailsAndReleasesAtOnce() {
        let refusal = Machine.StartAction.refuse(
            Failed(failure: .transport(.connectionClosed), noResponseBytes: true, headDelivered: false))
        var inactive = Machine()
        #expect(inactive.start(id, limits: limits, requestKeepAlive: true, isHead: false, now: t0, channelActive: false) == refusal)

        var busy = started()
        #expect(busy.start(.init(raw: 2), limits: limits, requestKeepAlive: true, isHead: false, now: t0, channelActive: true) == refusal)
        // The running request is untouched.
        #expect(busy.responseHead(head(200)) == .deliver(head(200)))
    }

    @Test func cancellationClosesAndReleasesOnce() {
        var machine = started()
        _ = machine.responseHead(head(200))
        #expect(machine.cancel(.init(raw: 7)) == .none)  // another request
        #expect(failed(machine.cancel(id))?.failure == .cancelled)
        #expect(machine.cancel(id) == .none)
        #expect(machine.channelInactive() == .none)
    }

    @Test func uncleanShutdownFailsTheRequestInProgressOnly() {
        var machine = started()
        _ = machine.responseHead(head(200))
        #expect(failed(machine.uncleanShutdown())?.failure == .transport(.connectionClosed))
        var idle = Machine()
        #expect(idle.uncleanShutdown() == .none)
    }

    @Test func unsolicitedBytesCloseAnIdleConnection() {
        var machine = Machine()
        #expect(machine.responseHead(head(200)) == .close(.close))
        #expect(!machine.isIdle)
    }

    @Test func pipelineErrorsKeepTheirType() {
        var machine = started()
        #expect(failed(machine.errorCaught(.tls(.handshakeFailed(reason: "bad record mac"))))?.failure == .tls(.handshakeFailed(reason: "bad record mac")))
    }

    @Test func timersFollowTheRequestAndTheReader() {
        var machine = started()
        // Still uploading at the first firing: not the server's silence.
        #expect(machine.timerFired(now: t0 + .seconds(5)) == .rearm(t0 + .seconds(10)))
        _ = machine.requestWritten(id, now: t0 + .seconds(6))
        #expect(machine.bytesRead(now: t0 + .seconds(8)) == false)
        #expect(machine.timerFired(now: t0 + .seconds(10)) == .rearm(t0 + .seconds(13)))
        // A slow reader holds reads back, and its wait is not the server's silence either.
        machine.readerBehind()
        let held = !machine.readRequested()
        #expect(held)
        #expect(machine.timerFired(now: t0 + .seconds(13)) == .rearm(t0 + .seconds(18)))
        let due = machine.readerCaughtUp(now: t0 + .seconds(14))
        #expect(due)
        guard case .close(.failRequest(let idle)) = machine.timerFired(now: t0 + .seconds(19)) else {
            Issue.record("silence past the idle-read timeout must fail the request")
            return
        }
        #expect(idle.failure == .transport(.timeout(.idleRead)))
    }

    @Test func theRequestDeadlineWins() {
        var machine = started()
        _ = machine.requestWritten(id, now: t0)
        #expect(machine.bytesRead(now: t0 + .seconds(59)) == false)
        guard case .close(.failRequest(let late)) = machine.timerFired(now: t0 + .seconds(60)) else {
            Issue.record("the deadline must fail the request")
            return
        }
        #expect(late.failure == .transport(.timeout(.request)))
    }

    @Test func readsPassWhenNotPaused() {
        var machine = Machine()
        let through = machine.readRequested()
        #expect(through)
    }
}
