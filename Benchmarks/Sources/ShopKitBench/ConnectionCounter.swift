import Logging
import NIOConcurrencyHelpers

/// Counts the TLS connections a client opens in its process; each is one TLS handshake (full or resumed).
///
/// The HTTP/2 workloads record it beside the rate: over h2, 32 concurrent requests should share one
/// connection. ShopKit reports new connections in its debug log ("opening connection", once per connection
/// the pool opens); AsyncHTTPClient calls its connection debug initializers once per new connection.
final class ConnectionCounter: Sendable {
    private let count = NIOLockedValueBox(0)

    func increment() { count.withLockedValue { $0 += 1 } }

    var value: Int { count.withLockedValue { $0 } }

    /// A debug-level logger for `TLSClientConfiguration.logger` that counts ShopKit's "opening connection"
    /// messages and drops everything else (ShopKit logs only per connection, never per request, so this adds
    /// no per-request work).
    func shopKitLogger() -> Logger {
        var logger = Logger(label: "shopkit-bench.connections") { _ in CountingLogHandler(counter: self) }
        logger.logLevel = .debug
        return logger
    }
}

/// The log handler behind ``ConnectionCounter/shopKitLogger()``.
private struct CountingLogHandler: LogHandler {
    let counter: ConnectionCounter
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
        function: String, line: UInt
    ) {
        if message.description == "opening connection" { counter.increment() }
    }
}
