@testable import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import Testing

/// The handler's lifecycle rules, without sockets or OpenSSL.
@Suite struct TLSHandlerStateMachineTests {
    typealias Machine = TLSHandlerStateMachine<String>

    @Test func writesBeforeTheHandshakeAreBufferedAndReleasedInOrder() {
        var machine = Machine()
        let r1 = machine.start()
        #expect(r1)
        let r2 = machine.start()
        #expect(!r2)
        let r3 = machine.write("a")
        #expect(r3 == .buffered)
        let r4 = machine.flush()
        #expect(!r4)
        let r5 = machine.write("b")
        #expect(r5 == .buffered)
        let released = machine.handshakeSucceeded()
        #expect(released.writes == ["a", "b"])
        #expect(released.flush)
        let r6 = machine.write("c")
        #expect(r6 == .encrypt)
        let r7 = machine.flush()
        #expect(r7)
    }

    @Test func bufferedWritesWithoutFlushAreNotFlushed() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        let r8 = machine.handshakeSucceeded()
        #expect(r8.flush == false)
    }

    @Test func failureFailsBufferedWritesOnceAndRejectsLaterOnes() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        let r9 = machine.fail()
        #expect(r9 == ["a"])
        let r10 = machine.fail()
        #expect(r10 == nil)
        let r11 = machine.write("b")
        #expect(r11 == .reject)
        let r12 = machine.channelInactive()
        #expect(r12.report == .none)
    }

    @Test func hangUpDuringHandshakeIsReported() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        let inactive = machine.channelInactive()
        #expect(inactive.report == .handshakeInterrupted)
        #expect(inactive.writesToFail == ["a"])
    }

    @Test func ourOwnCloseDuringHandshakeIsNotReported() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        let close = machine.close(all: true)
        #expect(!close.sendCloseNotify)
        #expect(close.writesToFail == ["a"])
        let r13 = machine.channelInactive()
        #expect(r13.report == .none)
    }

    @Test func closeAfterHandshakeSendsCloseNotifyOnce() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.handshakeSucceeded()
        let r14 = machine.close(all: true)
        #expect(r14.sendCloseNotify)
        let r15 = machine.close(all: true)
        #expect(!r15.sendCloseNotify)
        let r16 = machine.write("late")
        #expect(r16 == .reject)
        let r17 = machine.channelInactive()
        #expect(r17.report == .none)
    }

    @Test func eofWithoutCloseNotifyIsUnclean() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.handshakeSucceeded()
        let r18 = machine.channelInactive()
        #expect(r18.report == .uncleanShutdown)

        var clean = Machine()
        _ = clean.start()
        _ = clean.handshakeSucceeded()
        clean.closeNotifyReceived()
        let r19 = clean.channelInactive()
        #expect(r19.report == .none)
    }
}
