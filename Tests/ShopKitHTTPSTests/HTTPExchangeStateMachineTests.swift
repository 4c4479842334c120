import NIOCore
import NIOHTTP1
import Testing
@testable import ShopKitHTTPS

/// ``HTTPExchange/StateMachine`` alone: every transition, cancellation and failure in every state, the upload's
/// demand, and the response body's buffer (which was `BodyStream`'s: its tests moved here with it).
@Suite struct HTTPExchangeStateMachineTests {
    typealias Machine = HTTPExchange.StateMachine
    struct Boom: Error, Equatable {}

    static let ok = HTTPResponseHead(version: .http1_1, status: .ok)

    /// A machine driven to `phase` (a bodiless request, or one with a body for the upload's phases).
    static func machine(in phase: Machine.Phase, hasBody: Bool = false) -> Machine {
        let uploads: Bool
        if case .uploading = phase { uploads = true } else { uploads = hasBody }
        var machine = Machine(hasBody: uploads)
        if phase == .queued { return machine }
        _ = machine.leased()
        if phase == .waitingForConnection { return machine }
        _ = machine.start(resetsOnAbandon: false)
        switch phase {
        case .headWritten, .uploading(demand: true): break
        case .uploading(demand: false): _ = machine.willWriteChunk()
        case .headReceived: machine.receiveHead(ok)
        case .streaming:
            machine.receiveHead(ok)
            _ = machine.handOverHead()
        case .finished:
            machine.receiveHead(ok)
            _ = machine.handOverHead()
            _ = machine.receiveEnd()
        case .failed: _ = machine.fail(callerError: Boom(), bodyError: Boom())
        case .cancelled: _ = machine.cancel()
        case .queued, .waitingForConnection: break
        }
        #expect(machine.phase == phase)
        return machine
    }

    static let allPhases: [Machine.Phase] = [
        .queued, .waitingForConnection, .headWritten, .uploading(demand: true), .uploading(demand: false),
        .headReceived, .streaming, .finished, .failed, .cancelled,
    ]

    static func head(_ effects: Machine.Effects) -> HTTPResponseHead? {
        if case .success(let head)? = effects.caller { return head }
        return nil
    }

    static func callerError(_ effects: Machine.Effects) -> (any Error)? {
        if case .failure(let error)? = effects.caller { return error }
        return nil
    }

    static func chunk(_ read: Machine.Read) -> ArraySlice<UInt8>? {
        if case .chunk(let chunk) = read { return chunk }
        return nil
    }

    static func isEnd(_ read: Machine.Read) -> Bool {
        if case .end = read { return true }
        return false
    }

    static func isWait(_ read: Machine.Read) -> Bool {
        if case .wait = read { return true }
        return false
    }

    // MARK: The happy paths

    @Test func aBodilessRequestGoesFromTheQueueToFinished() {
        var machine = Machine(hasBody: false)
        #expect(machine.phase == .queued)
        #expect(machine.queued(waiter: .init(raw: 1)).abandonWaiter == nil)
        #expect(machine.leased().release == nil)
        #expect(machine.phase == .waitingForConnection)
        #expect(machine.start(resetsOnAbandon: false) == .write(upload: false))
        #expect(machine.phase == .headWritten)
        machine.receiveHead(Self.ok)
        #expect(machine.phase == .headReceived)
        #expect(machine.receiveBody([1, 2]).paused == false)
        let handedOver = machine.handOverHead()
        #expect(Self.head(handedOver)?.status == .ok)
        #expect(machine.phase == .streaming)
        #expect(machine.receiveEnd().caller == nil)
        #expect(machine.phase == .finished)
        #expect(machine.release(reusable: true).release == true)
        #expect(Self.chunk(machine.read().0) == [1, 2])
        #expect(Self.isEnd(machine.read().0))
    }

