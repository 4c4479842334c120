import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import OpenAPIRuntime
import ShopKitPinning

/// Sends pin failure reports as TrustKit JSON (`TrustKitReport`) to one or more report URIs, in the background.
///
/// Set it as `TLSClientConfiguration.pinFailureReporter`. Every mismatch is reported: enforced ones (the
/// connection was refused), report-only and expired sets. So is every chain that is not Certificate Transparency
/// compliant (report-only or enforced), as an RFC 9163 report (`CTComplianceReport`) to the same URIs.
///
/// - ``report(_:)-(PinFailureReport)`` never waits: it checks for a duplicate and enqueues, so the connection that failed is
///   neither delayed nor changed by reporting.
/// - A report equal to one accepted within ``Configuration/deduplicationInterval`` (24 hours by default) in
///   every field but the date is dropped, as TrustKit does.
/// - The queue holds at most ``Configuration/queueCapacity`` reports; when the collector is slow or down, more
///   reports are dropped and counted (``Statistics/dropped``), never buffered without bound.
/// - Reports go through the `transport` given, an ``HTTPSTransport``, so a report URI can itself be pinned.
///   A report about a report URI's own host and port is not sent to that URI (it would fail the same way);
///   together with deduplication this ends any report-about-a-report loop.
/// - Several reporters at once (this one and a log, two collectors with different transports): give
///   ``CompositePinFailureReporter`` as the configuration's reporter.
///
/// ## Before the process exits
///
/// Reports are sent on a task of the reporter's own. Call ``shutdown(timeout:)`` before the process exits
/// (`await reporter.shutdown()`): it stops accepting reports and waits, at most `timeout` (10 s by default),
/// for the queued ones to be sent, then returns how many were not. A reporter released with reports still queued
/// keeps sending them while the process runs, and logs a warning naming how many are waiting: they are lost if
/// the process exits first.
///
/// - Warning: A report holds public data only (host, port, certificates, pins), never a request or a token.
public final class HTTPPinFailureReporter: PinFailureReporter {
    /// Where reports go, who sends them and how many may wait.
    public struct Configuration: Sendable {
        /// The collectors, each `https` (the transport refuses anything else); each report is POSTed to each.
        public var reportURIs: [URL]
        /// The `app-*` fields of every report.
        public var app: PinFailureReportApp
        /// The most reports waiting to be sent (default 64); more are dropped and counted.
        public var queueCapacity: Int
        /// How long an identical report is suppressed (default 24 hours, as TrustKit).
        public var deduplicationInterval: Duration
        /// Where the reporter says that reports were not sent: a release with reports still queued, a
        /// ``HTTPPinFailureReporter/shutdown(timeout:)`` that ran out of time (warnings). Never a report's content.
        public var logger: Logger

        /// A configuration; `reportURIs` must not be empty.
        public init(
            reportURIs: [URL], app: PinFailureReportApp, queueCapacity: Int = 64,
            deduplicationInterval: Duration = .seconds(24 * 3600),
            logger: Logger = Logger(label: "ShopKitHTTPS.HTTPPinFailureReporter")
        ) {
            self.reportURIs = reportURIs
            self.app = app
            self.queueCapacity = max(1, queueCapacity)
            self.deduplicationInterval = deduplicationInterval
            self.logger = logger
        }
    }

    /// What the reporter did so far.
    public struct Statistics: Sendable, Hashable {
        /// Reports queued for sending.
        public var accepted = 0
        /// Reports dropped as duplicates of one accepted within the deduplication interval.
        public var deduplicated = 0
        /// Reports dropped because the queue was full (the collector is slow or down).
        public var dropped = 0
        /// POSTs answered with a 2xx status.
        public var delivered = 0
        /// POSTs that failed (no connection, TLS failure, timeout, or a non-2xx status).
        public var failed = 0
    }

    private struct State {
        var statistics = Statistics()
        /// When each recent report (by ``TrustKitReport/deduplicationKey``) was accepted.
        var recent: [QueuedReport: Date] = [:]
        /// Reports accepted and not yet finished.
        var pending = 0
        /// Who waits for `pending` to reach 0, by id (a cancelled wait removes its own).
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID = 0
    }

    /// The most distinct recent reports remembered for deduplication.
    static let recentCapacity = 1_024

    private let configuration: Configuration
    private let now: @Sendable () -> Date
    private let state = NIOLockedValueBox(State())
    private let queue: AsyncStream<QueuedReport>.Continuation
    private let worker: Task<Void, Never>

    /// A reporter sending through `transport`.
    ///
    /// - Parameters:
    ///   - configuration: where the reports go, the app they describe, the queue's capacity and how long an
    ///     identical report is suppressed.
    ///   - transport: the HTTPS transport for the reports. Give it its own `TLSClientConfiguration` (with pins
    ///     for the report URIs if they should be pinned).
    /// - Throws: ``HTTPPinFailureReporterError`` when there is no report URI or one is not `https` with a host.
    public convenience init(configuration: Configuration, transport: any ClientTransport)
        throws(HTTPPinFailureReporterError)
    {
        try self.init(configuration: configuration, transport: transport, now: { Date() })
    }

