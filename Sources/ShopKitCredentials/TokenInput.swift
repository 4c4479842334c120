import Foundation

/// Reads a token to store from a descriptor (standard input for `token-store set`): in blocks, bounded by the
/// token file's size limit, into memory that is wiped afterwards.
///
/// Why bounded: a token larger than the store's format allows could never be stored, so reading more only costs
/// time and memory (reading byte by byte without a bound took seconds for a 17 MiB input before failing).
package enum TokenInput {
    /// The largest token input: the token file format's limit (16 MiB).
    package static let maximumSize = TokenFile.maximumSize

    /// Reads the token from `fd` and passes its bytes to `body`, without one trailing line ending; the bytes are
    /// wiped when `body` returns and must not escape it.
    ///
    /// From a terminal it shows `prompt` with echo off and reads one line (restoring the terminal on INT, TERM,
    /// QUIT, HUP and TSTP); otherwise it reads all input to its end, in 64 KiB blocks. Empty input gives `body`
    /// no bytes. Runs off the cooperative pool.
    ///
    /// - Throws: ``CredentialError/tooLarge(_:)`` as soon as the input exceeds ``maximumSize`` (nothing is cut),
    ///   `.io` when the descriptor cannot be read.
    package static func read<T: Sendable>(
        fromFileDescriptor fd: Int32, prompt: String = "Token: ",
        _ body: @escaping @Sendable (UnsafeRawBufferPointer) -> T
    ) async throws(CredentialError) -> T {
        try await TerminalIO.offPool { () throws(CredentialError) -> T in
            let tooLarge = CredentialError.tooLarge(
                "the token input is larger than the token store's limit of \(maximumSize / (1024 * 1024)) MiB; "
                    + "nothing was read past it or stored")
            let read = { (terminal: Bool) throws(CredentialError) -> T in
                try TerminalIO.withSecret(
                    fd, limit: maximumSize, untilNewline: terminal, tooLong: tooLarge, empty: nil
                ) { (bytes) throws(CredentialError) in body(bytes) }
            }
            guard isatty(fd) == 1 else { return try read(false) }
            return try TerminalIO.withSilentTerminal(fd: fd, prompt: prompt) { (_) throws(CredentialError) in
                try read(true)
            }
        }
    }
}
