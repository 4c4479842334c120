import CProcessControl
import Foundation

/// Keeps a process that holds tokens and passphrases from leaving them in a core dump.
///
/// Why: a crash (or a SIGQUIT, SIGSEGV, SIGABRT) of a command-line tool that holds a token and a passphrase would
/// otherwise write its memory to a core file (or to a crash collector) that other tools and backups pick up.
///
/// Package access: for ShopKit's own command-line tools (`token-store`, `pin-check`); an app makes its own call.
package enum ProcessHardening {
    /// Why the process could not be hardened (the message says which call failed and the system's reason).
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Makes the process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, which also keeps other processes of the same
    /// user from reading its memory through `/proc` or ptrace) and sets its core-file limit to 0
    /// (`setrlimit(RLIMIT_CORE, 0)`). Call first thing in `main`.
    ///
    /// - Throws: ``Failure`` when either call fails (the process should not go on to handle secrets then).
    package static func disableCoreDumps() throws(Failure) {
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        guard setrlimit(Int32(RLIMIT_CORE.rawValue), &none) == 0 else {
            throw Failure(description: "cannot set the core-file limit to 0: \(String(cString: strerror(errno)))")
        }
        guard shopkit_prctl_set_dumpable(0) == 0 else {
            throw Failure(description: "cannot make the process non-dumpable: \(String(cString: strerror(errno)))")
        }
    }

    /// Opens `/dev/null` on each of the standard descriptors 0, 1 and 2 that is closed (0 for reading, 1 and 2 for
    /// writing). Call first thing in `main`, before anything opens a descriptor.
    ///
    /// Why: a process started with a standard descriptor closed (`2>&-`, `>&-`, a careless parent) hands that
    /// number to the next descriptor it opens (an eventfd of the runtime was seen on 2, and the token file or its
    /// lock could land on 1), and what is written to standard output or error then goes there.
    ///
    /// - Throws: ``Failure`` when `/dev/null` cannot be opened.
    package static func reopenClosedStandardDescriptors() throws(Failure) {
        for fd: Int32 in 0...2 {
            guard fcntl(fd, F_GETFD) == -1, errno == EBADF else { continue }
            let opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY)
            guard opened >= 0 else {
                throw Failure(description: "cannot open /dev/null for the closed descriptor \(fd): "
                    + String(cString: strerror(errno)))
            }
            // The lower descriptors are open, so `open` returned `fd` itself; move it there should it not have.
            if opened != fd {
                _ = dup2(opened, fd)
                close(opened)
            }
        }
    }

    /// The signals on which the Swift runtime's backtracer catches a crash on Linux (its `CrashHandlerLinux.cpp`,
    /// `signalsToHandle`).
    package static let backtracerSignals: [Int32] = [SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGTRAP]

    /// Turns the Swift runtime's crash backtracer off: puts every signal it catches back to its default action
    /// (unless ignored). Call first thing in `main`.
    ///
    /// Why: on a crash or a QUIT (`Ctrl-\`) the backtracer serves the process's memory to a helper process
    /// (`swift-backtrace`, past `PR_SET_DUMPABLE`), prints a backtrace and, on a terminal, offers an interactive
    /// debugger. A process that holds tokens and passphrases must offer none of that.
    ///
    /// How: the runtime reads `SWIFT_BACKTRACE` once, in a static initialiser of `libswiftCore` that runs before
    /// `main`, so setting the variable here is too late, and Linux has no link-time setting for it. The backtracer
    /// is reached only through the signal handlers that initialiser installed; with the default actions back, a
    /// crash ends the process as the kernel does it (and dumps no core: see ``disableCoreDumps()``).
    package static func disableBacktracer() {
        for signal in backtracerSignals {
            var current = sigaction()
            guard sigaction(signal, nil, &current) == 0 else { continue }
            // SIG_IGN is the handler value 1: a signal ignored by whoever started us stays ignored.
            if unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == 1 { continue }
            var standard = sigaction()
            standard.__sigaction_handler = .init(sa_handler: SIG_DFL)
            sigemptyset(&standard.sa_mask)
            _ = sigaction(signal, &standard, nil)
        }
    }

    /// Whether the process is dumpable (`prctl(PR_GET_DUMPABLE)`), for tests and diagnostics.
    package static var isDumpable: Bool { shopkit_prctl_get_dumpable() != 0 }
}
