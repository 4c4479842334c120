import Foundation
import Logging
import NIOConcurrencyHelpers

/// Log records kept by ``CapturingLogHandler``, shared by every copy of the handler.
package final class LogCapture: Sendable {
    package init() {}

    private let stored = NIOLockedValueBox<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])

    package func append(_ level: Logger.Level, _ message: String, _ metadata: Logger.Metadata) {
        stored.withLockedValue { $0.append((level, message, metadata)) }
    }

    /// Every record so far, oldest first.
    package var records: [(level: Logger.Level, message: String, metadata: Logger.Metadata)] { stored.withLockedValue { $0 } }

    /// A logger writing into this capture, at every level.
    package func logger(label: String = "test") -> Logger {
        Logger(label: label) { _ in CapturingLogHandler(capture: self) }
    }
}

/// A swift-log handler that keeps what is logged, for assertions.
package struct CapturingLogHandler: LogHandler {
    package let capture: LogCapture
    package var logLevel: Logger.Level = .trace
    package var metadata: Logger.Metadata = [:]

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        capture.append(event.level, event.message.description, metadata.merging(event.metadata ?? [:]) { $1 })
    }
}