    @Test func aRequestWithABodyUploadsOnDemandAndAnswersItsCallerAfterTheUpload() {
        var machine = Machine(hasBody: true)
        _ = machine.leased()
        #expect(machine.start(resetsOnAbandon: false) == .write(upload: true))
        #expect(machine.phase == .uploading(demand: true))
        #expect(machine.awaitDemand() == .ready)
        #expect(machine.willWriteChunk() == true)
        #expect(machine.phase == .uploading(demand: false))
        #expect(machine.willWriteChunk() == false)  // one chunk in flight at a time
        #expect(machine.awaitDemand() == .wait)
        let written = machine.chunkWritten(true)
        #expect(written.uploader == true)
        #expect(machine.phase == .uploading(demand: true))
        // An early head waits for the upload.
        machine.receiveHead(Self.ok)
        #expect(machine.handOverHead().caller == nil)
        #expect(machine.phase == .headReceived)
        #expect(machine.uploadEnded() == true)
        #expect(!machine.isUploading)
        let end = machine.endWritten(true)
        #expect(end.requestSent)
        #expect(Self.head(end)?.status == .ok)
        #expect(machine.phase == .streaming)
        _ = machine.receiveEnd()
        #expect(machine.phase == .finished)
    }

    /// The caller gets a response that ended during the upload at once; the upload is given up once the caller
    /// has taken it, unless it ended first.
    @Test func aResponseThatEndsDuringTheUploadGivesTheUploadUpOnceTheCallerHasIt() {
        var machine = Self.machine(in: .uploading(demand: false))
        #expect(machine.awaitDemand() == .wait)
        machine.receiveHead(Self.ok)
        _ = machine.handOverHead()
        let end = machine.receiveEnd()
        #expect(!end.stopUpload)
        #expect(!end.requestFailed)
        #expect(Self.head(end)?.status == .ok)
        let taken = machine.callerTookResponse()
        #expect(taken.stopUpload)
        #expect(taken.uploader == false)
        #expect(taken.requestFailed)
        #expect(machine.phase == .finished)
        #expect(machine.uploadEnded() == false)
        #expect(machine.chunkWritten(true).uploader == nil)
    }

    @Test func anUploadThatEndsBeforeTheCallerTakesAnEarlyResponseEndsTheRequest() {
        var machine = Self.machine(in: .uploading(demand: true))
        machine.receiveHead(Self.ok)
        _ = machine.handOverHead()
        #expect(Self.head(machine.receiveEnd()) != nil)
        #expect(machine.uploadEnded() == true)
        #expect(machine.callerTookResponse().requestFailed == false)
        #expect(machine.endWritten(true).requestSent)
        #expect(machine.phase == .finished)
    }

    @Test func aResponseThatEndsWhileTheRequestsEndIsBeingWrittenLetsThatWriteDecide() {
        var machine = Self.machine(in: .uploading(demand: true))
        #expect(machine.uploadEnded() == true)
        machine.receiveHead(Self.ok)
        // The upload is over: the caller takes the head at once.
        #expect(Self.head(machine.handOverHead()) != nil)
        let end = machine.receiveEnd()
        #expect(!end.requestFailed)
        #expect(!end.stopUpload)
        #expect(machine.phase == .finished)
        #expect(machine.endWritten(true).requestSent)
    }

    @Test func aFailedChunkWriteStopsTheUploadAndTheCallerWaitsForTheConnectionsVerdict() {
        var machine = Self.machine(in: .uploading(demand: false))
        let failed = machine.chunkWritten(false)
        #expect(failed.requestFailed)
        #expect(failed.stopUpload)
        #expect(failed.caller == nil)
        let verdict = machine.fail(callerError: Boom(), bodyError: Boom())
        #expect(Self.callerError(verdict) is Boom)
        #expect(machine.phase == .failed)
    }

    @Test func aBodyThatFailsFailsTheCallerWithItsErrorAndAbandonsTheRequest() {
        var machine = Self.machine(in: .uploading(demand: true))
        let failed = machine.uploadFailed(Boom())
        #expect(Self.callerError(failed) is Boom)
        #expect(failed.cancelHandler)
        #expect(machine.phase == .failed)
        #expect(machine.uploadFailed(Boom()).caller == nil)
    }

    // MARK: Cancellation in every state

