import Dispatch
import Foundation
import ShopKitOpenSSL

/// Proves presence by asking for a passphrase on the controlling terminal, without echo.
///
/// Design: the typed passphrase is checked either against a ``Passphrase`` the program already holds (typically
/// the token file's own passphrase, so the user types what they already know) or against a stored
/// ``PassphraseHash`` (scrypt), so a separate presence passphrase can be configured without keeping it in memory.
/// The terminal is opened directly (`/dev/tty` by default), never standard input, so piped input cannot answer
/// the prompt. Echo is turned off with termios and restored afterwards (and on INT, TERM, QUIT, HUP and TSTP,
/// which are then raised again), pending input is flushed first.
///
/// The blocking terminal read runs on a dedicated dispatch queue, never on the cooperative pool. It cannot be
/// cancelled: a prompt nobody answers keeps waiting.
///
/// - Warning: This proves that someone at the terminal knows the passphrase, not who they are; anything that can
///   write to the user's terminal can also answer it.
public struct TerminalPassphraseVerifier: PresenceVerifier {
    /// What the typed passphrase must match.
    public enum Check: Sendable {
        /// The same bytes as this passphrase (compared in constant time).
        case passphrase(Passphrase)
        /// A stored scrypt hash.
        case hash(PassphraseHash)
    }

    /// What the typed passphrase must match.
    package let check: Check
    /// The terminal device; `/dev/tty` is the controlling terminal.
    package let terminalPath: String
    /// How many tries before the read is denied.
    package let attempts: Int

    /// A verifier reading `terminalPath`, allowing `attempts` tries.
    public init(check: Check, terminalPath: String = "/dev/tty", attempts: Int = 3) {
        self.check = check
        self.terminalPath = terminalPath
        self.attempts = max(1, attempts)
    }

    /// Whether the terminal can be opened and is a terminal (false under cron, CI, systemd, or with no tty).
    public var canVerify: Bool { Self.terminalIsAvailable(terminalPath) }

    /// Whether `path` (by default the controlling terminal) can be opened and is a terminal, so a prompt can run.
    package static func terminalIsAvailable(_ path: String = "/dev/tty") -> Bool {
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return isatty(fd) == 1
    }

    /// Prompts (showing `reason`) and reads a passphrase without echo; throws `.accessDenied` after the last
    /// wrong try or when the terminal cannot be used.
    public func verifyPresence(reason: String) async throws(CredentialError) {
        try await TerminalIO.offPool { () throws(CredentialError) in try self.promptBlocking(reason) }
    }

    private func promptBlocking(_ reason: String) throws(CredentialError) {
        let ask = "Passphrase to confirm it is you: "
        do {
            try TerminalIO.withSilentTerminal(terminalPath, prompt: "ShopKit wants to \(reason).\n" + ask) {
                (fd) throws(CredentialError) in
                for attempt in 1...attempts {
                    let typed = try TerminalIO.withSecret(
                        fd, limit: Passphrase.maximumLength, untilNewline: true,
                        tooLong: .accessDenied("the typed passphrase is longer than \(Passphrase.maximumLength) bytes"),
                        empty: .accessDenied("no passphrase was entered")
                    ) { (bytes) throws(CredentialError) in Passphrase(bytes: bytes) }
                    if try matches(typed) { return }
                    if attempt < attempts { TerminalIO.writeAll(fd, "\nWrong passphrase, try again.\n" + ask) }
                }
                throw .accessDenied("the passphrase did not match after \(attempts) tries")
            }
        } catch {
            if error.code == .io { throw .accessDenied(error.reason ?? error.description) }
            throw error
        }
    }

    private func matches(_ typed: Passphrase) throws(CredentialError) -> Bool {
        switch check {
        case .passphrase(let expected):
            let a = expected.withBytes { SecureBytes(copying: $0) }
            let b = typed.withBytes { SecureBytes(copying: $0) }
            return a.constantTimeEquals(b)
        case .hash(let hash):
            return try hash.matchesBlocking(typed)
        }
    }
}
