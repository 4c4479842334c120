import ShopKitPinning

/// Hands every pin failure report to several reporters, in the order given.
///
/// `TLSClientConfiguration` takes one reporter; this is it when reports should go to more than one place: two
/// collectors with different transports (one pinned, one not), or a collector and the app's own log.
///
/// ```swift
/// let reporters = CompositePinFailureReporter(collector, auditLog)
/// let tls = TLSClientConfiguration(pinning: policy, pinFailureReporter: reporters)
/// // before the process exits: sends what is queued, waiting at most 10 s
/// await reporters.shutdown()
/// ```
///
/// ``report(_:)-(PinFailureReport)`` calls each reporter's `report(_:)` in turn on the caller's thread, so each must return at once,
/// as ``HTTPPinFailureReporter`` does (the TLS layer calls it on the connection's event loop).
public struct CompositePinFailureReporter: PinFailureReporter {
    /// The reporters, in the order each report is handed to them.
    public let reporters: [any PinFailureReporter]

    /// A reporter handing each report to `reporters`, in order.
    public init(_ reporters: [any PinFailureReporter]) {
        self.reporters = reporters
    }

    /// A reporter handing each report to `reporters`, in order.
    public init(_ reporters: any PinFailureReporter...) {
        self.init(reporters)
    }

    /// Hands `report` to every reporter, in order.
    public func report(_ report: PinFailureReport) {
        for reporter in reporters { reporter.report(report) }
    }

    /// Hands the Certificate Transparency `report` to every reporter, in order.
    public func report(_ report: CTComplianceReport) {
        for reporter in reporters { reporter.report(report) }
    }

    /// Shuts down every ``HTTPPinFailureReporter`` among the reporters (including those in a nested composite), at
    /// the same time, each waiting at most `timeout`; other reporters are left as they are.
    ///
    /// - Returns: The reports not sent, summed over the HTTP reporters (see
    ///   ``HTTPPinFailureReporter/shutdown(timeout:)``).
    @discardableResult
    public func shutdown(timeout: Duration = .seconds(10)) async -> Int {
        await withTaskGroup(of: Int.self) { group in
            for reporter in reporters {
                if let http = reporter as? HTTPPinFailureReporter {
                    group.addTask { await http.shutdown(timeout: timeout) }
                } else if let composite = reporter as? CompositePinFailureReporter {
                    group.addTask { await composite.shutdown(timeout: timeout) }
                }
            }
            return await group.reduce(0, +)
        }
    }
}
