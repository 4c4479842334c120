import Foundation

/// What every measured client offers the workloads: one GET, its body read to the end.
///
/// Each implementation is the client used the way its documentation says, with verification on and
/// trusting only the benchmark's throwaway root.
protocol BenchClient: Sendable {
    /// GETs `path` from the base URL and returns the number of body bytes read.
    ///
    /// With `closeConnection` the request carries `Connection: close`, so the server closes the connection
    /// after the response and the next request needs a new TLS connection (the "new connection per GET"
    /// workloads; the same header for every client keeps them comparable).
    func get(_ path: String, closeConnection: Bool) async throws -> Int
    /// Releases the client's connections and threads.
    func shutdown() async throws
    /// TLS connections opened so far (one handshake each), where the client counts them; nil otherwise.
    var connectionsOpened: Int? { get }
    /// The executor on the client's own event loop, for callers that want to run there; nil if it has none.
    var loopExecutor: (any TaskExecutor)? { get }
}

extension BenchClient {
    var connectionsOpened: Int? { nil }
    var loopExecutor: (any TaskExecutor)? { nil }
}

/// A benchmark run that cannot go ahead, with the reason to print.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
