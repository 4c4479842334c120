import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why a secret (a private key) could not be read from a file or a pipe; the message names the problem, never
/// the contents.
package enum SecretFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The path cannot be opened (the system's reason).
    case cannotOpen(String)
    /// The path opened is neither a regular file nor a pipe (a directory, a device, a socket).
    case notFileOrPipe(kind: String)
    /// Group or other users may read it (the mode, in octal): a private key must be the user's alone.
    case readableByOthers(mode: String)
    /// It holds more than `limit` bytes.
    case tooLarge(limit: Int)
    /// Reading failed (the system's reason).
    case cannotRead(String)

    package var description: String {
        switch self {
        case .cannotOpen(let reason): return "cannot open the file (\(reason)); check the path and permissions"
        case .notFileOrPipe(let kind): return "\(kind), not a file or a pipe"
        case .readableByOthers(let mode): return "mode \(mode) lets other users read it"
        case .tooLarge(let limit): return "larger than \(limit) bytes"
        case .cannotRead(let reason): return "cannot read it (\(reason))"
        }
    }
}

extension SecureBytes {
    /// The contents of the file at `path`, read straight into a wiped buffer (no `Data` copy is left behind).
    ///
    /// - Returns: nil when the file cannot be opened or read (``readSecret(_:limit:privateToUser:)``'s refusals),
    ///   or is larger than `limit` bytes.
    package static func contentsOfFile(_ path: String, limit: Int = 1 << 20) -> SecureBytes? {
        try? readSecret(path, limit: limit, privateToUser: false)
    }

    /// The secret at `path`, a regular file or a pipe (`/dev/stdin`, `<(gpg -d key.gpg)`, a named FIFO), read to
    /// its end into a wiped buffer.
    ///
    /// The checks are made on the descriptor read, never on the path before it is opened (a file swapped in
    /// between would be read unchecked): `open` (non-blocking, so that a FIFO without a writer or a device cannot
    /// hang the open), then `fstat` of that descriptor. A pipe's size is unknown until it is read, so a pipe is read
    /// until its writer closes it (an empty pipe gives no bytes; the caller says what that means).
    ///
    /// - Parameter privateToUser: refuse a file or a FIFO that group or other users may read (mode `& 077`).
    ///   An anonymous pipe (`pipe(2)`) has mode 0600.
    /// - Throws: ``SecretFileError``.
    package static func readSecret(_ path: String, limit: Int, privateToUser: Bool) throws(SecretFileError) -> SecureBytes {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else { throw .cannotOpen(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .cannotOpen(String(cString: strerror(errno))) }
        let type = status.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFIFO else { throw .notFileOrPipe(kind: kind(of: type)) }
        if privateToUser, status.st_mode & 0o077 != 0 {
            throw .readableByOthers(mode: String(status.st_mode & 0o777, radix: 8))
        }
        // Blocking reads from here: a pipe is read as its writer writes, to its end.
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
            throw .cannotRead(String(cString: strerror(errno)))
        }
        if type == S_IFREG, Int(status.st_size) > limit { throw .tooLarge(limit: limit) }
        // Read into a buffer one byte larger than expected (a file's size, or the limit for a pipe), so that more is
        // seen, then keep what was read in a buffer of its own size; both are wiped when released.
        let expected = type == S_IFREG ? Int(status.st_size) : limit
        var count = 0
        let whole = try SecureBytes(count: expected + 1) { (buffer) throws(SecretFileError) in
            while count < buffer.count {
                let got = Glibc.read(descriptor, buffer.baseAddress! + count, buffer.count - count)
                if got < 0 {
                    if errno == EINTR { continue }
                    throw .cannotRead(String(cString: strerror(errno)))
                }
                if got == 0 { break }
                count += got
            }
        }
        guard count <= limit else { throw .tooLarge(limit: limit) }
        guard count <= expected else { throw .cannotRead("the file grew while it was read; read it again") }
        return whole.withUnsafeBytes { bytes in SecureBytes(copying: bytes.prefix(count)) }
    }

    private static func kind(of type: mode_t) -> String {
        switch type {
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }
}
