import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension SecureBytes {
    /// The contents of the file at `path`, read straight into a wiped buffer (no `Data` copy is left behind).
    ///
    /// - Returns: nil when the file cannot be opened or read, or is larger than `limit` bytes.
    package static func contentsOfFile(_ path: String, limit: Int = 1 << 20) -> SecureBytes? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size >= 0, Int(status.st_size) <= limit else { return nil }
        let size = Int(status.st_size)
        struct ReadFailed: Error {}
        return try? SecureBytes(count: size) { (buffer) throws(ReadFailed) in
            var offset = 0
            while offset < size {
                let count = read(descriptor, buffer.baseAddress! + offset, size - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw ReadFailed() }
                offset += count
            }
        }
    }
}
