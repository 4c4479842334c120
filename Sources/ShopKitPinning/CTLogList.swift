import Foundation

/// A list of Certificate Transparency logs in Chrome's log list v3 schema (`log_list.json`): each log's key, ID,
/// operator, state and temporal interval, which ``CertificateTransparencyPolicy`` judges SCTs against.
///
/// Why the schema and not Chrome's list: the schema is the field's own format, but Chrome's list itself may not be
/// used for CT enforcement by other clients without written permission from Chrome's CT team. An app supplies the
/// list it may use: as a file (``init(json:)``), or as a signed update (``CTLogListDocument``, verified by
/// ShopKitTLS's `PinSetVerifier.verifyLogList(_:currentVersion:now:)`). ``bundled`` is a dated list without logs.
///
/// Reading is strict: a member name repeated within one object, a log ID that is not the base64 of 32 bytes, a key
/// that is not base64, an unknown log state, two logs with one ID or two operators with one name are refused with a
/// ``CTLogListError`` naming the field. Members ShopKit does not read (`email`, `log_type`, a read-only log's
/// `final_tree_head`, a tiled log's `monitoring_url`) are allowed, as the schema grows. A log's
/// `previous_operators` are read: an SCT counts for the operator that ran its log when the SCT was issued.
/// `tiled_logs` (static-CT-API logs) are read as logs of their operator, their `submission_url` as the URL.
public struct CTLogList: Sendable, Hashable {
    /// One log operator and its logs.
    public struct Operator: Sendable, Hashable {
        /// The operator's name (`name`), which the distinct-operator rule compares.
        public var name: String
        /// Its logs: `logs` and then `tiled_logs`, in the list's order.
        public var logs: [Log]

        public init(name: String, logs: [Log]) {
            self.name = name
            self.logs = logs
        }
    }

    /// A log's state in the list, since the instant given (the state's `timestamp`).
    public enum State: Sendable, Hashable {
        /// Applying for inclusion: its SCTs never count.
        case pending(Date)
        /// Qualified: its SCTs count.
        case qualified(Date)
        /// Usable: its SCTs count.
        case usable(Date)
        /// Read-only (`readonly`): no new entries, its SCTs count.
        case readOnly(Date)
        /// Retired at the date given: its embedded SCTs dated before then count, no others.
        case retired(Date)
        /// Rejected: its SCTs never count.
        case rejected(Date)

        /// Since when the log is in this state.
        public var since: Date {
            switch self {
            case .pending(let date), .qualified(let date), .usable(let date), .readOnly(let date), .retired(let date),
                .rejected(let date):
                return date
            }
        }

        /// The state's name as the schema writes it (`readonly` for ``readOnly(_:)``).
        public var name: String {
            switch self {
            case .pending: return "pending"
            case .qualified: return "qualified"
            case .usable: return "usable"
            case .readOnly: return "readonly"
            case .retired: return "retired"
            case .rejected: return "rejected"
            }
        }

        /// Qualified, usable or read-only: the states whose SCTs count under every rule.
        public var isCurrent: Bool {
            switch self {
            case .qualified, .usable, .readOnly: return true
            case .pending, .retired, .rejected: return false
            }
        }
    }

    /// The certificates a sharded log accepts: those whose notAfter is at or after `start` and before `end`.
    public struct TemporalInterval: Sendable, Hashable {
        /// `start_inclusive`.
        public var start: Date
        /// `end_exclusive`.
        public var end: Date

        public init(start: Date, end: Date) {
            self.start = start
            self.end = end
        }

        /// Whether `notAfter` falls in [start, end).
        public func contains(_ notAfter: Date) -> Bool { notAfter >= start && notAfter < end }
    }

    /// An operator that ran a log before its current one (`previous_operators`), until `end` (`end_time`).
    public struct PreviousOperator: Sendable, Hashable {
        /// `name`: the operator's name, compared by the distinct-operator rule like ``Operator/name``.
        public var name: String
        /// `end_time`: the instant it stopped running the log; SCTs issued before then are its SCTs.
        public var end: Date

        public init(name: String, end: Date) {
            self.name = name
            self.end = end
        }
    }

    /// One log.
    public struct Log: Sendable, Hashable {
        /// The log's state (``CTLogList/State``).
        public typealias State = CTLogList.State
        /// The log's temporal interval (``CTLogList/TemporalInterval``).
        public typealias TemporalInterval = CTLogList.TemporalInterval
        /// An earlier operator of the log (``CTLogList/PreviousOperator``).
        public typealias PreviousOperator = CTLogList.PreviousOperator

        /// `description`, e.g. "Example 'Argon2027h1' log".
        public var description: String
        /// `log_id`: the SHA-256 of the log's key (RFC 6962 §3.2), 32 bytes; SCTs name their log by it.
        public var logID: [UInt8]
        /// `key`: the log's public key as DER SubjectPublicKeyInfo.
        public var key: [UInt8]
        /// `url` (`submission_url` for a tiled log).
        public var url: String?
        /// `mmd`: the maximum merge delay, in seconds.
        public var mmd: Int?
        /// `state`; a log without one never counts.
        public var state: State?
        /// `temporal_interval`, for a sharded log.
        public var temporalInterval: TemporalInterval?
        /// The name of the log's operator now (the list entry it is under).
        public var operatorName: String
        /// The operators that ran the log before ``operatorName``, in the list's order.
        public var previousOperators: [PreviousOperator]

