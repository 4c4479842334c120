import Dispatch
import Foundation
import ShopKitOpenSSL

/// Terminal and descriptor I/O for secrets (passphrases, tokens). Everything here blocks: call it through
/// ``offPool(_:)``.
enum TerminalIO {
    /// Runs `body` on a fresh dispatch queue, off the cooperative pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws(CredentialError) -> T)
        async throws(CredentialError) -> T
    {
        let result: Result<T, CredentialError> = await withCheckedContinuation { continuation in
            DispatchQueue(label: "ShopKitCredentials.TerminalIO").async {
                continuation.resume(returning: Result { () throws(CredentialError) in try body() })
            }
        }
        return try result.get()
    }

    /// Opens `path` as a terminal with echo off (pending input flushed), shows `prompt`, runs `body`, restores the
    /// settings: on return, and on INT, TERM, QUIT, HUP and TSTP (``TerminalSignals``).
    static func withSilentTerminal<T>(
        _ path: String, prompt: String, _ body: (Int32) throws(CredentialError) -> T
    ) throws(CredentialError) -> T {
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open the terminal \(path)") }
        defer { close(fd) }
        guard isatty(fd) == 1 else { throw .io("\(path) is not a terminal") }
        return try withSilentTerminal(fd: fd, prompt: prompt, body)
    }

    /// Turns echo off on the open terminal `fd` (pending input flushed), shows `prompt`, runs `body`, and restores
    /// the settings on return and on INT, TERM, QUIT, HUP and TSTP (which are then raised again, as
    /// `readpassphrase(3)` does; after a stop and `fg`, echo goes off again and the prompt is shown again).
    static func withSilentTerminal<T>(fd: Int32, prompt: String, _ body: (Int32) throws(CredentialError) -> T)
        throws(CredentialError) -> T
    {
        var original = termios()
        guard tcgetattr(fd, &original) == 0 else { throw .io("cannot read the terminal's settings") }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        return try TerminalSignals.guarding(fd: fd, original: original, silent: silent, prompt: prompt) {
            () throws(CredentialError) -> T in
            // The handlers are in place before echo goes off, so no signal can leave it off.
            guard tcsetattr(fd, TCSAFLUSH, &silent) == 0 else { throw .io("cannot turn echo off on the terminal") }
            defer { _ = tcsetattr(fd, TCSAFLUSH, &original) }
            writeAll(fd, prompt)
            defer { writeAll(fd, "\n") }
            return try body(fd)
        }
    }

    /// What ``readBounded(_:into:untilNewline:)`` found.
    enum BoundedRead: Equatable {
        /// This many bytes (a line ending included); 0 at once-only end of input.
        case bytes(Int)
        /// More input than the buffer holds; nothing was cut, the read was refused.
        case tooLong
        /// `read(2)` failed with this errno.
        case failed(Int32)
    }

    /// The largest block one `read(2)` asks for.
    static let blockSize = 64 * 1024

    /// Reads `fd` into `buffer` in blocks: to end of input, or with `untilNewline` through the first newline (a
    /// terminal in canonical mode returns at most one line per read). Never reads more than `buffer.count` bytes
    /// plus one to tell that there is more. Retries on EINTR.
    static func readBounded(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, untilNewline: Bool)
        -> BoundedRead
    {
        var count = 0
        while true {
            if count == buffer.count {
                if untilNewline, count > 0, buffer[count - 1] == 0x0A { return .bytes(count) }
                var probe: UInt8 = 0
                defer { probe = 0 }
                while true {
                    let got = read(fd, &probe, 1)
                    if got < 0 && errno == EINTR { continue }
                    if got < 0 { return .failed(errno) }
                    return got == 0 ? .bytes(count) : .tooLong
                }
            }
            let want = min(blockSize, buffer.count - count)
            let got = read(fd, buffer.baseAddress! + count, want)
            if got < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            if got == 0 { return .bytes(count) }
            let start = count
            count += got
            if untilNewline, buffer[start..<count].contains(0x0A) { return .bytes(count) }
        }
    }

    /// The length of `bytes` without one trailing line ending (`\n` or `\r\n`).
    static func lengthWithoutLineEnding(_ bytes: UnsafeRawBufferPointer) -> Int {
        var count = bytes.count
        if count > 0, bytes[count - 1] == 0x0A {
            count -= 1
            if count > 0, bytes[count - 1] == 0x0D { count -= 1 }
        }
        return count
    }

    /// Reads a secret of at most `limit` bytes (after one trailing line ending is removed) into wiped memory and
    /// passes it to `body`: a line from a terminal, or all of a descriptor's input. Refuses longer input with
    /// `tooLong`'s error rather than cutting it; throws `empty` when the input ended before any byte (with `nil`,
    /// `body` gets no bytes).
    static func withSecret<T>(
        _ fd: Int32, limit: Int, untilNewline: Bool, tooLong: CredentialError, empty: CredentialError?,
        _ body: (UnsafeRawBufferPointer) throws(CredentialError) -> T
    ) throws(CredentialError) -> T {
        // Room for the limit and a `\r\n`; untouched pages of a large buffer are never mapped in.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit + 2, alignment: 1)
        var used = 0
        defer {
            SecureBytes.wipe(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<used]))
            buffer.deallocate()
        }
        switch readBounded(fd, into: buffer, untilNewline: untilNewline) {
        case .failed(let code): throw .io("cannot read: \(String(cString: strerror(code)))")
        case .tooLong:
            used = buffer.count
            throw tooLong
        case .bytes(let count):
            used = count
            if count == 0, let empty { throw empty }
            let secret = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            let length = lengthWithoutLineEnding(secret)
            guard length <= limit else { throw tooLong }
            return try body(UnsafeRawBufferPointer(rebasing: secret[0..<length]))
        }
    }

    /// Writes all of `text`, giving up silently on a closed terminal.
    static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
