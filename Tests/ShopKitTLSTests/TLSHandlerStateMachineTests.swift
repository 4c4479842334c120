@testable import ShopKitTLS
import ShopKitInspector
import ShopKitHTTPS
import Testing

/// The handler's lifecycle rules, without sockets or OpenSSL: one action per event.
@Suite(.timeLimit(.minutes(3))) struct TLSHandlerStateMachineTests {
    typealias Machine = TLSHandlerStateMachine<String>

    @Test func writesBeforeTheHandshakeAreBufferedAndReleasedInOrder() {
        var machine = Machine()
        #expect(machine.start() == .startHandshake)
        #expect(machine.start() == .none)
        #expect(machine.write("a") == .buffered)
        #expect(machine.flush() == .deferUntilActive)
        #expect(machine.write("b") == .buffered)
        #expect(machine.handshakeSucceeded() == .encryptAndFlush(["a", "b"]))
        #expect(machine.write("c") == .encrypt)
        #expect(machine.flush() == .flush)
        #expect(machine.handshakeSucceeded() == .none)  // once
    }

    @Test func bufferedWritesWithoutFlushAreNotFlushed() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        #expect(machine.handshakeSucceeded() == .encrypt(["a"]))
    }

    @Test func failureFailsBufferedWritesOnceAndRejectsLaterOnes() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        #expect(machine.fail() == .fail(writes: ["a"]))
        #expect(machine.fail() == .none)
        #expect(machine.write("b") == .reject)
        #expect(machine.channelInactive() == .closed(failing: []))
    }

    @Test func hangUpDuringHandshakeIsReported() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        #expect(machine.channelInactive() == .handshakeInterrupted(failing: ["a"]))
    }

    @Test func ourOwnCloseDuringHandshakeIsNotReported() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.write("a")
        #expect(machine.close(all: true) == .close(failing: ["a"]))
        #expect(machine.channelInactive() == .closed(failing: []))
    }

    @Test func closeAfterHandshakeSendsCloseNotifyOnce() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.handshakeSucceeded()
        #expect(machine.close(all: true) == .sendCloseNotifyAndClose(failing: []))
        #expect(machine.close(all: true) == .close(failing: []))
        #expect(machine.write("late") == .reject)
        #expect(machine.channelInactive() == .closed(failing: []))
    }

    @Test func eofWithoutCloseNotifyIsUnclean() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.handshakeSucceeded()
        #expect(machine.channelInactive() == .uncleanShutdown(failing: []))

        var clean = Machine()
        _ = clean.start()
        _ = clean.handshakeSucceeded()
        clean.closeNotifyReceived()
        #expect(clean.channelInactive() == .closed(failing: []))
    }
}