        /// The operator that ran the log at `date`: the earliest previous operator whose `end` is after `date`,
        /// else ``operatorName``. An SCT is its operator's at its timestamp (a log handed to another operator does not
        /// make its older SCTs the new operator's).
        public func operatorName(at date: Date) -> String {
            previousOperators.lazy.filter { date < $0.end }.min { $0.end < $1.end }?.name ?? operatorName
        }

        public init(
            description: String, logID: [UInt8], key: [UInt8], url: String? = nil, mmd: Int? = nil,
            state: State? = nil, temporalInterval: TemporalInterval? = nil, operatorName: String,
            previousOperators: [PreviousOperator] = []
        ) {
            self.description = description
            self.logID = logID
            self.key = key
            self.url = url
            self.mmd = mmd
            self.state = state
            self.temporalInterval = temporalInterval
            self.operatorName = operatorName
            self.previousOperators = previousOperators
        }
    }

    /// `log_list_timestamp`: when the list was published. ``CertificateTransparencyPolicy`` treats a list older
    /// than its `maximumLogListAge` as stale.
    public var timestamp: Date
    /// `version`, as the publisher writes it (Chrome's: "35.12").
    public var version: String?
    /// The operators, in the list's order.
    public var operators: [Operator]

    /// Every log of every operator, in the list's order.
    public var logs: [Log] { operators.flatMap(\.logs) }

    /// The log whose ID is `id`, nil when the list has none.
    public func log(id: [UInt8]) -> Log? {
        for entry in operators { if let log = entry.logs.first(where: { $0.logID == id }) { return log } }
        return nil
    }

    /// A list built in code (tests, or an app that builds its own). Unlike ``init(json:)``, nothing is checked.
    public init(timestamp: Date, version: String? = nil, operators: [Operator]) {
        self.timestamp = timestamp
        self.version = version
        self.operators = operators
    }

    /// The list in `json` (Chrome's v3 schema), read strictly (see the type's summary).
    ///
    /// - Throws: ``CTLogListError`` naming the field at fault.
    public init(json: Data) throws(CTLogListError) {
        // Integers only, as in a signed document (a list read alone and one in a document are read alike).
        switch JSONDuplicateCheck.scan(Array(json), integersOnly: true, maximumDepth: Self.maximumDepth) {
        case .unique: break
        case .tooDeep(let limit):
            throw CTLogListError("the JSON nests objects and arrays more than \(limit) levels deep; a log list needs nine")
        case .duplicate(let name, let path):
            throw CTLogListError(
                "member \(String(reflecting: name)) appears twice; readers disagree on which one counts (RFC 7493)",
                path: path.isEmpty ? nil : path)
        case .malformed(let problem): throw CTLogListError("not JSON (\(problem))")
        }
        let wire: CTLogListWire
        do {
            wire = try JSONDecoder().decode(CTLogListWire.self, from: json)
        } catch let error as CTLogListError {
            throw error
        } catch let error as DecodingError {
            throw CTLogListError(error)
        } catch {
            throw CTLogListError("not JSON")
        }
        self = try wire.logList()
    }

    /// How deep a list's JSON may nest: a log list needs nine levels (list, operators, an operator, logs, a log,
    /// state, readonly, final_tree_head, and a document around it); deeper JSON is refused before decoding.
    package static let maximumDepth = 16

    /// The list shipped as the package resource `ct-log-list.json`: a dated v3 list (2026-11-28) with no operators
    /// and no logs, so that CT never blocks or reports a host (``CTEvaluation/Verdict/noLogList``) until the app
    /// supplies a list it may use: ``CertificateTransparencyPolicy/logList`` set to ``init(json:)``'s result, or a
    /// signed ``CTLogListDocument``. `scripts/update-ct-log-list` writes a new resource from a `log_list.json`.
    ///
    /// If the resource cannot be found (a binary deployed without its `ShopKit_ShopKitPinning.resources` folder),
    /// this is an empty list dated at the distant past: the same verdict, never a crash.
    public static let bundled: CTLogList = {
        let name = "ShopKit_ShopKitPinning.resources"
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent(name),
            Bundle.main.executableURL?.deletingLastPathComponent().appendingPathComponent(name),
        ].compactMap { $0 }
        for directory in candidates {
            let file = directory.appendingPathComponent("ct-log-list.json")
            if let data = try? Data(contentsOf: file), let list = try? CTLogList(json: data) { return list }
        }
        return CTLogList(timestamp: .distantPast, operators: [])
    }()
}

/// Why a log list was refused: what is wrong, and the path of the field at fault (`operators[0].logs[1].log_id`).
public struct CTLogListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The path of the field at fault, nil when the whole list is.
    public let path: String?

    public init(_ message: String, path: String? = nil) {
        self.message = message
        self.path = path
    }

    /// "the CT log list is invalid (publisher): operators[0].logs[1].log_id: …", on one printable line (the list's own
    /// strings escaped as `\u{1B}`).
    public var description: String {
        printableOnOneLine("the CT log list is invalid (publisher): " + (path.map { "\($0): " } ?? "") + message)
    }
}