    /// The same with the deduplication clock injected (tests).
    package init(
        configuration: Configuration, transport: any ClientTransport, now: @escaping @Sendable () -> Date
    ) throws(HTTPPinFailureReporterError) {
        guard !configuration.reportURIs.isEmpty else { throw .noReportURI }
        for uri in configuration.reportURIs where uri.scheme?.lowercased() != "https" || (uri.host ?? "").isEmpty {
            throw .invalidReportURI(uri.absoluteString)
        }
        self.configuration = configuration
        self.now = now
        let (stream, queue) = AsyncStream.makeStream(
            of: QueuedReport.self, bufferingPolicy: .bufferingOldest(configuration.queueCapacity))
        self.queue = queue
        let state = self.state
        let uris = configuration.reportURIs
        worker = Task {
            for await report in stream {
                let body = report.body
                for uri in uris where !Self.isOwnEndpoint(uri, host: report.hostname, port: report.port) {
                    let delivered = await Self.post(body, to: uri, transport: transport)
                    state.withLockedValue { delivered ? ($0.statistics.delivered += 1) : ($0.statistics.failed += 1) }
                }
                Self.finishOne(state)
            }
        }
    }

    /// Stops accepting reports. The queued ones are still sent by the reporter's task while the process runs;
    /// when there are any, a warning says how many, since they are lost if the process exits first.
    deinit {
        queue.finish()
        let waiting = state.withLockedValue { $0.pending }
        if waiting > 0 {
            configuration.logger.warning(
                """
                pin failure reporter released with reports not yet sent: they are sent while the process runs and \
                lost if it exits first; await shutdown() before exiting
                """,
                metadata: ["waiting": "\(waiting)"])
        }
    }

    /// Queues `report` unless it is a recent duplicate or the queue is full; returns at once.
    public func report(_ report: PinFailureReport) {
        enqueue(.pin(TrustKitReport(report, app: configuration.app)))
    }

    /// Queues a Certificate Transparency report (RFC 9163's format) as the pin-report `report(_:)` does:
    /// deduplicated in every field but the date, dropped and counted when the queue is full; returns at once.
    public func report(_ report: CTComplianceReport) {
        enqueue(.certificateTransparency(report))
    }

    private func enqueue(_ queued: QueuedReport) {
        let key = queued.deduplicationKey
        let now = now()
        let interval = TimeInterval(configuration.deduplicationInterval.components.seconds)
        let isNew = state.withLockedValue { state -> Bool in
            if let last = state.recent[key], now.timeIntervalSince(last) < interval {
                state.statistics.deduplicated += 1
                return false
            }
            Self.remember(key, at: now, interval: interval, in: &state)
            state.pending += 1
            state.statistics.accepted += 1  // counted before the worker can finish it; undone if dropped
            return true
        }
        guard isNew else { return }
        if case .enqueued = queue.yield(queued) { return }
        // Full (or shut down): dropped and counted, never waited for.
        let waiters = state.withLockedValue { state in
            state.statistics.accepted -= 1
            state.statistics.dropped += 1
            state.recent[key] = nil  // not sent: a later identical report may go
            return Self.finishLocked(&state)
        }
        waiters.forEach { $0.resume() }
    }

    /// The counters so far.
    public var statistics: Statistics { state.withLockedValue { $0.statistics } }

