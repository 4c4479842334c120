import Foundation
import NIOConcurrencyHelpers

/// Restores a terminal whose echo a prompt turned off when a signal would stop or end the process, the way
/// `readpassphrase(3)` does: otherwise Ctrl-C (or a `kill`, a hang-up, Ctrl-Z) at a passphrase prompt leaves the
/// user's shell with echo off.
///
/// While a prompt runs, INT, TERM, QUIT, HUP and TSTP are caught (unless they were ignored, which is kept). The
/// handler restores the terminal's settings, puts the earlier disposition back and raises the signal again, so
/// the process ends (or stops) exactly as it would have. When it comes back (after `fg`, or an earlier handler
/// that returned), the handler catches the signal again, turns echo off again and shows the prompt again.
///
/// QUIT (`Ctrl-\`) is the exception: after restoring the terminal the process exits at once with status 131
/// (128 + SIGQUIT, what a shell reports for a death by QUIT). Raised again, QUIT would dump core or, where the
/// Swift runtime's backtracer is on (its default), print a backtrace and offer a debugger, then carry on and ask
/// again: a process holding secrets offers neither.
///
/// The handler only calls async-signal-safe functions (`tcsetattr`, `sigaction`, `pthread_sigmask`, `raise`,
/// `write`, `_exit`) on memory allocated before it is installed. One prompt runs at a time in a process
/// (``lock``).
enum TerminalSignals {
    /// The signals that restore the terminal.
    static let handled: [Int32] = [SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGTSTP]

    /// What the handler needs, filled in before any handler is installed.
    struct State {
        var fd: Int32 = -1
        var original = termios()
        var silent = termios()
        var ours = sigaction()
        var prompt: UnsafeMutableRawBufferPointer?
    }

    /// One prompt at a time: the handler's state is process-wide, like the signal dispositions.
    private static let lock = NIOLock()

    /// Runs `body` with the handlers installed; restores the earlier dispositions afterwards.
    static func guarding<T>(
        fd: Int32, original: termios, silent: termios, prompt: String, _ body: () throws(CredentialError) -> T
    ) throws(CredentialError) -> T {
        lock.lock()  // NIOLock's `withLock` does not keep the typed throw
        defer { lock.unlock() }
        let state = terminalSignalState  // initialised here, never for the first time inside the handler
        let previous = previousSignalActions
        let promptBytes = Array(prompt.utf8)
        let promptBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(promptBytes.count, 1), alignment: 1)
        promptBuffer.copyBytes(from: promptBytes)
        defer { promptBuffer.deallocate() }  // runs after the dispositions are restored (defers run in reverse)

        var ours = sigaction()
        ours.__sigaction_handler = .init(sa_handler: terminalSignalHandler)
        ours.sa_flags = 0  // no SA_RESTART: a read on the handling thread returns EINTR and is retried
        sigemptyset(&ours.sa_mask)
        for signal in handled { sigaddset(&ours.sa_mask, signal) }
        state.pointee = State(
            fd: fd, original: original, silent: silent, ours: ours,
            prompt: UnsafeMutableRawBufferPointer(rebasing: promptBuffer[0..<promptBytes.count]))

        var installed: [Int32] = []
        installed.reserveCapacity(handled.count)
        defer {
            for signal in installed { _ = sigaction(signal, previous + Int(signal), nil) }
        }
        for signal in handled {
            var old = sigaction()
            guard sigaction(signal, nil, &old) == 0, !isIgnored(old) else { continue }
            (previous + Int(signal)).pointee = old
            installed.append(signal)
            _ = sigaction(signal, &state.pointee.ours, nil)
        }
        return try body()
    }

    /// Whether `action` ignores its signal (`SIG_IGN` is the handler value 1).
    private static func isIgnored(_ action: sigaction) -> Bool {
        unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) == 1
    }
}

// Safe to share: written only by `TerminalSignals.guarding` while it holds its lock and before it installs the
// handler that reads it; the handler runs only while that call is in progress.
private nonisolated(unsafe) let terminalSignalState: UnsafeMutablePointer<TerminalSignals.State> = {
    let state = UnsafeMutablePointer<TerminalSignals.State>.allocate(capacity: 1)
    state.initialize(to: TerminalSignals.State())
    return state
}()

// Safe to share: the same discipline as `terminalSignalState`; indexed by signal number (Linux has 64).
private nonisolated(unsafe) let previousSignalActions: UnsafeMutablePointer<sigaction> = {
    let actions = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
    actions.initialize(repeating: sigaction(), count: 65)
    return actions
}()

/// Restores the terminal, exits with 131 on QUIT, raises any other `signal` again under its earlier
/// disposition, and, if the process is still
/// here afterwards (continued after a stop, or an earlier handler returned), silences the terminal again and
/// shows the prompt again. Async-signal-safe calls only.
private func terminalSignalHandler(_ signal: Int32) {
    let savedErrno = errno
    defer { errno = savedErrno }
    let state = terminalSignalState
    let previous = previousSignalActions
    _ = tcsetattr(state.pointee.fd, TCSAFLUSH, &state.pointee.original)
    if signal == SIGQUIT { _exit(128 + SIGQUIT) }  // no core, no backtracer, no second prompt
    _ = sigaction(signal, previous + Int(signal), nil)
    var unblock = sigset_t()
    sigemptyset(&unblock)
    sigaddset(&unblock, signal)
    _ = pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    _ = raise(signal)
    // Still running: continued after a stop, or an earlier handler returned. Prompt again, silently.
    _ = sigaction(signal, &state.pointee.ours, nil)
    _ = tcsetattr(state.pointee.fd, TCSAFLUSH, &state.pointee.silent)
    if let prompt = state.pointee.prompt, let base = prompt.baseAddress {
        _ = write(state.pointee.fd, base, prompt.count)
    }
}
