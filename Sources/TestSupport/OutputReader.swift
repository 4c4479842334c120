import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child's output, read to its end on a thread of its own (blocking reads, never on the cooperative pool) into
/// text that tests wait on, each wait with a deadline.
package final class OutputReader: Sendable {
    /// What was read so far, and whether the output has ended (every writer closed it: the child exited).
    package struct Output: Sendable, CustomStringConvertible {
        package var text = ""
        package var ended = false
        package var description: String { text + (ended ? "[output ended]" : "") }
    }

    private let output = WaitableState(Output())

    /// Starts reading `fd`, which the reader owns from now on and closes at its end.
    package init(fd: Int32) {
        let output = self.output
        Thread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(fd, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                output.withLockedValue { $0.text += String(decoding: chunk[..<count], as: UTF8.self) }
            }
            close(fd)
            output.withLockedValue { $0.ended = true }
        }.start()
    }

    /// Everything read so far.
    package var text: String { output.withLockedValue { $0.text } }

    /// Whether the output has ended.
    package var ended: Bool { output.withLockedValue { $0.ended } }

    /// Returns once `predicate` holds for the text, or the output ended (check with `predicate` again when it
    /// matters which); throws ``WaitEnded``, with the text, past `timeout` or when the task is cancelled.
    package func wait(
        until predicate: @escaping @Sendable (String) -> Bool, for what: String, timeout: Duration = TestDeadline.wait
    ) async throws {
        try await output.wait(until: { predicate($0.text) || $0.ended }, for: what, timeout: timeout)
    }

    /// Returns the whole output once it ended; throws ``WaitEnded`` past `timeout` or when the task is cancelled.
    package func waitForEnd(_ what: String = "the output to end", timeout: Duration = TestDeadline.wait)
        async throws -> String
    {
        try await output.wait(until: { $0.ended }, for: what, timeout: timeout)
        return text
    }
}