    @Test(arguments: allPhases)
    func cancellation(in phase: Machine.Phase) {
        var machine = Self.machine(in: phase)
        let effects = machine.cancel()
        switch phase {
        case .queued, .waitingForConnection:
            #expect(Self.callerError(effects) is CancellationError)
            #expect(!effects.cancelHandler)
            #expect(machine.phase == .cancelled)
        case .headWritten, .uploading, .headReceived:
            #expect(Self.callerError(effects) is CancellationError)
            #expect(effects.cancelHandler)
            if case .uploading = phase { #expect(effects.stopUpload) }
            #expect(machine.phase == .cancelled)
        case .streaming:
            #expect(effects.caller == nil)
            #expect(effects.cancelHandler)
            if case .error(let error) = machine.read().0 {
                #expect(error is CancellationError)
            } else {
                Issue.record("the body did not end with the cancellation")
            }
        case .finished, .failed, .cancelled:
            #expect(effects.caller == nil)
            #expect(!effects.cancelHandler)
            #expect(machine.phase == phase)
        }
        // Whatever the state, the lease still goes back, once.
        #expect(machine.release(reusable: false).release == false)
        #expect(machine.release(reusable: false).release == nil)
    }

    @Test func aWaiterCancelledBeforeThePoolNamedItIsGivenUpWhenItIsNamed() {
        var machine = Machine(hasBody: false)
        #expect(Self.callerError(machine.cancel()) is CancellationError)
        #expect(machine.queued(waiter: .init(raw: 7)).abandonWaiter == .init(raw: 7))
        // Served anyway: the lease goes back unused, reusable.
        #expect(machine.leased().release == true)
    }

    @Test func aQueuedWaiterIsGivenUpOnCancellation() {
        var machine = Machine(hasBody: false)
        _ = machine.queued(waiter: .init(raw: 3))
        #expect(machine.cancel().abandonWaiter == .init(raw: 3))
    }

    @Test func aRequestCancelledBeforeItStartsIsAbandonedOnItsConnection() {
        var machine = Self.machine(in: .waitingForConnection)
        _ = machine.cancel()
        #expect(machine.start(resetsOnAbandon: false) == .abandon)
    }

    // MARK: Failures in every state

    @Test(arguments: allPhases)
    func failure(in phase: Machine.Phase) {
        var machine = Self.machine(in: phase)
        switch phase {
        case .queued:
            #expect(Self.callerError(machine.leaseFailed(Boom())) is Boom)
            #expect(machine.phase == .failed)
        case .waitingForConnection:
            let failed = machine.startFailed(Boom())
            #expect(Self.callerError(failed) is Boom)
            #expect(failed.release == false)
            #expect(machine.phase == .failed)
        case .headWritten, .uploading:
            let failed = machine.fail(callerError: Boom(), bodyError: Boom())
            #expect(Self.callerError(failed) is Boom)
            if case .uploading = phase { #expect(failed.stopUpload) }
            #expect(machine.phase == .failed)
        case .headReceived:
            // The caller gets the head, then the body's error.
            let failed = machine.fail(callerError: CancellationError(), bodyError: Boom())
            #expect(Self.head(failed) != nil)
            if case .error(let error) = machine.read().0 { #expect(error is Boom) } else { Issue.record("no body error") }
        case .streaming:
            let failed = machine.fail(callerError: CancellationError(), bodyError: Boom())
            #expect(failed.caller == nil)
            if case .error(let error) = machine.read().0 { #expect(error is Boom) } else { Issue.record("no body error") }
            #expect(Self.isEnd(machine.read().0))
        case .finished, .failed, .cancelled:
            let failed = machine.fail(callerError: Boom(), bodyError: Boom())
            #expect(failed.caller == nil)
            #expect(failed.reader == nil)
            #expect(machine.phase == phase)
            #expect(machine.leaseFailed(Boom()).caller == nil)
        }
    }

    @Test func aLeaseFailureAfterTheRequestWasServedIsIgnored() {
        var machine = Self.machine(in: .waitingForConnection)
        #expect(machine.leaseFailed(Boom()).caller == nil)
        #expect(machine.phase == .waitingForConnection)
    }

    // MARK: The response body (moved with `BodyStream`'s buffer)

    @Test func deliversBufferedChunksInOrderThenTheEnd() {
        var machine = Self.machine(in: .streaming)
        _ = machine.receiveBody([1, 2])
        _ = machine.receiveBody([3])
        _ = machine.receiveEnd()
        _ = machine.receiveBody([9])  // after the end: dropped
        #expect(Self.chunk(machine.read().0) == [1, 2])
        #expect(Self.chunk(machine.read().0) == [3])
        #expect(Self.isEnd(machine.read().0))
        #expect(Self.isEnd(machine.read().0))
    }

    @Test func aWaitingReaderGetsTheNextChunk() {
        var machine = Self.machine(in: .streaming)
        #expect(Self.isWait(machine.read().0))
        #expect(Self.isWait(machine.readerWaits()))
        let yielded = machine.receiveBody([7])
        if case .success(let chunk)? = yielded.effects.reader { #expect(chunk == [7]) } else { Issue.record("not resumed") }
        _ = machine.receiveEnd()
        #expect(Self.isEnd(machine.read().0))
    }

    @Test func theErrorIsThrownOnceAfterTheBufferedChunks() {
        var machine = Self.machine(in: .streaming)
        _ = machine.receiveBody([1])
        _ = machine.fail(callerError: Boom(), bodyError: Boom())
        #expect(Self.chunk(machine.read().0) == [1])
        if case .error(let error) = machine.read().0 { #expect(error is Boom) } else { Issue.record("no error") }
        #expect(Self.isEnd(machine.read().0))
    }

    @Test func cancellingTheReaderEndsTheStreamAndReportsIt() {
        var machine = Self.machine(in: .streaming)
        var cancelled = 0
        #expect(Self.isWait(machine.readerWaits()))
        let effects = machine.readerCancelled()
        if case .success(let chunk)? = effects.reader { #expect(chunk == nil) } else { Issue.record("not resumed") }
        if effects.cancelHandler { cancelled += 1 }
        #expect(cancelled == 1)
        #expect(machine.bodyWasCancelled)
        _ = machine.receiveBody([1])
        _ = machine.receiveEnd()
        #expect(Self.isEnd(machine.read().0))
        if machine.readerCancelled().cancelHandler { cancelled += 1 }
        #expect(cancelled == 1)
    }

    @Test func aNormalEndIsNotReportedAsCancellation() {
        var machine = Self.machine(in: .streaming)
        _ = machine.receiveEnd()
        let effects = machine.readerCancelled()
        #expect(!effects.cancelHandler)
        #expect(!machine.bodyWasCancelled)
        #expect(Self.isEnd(machine.read().0))
    }

    @Test func theProducerPausesAboveTheHighWatermarkAndIsAskedToGoOnOnceDrained() {
        var machine = Self.machine(in: .streaming)
        var demanded = 0
        let chunk = ArraySlice([UInt8](repeating: 1, count: 40 * 1024))
        #expect(!machine.receiveBody(chunk).paused)
        #expect(machine.receiveBody(chunk).paused)  // 80 KiB unread: above the high watermark
        var (read, effects) = machine.read()
        #expect(Self.chunk(read)?.count == chunk.count)
        if effects.resumeReading { demanded += 1 }
        #expect(demanded == 0)  // 40 KiB unread: above the low watermark
        (read, effects) = machine.read()
        #expect(Self.chunk(read)?.count == chunk.count)
        if effects.resumeReading { demanded += 1 }
        #expect(demanded == 1)
        #expect(!machine.receiveBody(chunk).paused)
    }

    @Test func abandoningDiscardsTheRestAndUnpausesTheProducer() {
        var machine = Self.machine(in: .streaming)
        let chunk = ArraySlice([UInt8](repeating: 1, count: 80 * 1024))
        #expect(machine.receiveBody(chunk).paused)
        let effects = machine.abandon()
        #expect(effects.resumeReading)
        #expect(!effects.cancelHandler)  // HTTP/1.1: the rest is read and discarded, the connection kept
        #expect(!machine.receiveBody(chunk).paused)
        _ = machine.receiveEnd()
        #expect(Self.isEnd(machine.read().0))
    }

    @Test func anHTTP2BodyDroppedUnreadResetsItsStream() {
        var machine = Machine(hasBody: false)
        _ = machine.leased()
        _ = machine.start(resetsOnAbandon: true)
        machine.receiveHead(Self.ok)
        _ = machine.handOverHead()
        #expect(machine.abandon().cancelHandler)
        #expect(machine.phase == .cancelled)
    }
}