    /// Returns once every report accepted so far has been sent (or failed to be), or when the task is cancelled.
    package func waitUntilIdle() async {
        let id = state.withLockedValue { state -> Int in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let idle = state.withLockedValue { state -> Bool in
                    guard state.pending > 0 else { return true }
                    state.idleWaiters[id] = continuation
                    return false
                }
                if idle { continuation.resume() } else if Task.isCancelled { Self.endWait(id, state) }
            }
        } onCancel: {
            Self.endWait(id, state)
        }
    }

    /// Resumes the wait `id` if it is still waiting (whoever removes it resumes it: exactly once).
    private static func endWait(_ id: Int, _ state: NIOLockedValueBox<State>) {
        state.withLockedValue { $0.idleWaiters.removeValue(forKey: id) }?.resume()
    }

    /// Stops accepting reports and waits, at most `timeout`, for the queued ones to be sent (or to fail).
    ///
    /// Call it before the process exits: reports still queued then are lost. Past `timeout`, the sending is
    /// cancelled and a warning is logged with the number not sent. Later ``report(_:)-(PinFailureReport)`` calls are dropped and
    /// counted (``Statistics/dropped``). A cancelled caller ends the wait as a timeout does.
    ///
    /// - Parameter timeout: the longest wait (10 s by default). A collector that answers is not waited for longer
    ///   than the transport's own timeouts allow; this bounds a queue of reports to a slow one.
    /// - Returns: How many accepted reports were neither delivered nor failed at the deadline: 0 when everything
    ///   queued was sent.
    @discardableResult
    public func shutdown(timeout: Duration = .seconds(10)) async -> Int {
        queue.finish()
        let drained = await withTaskGroup(of: Bool.self) { group in
            group.addTask { [self] in
                await waitUntilIdle()
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        guard !drained else { return 0 }
        // Counted at the deadline, before the cancelled sends come back as failed.
        let unsent = state.withLockedValue { $0.pending }
        worker.cancel()
        if unsent > 0 {
            configuration.logger.warning(
                "pin failure reporter shut down with reports not sent: the collector did not answer in time",
                metadata: ["unsent": "\(unsent)", "timeout": "\(timeout)"])
        }
        return unsent
    }

    private static func remember(_ key: QueuedReport, at now: Date, interval: TimeInterval, in state: inout State) {
        if state.recent.count >= recentCapacity {
            state.recent = state.recent.filter { now.timeIntervalSince($0.value) < interval }
            if state.recent.count >= recentCapacity, let oldest = state.recent.min(by: { $0.value < $1.value }) {
                state.recent[oldest.key] = nil
            }
        }
        state.recent[key] = now
    }

    private static func finishOne(_ state: NIOLockedValueBox<State>) {
        state.withLockedValue { finishLocked(&$0) }.forEach { $0.resume() }
    }

    private static func finishLocked(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        state.pending -= 1
        guard state.pending == 0 else { return [] }
        defer { state.idleWaiters = [:] }
        return Array(state.idleWaiters.values)
    }

    /// Whether `uri` is the endpoint the report is about: the same port, and the same host once both are in their
    /// canonical ``ServerName`` form (`COLLECTOR.example.net.` is `collector.example.net`, `[::1]` is `::1`).
    static func isOwnEndpoint(_ uri: URL, _ report: TrustKitReport) -> Bool {
        isOwnEndpoint(uri, host: report.hostname, port: report.port)
    }

    /// Whether `uri` is `host`:`port` itself (a report about it is not sent to it).
    static func isOwnEndpoint(_ uri: URL, host reportHost: String, port: Int) -> Bool {
        guard let host = uri.host, (uri.port ?? 443) == port else { return false }
        return canonical(host) == canonical(reportHost)
    }

    private static func canonical(_ host: String) -> String { (try? ServerName(host))?.text ?? host.lowercased() }

    /// POSTs `body` to `uri`; true for a 2xx answer. The answer's body is read (up to 64 KiB) and dropped.
    static func post(_ body: Data, to uri: URL, transport: any ClientTransport) async -> Bool {
        guard var components = URLComponents(url: uri, resolvingAgainstBaseURL: false) else { return false }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        let query = components.percentEncodedQuery.map { "?" + $0 } ?? ""
        components.percentEncodedPath = ""
        components.percentEncodedQuery = nil
        guard let base = components.url else { return false }
        var request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: path + query)
        request.headerFields[.contentType] = "application/json"
        do {
            let (response, responseBody) = try await transport.send(
                request, body: HTTPBody(body), baseURL: base, operationID: "shopkitPinFailureReport")
            if let responseBody { _ = try await Data(collecting: responseBody, upTo: 64 * 1024) }
            return response.status.kind == .successful
        } catch {
            return false
        }
    }
}

/// A reporter that cannot be built; the message says which report URI to fix.
public enum HTTPPinFailureReporterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No report URI was given.
    case noReportURI
    /// The URI is not `https` with a host.
    case invalidReportURI(String)

    public var description: String {
        switch self {
        case .noReportURI: return "give at least one report URI (https://…) to send pin failure reports to"
        case .invalidReportURI(let uri): return "report URI \(uri) is not https://HOST/…: reports are sent over HTTPS only"
        }
    }
}

/// A report waiting to be sent: a pin failure (TrustKit's format) or a CT compliance failure (RFC 9163's).
enum QueuedReport: Sendable, Hashable {
    case pin(TrustKitReport)
    case certificateTransparency(CTComplianceReport)

    /// The report with its date cleared: two reports equal in every other field are duplicates.
    var deduplicationKey: QueuedReport {
        switch self {
        case .pin(let report): return .pin(report.deduplicationKey)
        case .certificateTransparency(var report):
            report.dateTime = Date(timeIntervalSince1970: 0)
            return .certificateTransparency(report)
        }
    }

    /// The host the report is about, and its port.
    var hostname: String {
        switch self {
        case .pin(let report): return report.hostname
        case .certificateTransparency(let report): return report.hostname
        }
    }

    var port: Int {
        switch self {
        case .pin(let report): return report.port
        case .certificateTransparency(let report): return report.port
        }
    }

    /// The JSON body POSTed.
    var body: Data {
        switch self {
        case .pin(let report): return (try? report.json()) ?? Data()
        case .certificateTransparency(let report): return report.jsonData()
        }
    }
}
