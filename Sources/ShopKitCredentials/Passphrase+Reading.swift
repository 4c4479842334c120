import Foundation
import ShopKitOpenSSL

extension Passphrase {
    /// Reads a passphrase from the open file descriptor `fd` (for `--passphrase-fd N`): all of its input up to end
    /// of input, with at most one trailing line ending (`\n` or `\r\n`) removed, so a key file with newlines or
    /// other binary bytes is used whole. The descriptor is not closed.
    ///
    /// Runs the blocking read off the cooperative pool. Throws `.io` when nothing can be read, and
    /// ``CredentialError/passphraseRejected(_:)`` for more than `maximumLength` bytes (never cut).
    public static func read(fromFileDescriptor fd: Int32) async throws(CredentialError) -> Passphrase {
        try await TerminalIO.offPool { () throws(CredentialError) in
            try TerminalIO.withSecret(
                fd, limit: maximumLength, untilNewline: false,
                tooLong: .passphraseRejected(
                    "file descriptor \(fd) holds more than \(maximumLength) bytes; it is refused rather than cut "
                        + "(earlier versions used only the first \(maximumLength) bytes of its first line)"),
                empty: .io("no passphrase could be read from file descriptor \(fd) (end of input)")
            ) { (bytes) throws(CredentialError) in Passphrase(bytes: bytes) }
        }
    }

    /// Prompts on the controlling terminal (`/dev/tty`) and reads a passphrase without echo (one line, at most
    /// `maximumLength` bytes: a longer line is refused, never cut).
    ///
    /// Never reads standard input. Throws `.io` when there is no terminal (cron, CI, a service): use
    /// ``read(fromFileDescriptor:)`` there. The terminal is restored if a signal (Ctrl-C, Ctrl-Z, a hang-up)
    /// arrives while it waits.
    public static func prompt(_ prompt: String, terminalPath: String = "/dev/tty") async throws(CredentialError)
        -> Passphrase
    {
        try await TerminalIO.offPool { () throws(CredentialError) in
            try TerminalIO.withSilentTerminal(terminalPath, prompt: prompt) { (fd) throws(CredentialError) in
                try readTyped(fd)
            }
        }
    }

    /// Asks for the passphrase of a new token file twice on the controlling terminal, without echo, and returns
    /// it when both answers match and it is long enough (``minimumNewFileLength``).
    ///
    /// Throws ``CredentialError/passphraseRejected(_:)`` when it is too short or the answers differ, `.io` when
    /// there is no terminal.
    public static func promptNew(
        _ prompt: String, confirm: String = "Repeat the passphrase: ", terminalPath: String = "/dev/tty"
    ) async throws(CredentialError) -> Passphrase {
        try await TerminalIO.offPool { () throws(CredentialError) in
            let first = try TerminalIO.withSilentTerminal(terminalPath, prompt: prompt) { (fd) throws(CredentialError) in
                try readTyped(fd)
            }
            try first.checkForNewFile()
            let second = try TerminalIO.withSilentTerminal(terminalPath, prompt: confirm) {
                (fd) throws(CredentialError) in try readTyped(fd)
            }
            let same = first.withBytes { a in
                second.withBytes { b in SecureBytes(copying: a).constantTimeEquals(SecureBytes(copying: b)) }
            }
            guard same else { throw .passphraseRejected("the two passphrases differ; nothing was created, try again") }
            return first
        }
    }

    /// One line typed on the silent terminal `fd`.
    private static func readTyped(_ fd: Int32) throws(CredentialError) -> Passphrase {
        try TerminalIO.withSecret(
            fd, limit: maximumLength, untilNewline: true,
            tooLong: .passphraseRejected("the typed passphrase is longer than \(maximumLength) bytes"),
            empty: .io("no passphrase was entered")
        ) { (bytes) throws(CredentialError) in Passphrase(bytes: bytes) }
    }
}
