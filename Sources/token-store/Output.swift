import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Writes to standard output and standard error that report failure instead of trapping: a full disk, a closed
/// pipe (SIGPIPE is ignored, see ``Main``) or `> /dev/full` is ``Exit/Code/output``, never a crash while the
/// process holds a token and a passphrase.
enum Output {
    /// Writes `text` to standard output.
    static func standardOutput(_ text: String) throws(Exit) {
        try write(Array(text.utf8), to: STDOUT_FILENO, name: "standard output")
    }

    /// Writes `bytes` to standard output.
    static func standardOutput(_ bytes: [UInt8]) throws(Exit) {
        try write(bytes, to: STDOUT_FILENO, name: "standard output")
    }

    /// Writes `text` to standard error.
    static func standardError(_ text: String) throws(Exit) {
        try write(Array(text.utf8), to: STDERR_FILENO, name: "standard error")
    }

    /// Writes a diagnostic line (which backend is used) to standard error, as far as it can: one that cannot be
    /// written (standard error full or gone) never holds back the result, e.g. the token `get` prints.
    static func diagnostic(_ text: String) {
        try? standardError(text)
    }

    /// Writes all of `bytes` to `fd` with `write(2)`, retrying on EINTR and short writes.
    static func write(_ bytes: [UInt8], to fd: Int32, name: String) throws(Exit) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let why = written < 0 ? String(cString: strerror(errno)) : "nothing was written"
                throw Exit(.output, "cannot write to \(name): \(why)")
            }
            offset += written
        }
    }
}
