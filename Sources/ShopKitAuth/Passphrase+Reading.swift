import Dispatch
import Foundation
import ShopKitOpenSSL

extension Passphrase {
    /// Reads a passphrase from the open file descriptor `fd` (for `--passphrase-fd N`): the bytes up to the first
    /// newline (a trailing `\r` is dropped) or end of input, at most 4096 bytes. The descriptor is not closed.
    ///
    /// Runs the blocking read on a dispatch queue. Throws `.io` when nothing can be read.
    public static func read(fromFileDescriptor fd: Int32) async throws(CredentialError) -> Passphrase {
        try await TerminalIO.offPool { () throws(CredentialError) in
            guard let passphrase = TerminalIO.readLine(fd) else {
                throw .io("no passphrase could be read from file descriptor \(fd)")
            }
            return passphrase
        }
    }

    /// Prompts on the controlling terminal (`/dev/tty`) and reads a passphrase without echo.
    ///
    /// Never reads standard input. Throws `.io` when there is no terminal (cron, CI, a service): use
    /// ``read(fromFileDescriptor:)`` there.
    public static func prompt(_ prompt: String, terminalPath: String = "/dev/tty") async throws(CredentialError)
        -> Passphrase
    {
        try await TerminalIO.offPool { () throws(CredentialError) in
            try TerminalIO.withSilentTerminal(terminalPath) { (fd) throws(CredentialError) in
                TerminalIO.writeAll(fd, prompt)
                defer { TerminalIO.writeAll(fd, "\n") }
                guard let passphrase = TerminalIO.readLine(fd) else { throw .io("no passphrase was entered") }
                return passphrase
            }
        }
    }
}

/// Terminal and descriptor I/O for passphrases. Everything here blocks: call it through ``offPool(_:)``.
enum TerminalIO {
    /// Runs `body` on a fresh dispatch queue, off the cooperative pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws(CredentialError) -> T)
        async throws(CredentialError) -> T
    {
        let result: Result<T, CredentialError> = await withCheckedContinuation { continuation in
            DispatchQueue(label: "ShopKitAuth.TerminalIO").async {
                continuation.resume(returning: Result { () throws(CredentialError) in try body() })
            }
        }
        return try result.get()
    }

    /// Opens `path` as a terminal with echo off (pending input flushed), runs `body`, restores the settings.
    static func withSilentTerminal<T>(_ path: String, _ body: (Int32) throws(CredentialError) -> T)
        throws(CredentialError) -> T
    {
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open the terminal \(path)") }
        defer { close(fd) }
        guard isatty(fd) == 1 else { throw .io("\(path) is not a terminal") }
        var original = termios()
        guard tcgetattr(fd, &original) == 0 else { throw .io("cannot read the settings of \(path)") }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        guard tcsetattr(fd, TCSAFLUSH, &silent) == 0 else { throw .io("cannot turn echo off on \(path)") }
        defer { _ = tcsetattr(fd, TCSAFLUSH, &original) }
        return try body(fd)
    }

    /// Reads one line (without its line ending) into wiped memory; `nil` at end of input with nothing read.
    static func readLine(_ fd: Int32) -> Passphrase? {
        let capacity = 4096
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        defer {
            SecureBytes.wipe(buffer)
            buffer.deallocate()
        }
        var count = 0
        var sawAnything = false
        var byte: UInt8 = 0
        defer { byte = 0 }
        while true {
            let got = read(fd, &byte, 1)
            if got < 0 && errno == EINTR { continue }
            if got <= 0 { break }
            sawAnything = true
            if byte == UInt8(ascii: "\n") { break }
            if count < capacity {
                buffer[count] = byte
                count += 1
            }
        }
        guard sawAnything else { return nil }
        if count > 0 && buffer[count - 1] == UInt8(ascii: "\r") { count -= 1 }
        return Passphrase(bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
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
