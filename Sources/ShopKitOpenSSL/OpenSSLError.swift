import COpenSSL

/// An OpenSSL failure: the call that failed and the error queue drained at that moment.
package struct OpenSSLError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The OpenSSL function (or ShopKit step) that failed.
    package let operation: String
    /// The queued OpenSSL errors, oldest first, as `ERR_error_string_n` prints them.
    package let queue: [String]

    package init(operation: String, queue: [String]) {
        self.operation = operation
        self.queue = queue
    }

    /// Drains the calling thread's OpenSSL error queue into an error for `operation`.
    package static func drain(_ operation: String) -> OpenSSLError {
        OpenSSLError(operation: operation, queue: drainQueue())
    }

    /// Empties the calling thread's error queue, returning its entries oldest first.
    package static func drainQueue() -> [String] {
        var entries: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            entries.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return entries
    }

    /// Clears the error queue before a call whose failure will be drained; the first time, initialises OpenSSL
    /// (``OpenSSLLibrary``).
    package static func clearQueue() {
        OpenSSLLibrary.initialize()
        ERR_clear_error()
    }

    package var description: String {
        queue.isEmpty ? "\(operation) failed" : "\(operation) failed: " + queue.joined(separator: "; ")
    }
}
