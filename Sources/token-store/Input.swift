import ArgumentParser
import Foundation
import ShopKitAuth

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a blocking read on its own thread, so the cooperative pool never blocks.
enum OffPool {
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}

/// Reads bytes from `fd` up to the first newline or end of input; the caller zeroes the result.
private func readLine(fd: Int32) -> [UInt8]? {
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        let count = read(fd, &byte, 1)
        if count < 0 {
            if errno == EINTR { continue }
            zeroLine(&line)
            return nil
        }
        if count == 0 || byte == 0x0A { break }
        line.append(byte)
    }
    byte = 0
    if line.last == 0x0D { line.removeLast() }
    return line
}

@inline(never)
private func zeroLine(_ line: inout [UInt8]) {
    line.withUnsafeMutableBytes { raw in
        for index in raw.indices { raw.storeBytes(of: 0, toByteOffset: index, as: UInt8.self) }
    }
}

/// The token line of `set`.
enum StandardInput {
    /// One line from standard input: refuses an empty line and, from a pipe or file, more than one line.
    /// From a terminal it reads one line without echo.
    static func readOneLine() async throws -> String {
        let result: Result<String, ValidationError> = await OffPool.run {
            let interactive = isatty(STDIN_FILENO) == 1
            var saved = termios()
            if interactive, tcgetattr(STDIN_FILENO, &saved) == 0 {
                var silent = saved
                silent.c_lflag &= ~tcflag_t(ECHO)
                _ = tcsetattr(STDIN_FILENO, TCSANOW, &silent)  // echo off before the prompt shows
                FileHandle.standardError.write(Data("Token: ".utf8))
            }
            let read = readLine(fd: STDIN_FILENO)
            if interactive {
                _ = tcsetattr(STDIN_FILENO, TCSANOW, &saved)
                FileHandle.standardError.write(Data("\n".utf8))
            }
            guard var line = read else {
                return .failure(ValidationError("cannot read the token from standard input"))
            }
            defer { zeroLine(&line) }
            if !interactive {
                guard var rest = readLine(fd: STDIN_FILENO) else {
                    return .failure(ValidationError("cannot read the token from standard input"))
                }
                defer { zeroLine(&rest) }
                guard rest.isEmpty else {
                    return .failure(ValidationError("standard input holds more than one line; give the token on one line"))
                }
            }
            guard let text = String(validating: line, as: UTF8.self),
                !text.trimmingCharacters(in: .whitespaces).isEmpty
            else { return .failure(ValidationError("standard input holds no token (empty line or not UTF-8)")) }
            return .success(text)
        }
        return try result.get()
    }
}

/// The token file's passphrase: from `--passphrase-fd N`, or from the controlling terminal without echo
/// (both read by ShopKitAuth, off the cooperative pool).
enum PassphraseInput {
    static func read(fd: Int32?) async throws(CredentialError) -> Passphrase {
        if let fd { return try await Passphrase.read(fromFileDescriptor: fd) }
        do {
            return try await Passphrase.prompt("Passphrase for the token file: ")
        } catch .io(let why) {
            throw .io("\(why); no terminal to ask for the token file's passphrase: pass --passphrase-fd N")
        }
    }
}
