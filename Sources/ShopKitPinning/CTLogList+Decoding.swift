import Foundation

/// A v3 log list as JSON has it, before its values are checked (`CTLogListWire.logList()` checks them).
struct CTLogListWire: Decodable {
    let version: String?
    let timestamp: String
    let operators: [OperatorWire]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CTKey.self)
        version = try container.decodeOptional(String.self, forKey: "version")
        timestamp = try container.decode(String.self, forKey: "log_list_timestamp")
        operators = try container.decode([OperatorWire].self, forKey: "operators")
    }

    struct OperatorWire: Decodable {
        let name: String
        let logs: [LogWire]
        let tiledLogs: [LogWire]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CTKey.self)
            name = try container.decode(String.self, forKey: "name")
            logs = try container.decodeOptional([LogWire].self, forKey: "logs") ?? []
            tiledLogs = try container.decodeOptional([LogWire].self, forKey: "tiled_logs") ?? []
        }
    }

    struct LogWire: Decodable {
        let description: String
        let logID: String
        let key: String
        let url: String?
        let mmd: Int?
        let state: StateWire?
        let interval: (start: String, end: String)?
        let previousOperators: [PreviousOperatorWire]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CTKey.self)
            description = try container.decode(String.self, forKey: "description")
            logID = try container.decode(String.self, forKey: "log_id")
            key = try container.decode(String.self, forKey: "key")
            url = try container.decodeOptional(String.self, forKey: "url")
                ?? container.decodeOptional(String.self, forKey: "submission_url")
            mmd = try container.decodeOptional(Int.self, forKey: "mmd")
            state = try container.decodeOptional(StateWire.self, forKey: "state")
            if container.contains("temporal_interval") {
                let nested = try container.nestedContainer(keyedBy: CTKey.self, forKey: "temporal_interval")
                interval = (
                    try nested.decode(String.self, forKey: "start_inclusive"),
                    try nested.decode(String.self, forKey: "end_exclusive")
                )
            } else {
                interval = nil
            }
            previousOperators = try container.decodeOptional([PreviousOperatorWire].self, forKey: "previous_operators") ?? []
        }
    }

    /// `{"name": "…", "end_time": "…"}`.
    struct PreviousOperatorWire: Decodable {
        let name: String
        let endTime: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CTKey.self)
            name = try container.decode(String.self, forKey: "name")
            endTime = try container.decode(String.self, forKey: "end_time")
        }
    }

    /// `{"usable": {"timestamp": "…"}}`: exactly one member, a known state.
    struct StateWire: Decodable {
        let name: String
        let timestamp: String

        static let names = ["pending", "qualified", "usable", "readonly", "retired", "rejected"]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CTKey.self)
            let keys = container.allKeys.map(\.stringValue).sorted()
            guard keys.count == 1, let key = keys.first else {
                throw CTLogListError(
                    "a state has exactly one member (one of \(Self.names.joined(separator: ", "))); found \(keys.count)",
                    path: CTKey.path(container.codingPath))
            }
            guard Self.names.contains(key) else {
                throw CTLogListError(
                    "unknown state \(String(reflecting: key)); known states: \(Self.names.joined(separator: ", "))",
                    path: CTKey.path(container.codingPath))
            }
            name = key
            let nested = try container.nestedContainer(keyedBy: CTKey.self, forKey: CTKey(stringValue: key))
            timestamp = try nested.decode(String.self, forKey: "timestamp")
        }
    }

    /// The list, its values checked.
    func logList() throws(CTLogListError) -> CTLogList {
        let listTimestamp = try Self.date(timestamp, path: "log_list_timestamp")
        var operatorNames = Set<String>()
        var logIDs = Set<[UInt8]>()
        var built: [CTLogList.Operator] = []
        for (index, entry) in operators.enumerated() {
            let at = "operators[\(index)]"
            guard !entry.name.isEmpty else { throw CTLogListError("the operator has no name", path: at + ".name") }
            guard operatorNames.insert(entry.name).inserted else {
                throw CTLogListError(
                    "a second operator named \(String(reflecting: entry.name)); the distinct-operator rule needs one "
                        + "entry per operator", path: at + ".name")
            }
            var logs: [CTLogList.Log] = []
            let all = entry.logs.enumerated().map { ("logs[\($0.offset)]", $0.element) }
                + entry.tiledLogs.enumerated().map { ("tiled_logs[\($0.offset)]", $0.element) }
            for (member, wire) in all {
                let log = try wire.log(operatorName: entry.name, path: "\(at).\(member)")
                guard logIDs.insert(log.logID).inserted else {
                    throw CTLogListError("a second log with this log_id", path: "\(at).\(member).log_id")
                }
                logs.append(log)
            }
            built.append(CTLogList.Operator(name: entry.name, logs: logs))
        }
        return CTLogList(timestamp: listTimestamp, version: version, operators: built)
    }

    /// An RFC 3339 time in UTC (`2026-11-28T00:00:00Z`, fractional seconds allowed), as the schema writes them,
    /// read strictly (``UTCTimestamp``: `2027-02-30` is refused, not read as March 2nd).
    static func date(_ text: String, path: String) throws(CTLogListError) -> Date {
        guard let date = UTCTimestamp.parse(text, fractionalSeconds: true) else {
            throw CTLogListError(
                "\(String(reflecting: text)) is not a UTC time written as YYYY-MM-DDTHH:MM:SSZ (a real date and time; "
                    + "fractional seconds allowed)", path: path)
        }
        return date
    }

    /// Canonical standard base64 (with padding, no whitespace), or nil.
    static func base64(_ text: String) -> [UInt8]? {
        guard let data = Data(base64Encoded: text), data.base64EncodedString() == text else { return nil }
        return Array(data)
    }
}

extension CTLogListWire.LogWire {
    func log(operatorName: String, path: String) throws(CTLogListError) -> CTLogList.Log {
        guard let id = CTLogListWire.base64(logID) else {
            throw CTLogListError("not base64", path: path + ".log_id")
        }
        guard id.count == 32 else {
            throw CTLogListError("\(id.count) bytes; a log ID is the 32-byte SHA-256 of the log's key", path: path + ".log_id")
        }
        guard let keyBytes = CTLogListWire.base64(key), !keyBytes.isEmpty else {
            throw CTLogListError("not base64 (a DER SubjectPublicKeyInfo)", path: path + ".key")
        }
        if let mmd, mmd <= 0 { throw CTLogListError("must be above 0 seconds", path: path + ".mmd") }
        var state: CTLogList.State?
        if let wire = self.state {
            let since = try CTLogListWire.date(wire.timestamp, path: "\(path).state.\(wire.name).timestamp")
            switch wire.name {
            case "pending": state = .pending(since)
            case "qualified": state = .qualified(since)
            case "usable": state = .usable(since)
            case "readonly": state = .readOnly(since)
            case "retired": state = .retired(since)
            default: state = .rejected(since)
            }
        }
        var temporalInterval: CTLogList.TemporalInterval?
        if let interval {
            let start = try CTLogListWire.date(interval.start, path: path + ".temporal_interval.start_inclusive")
            let end = try CTLogListWire.date(interval.end, path: path + ".temporal_interval.end_exclusive")
            guard start < end else {
                throw CTLogListError("end_exclusive must be after start_inclusive", path: path + ".temporal_interval")
            }
            temporalInterval = .init(start: start, end: end)
        }
        var previous: [CTLogList.PreviousOperator] = []
        var ends: Set<Date> = []
        for (index, wire) in previousOperators.enumerated() {
            let at = "\(path).previous_operators[\(index)]"
            guard !wire.name.isEmpty else { throw CTLogListError("the previous operator has no name", path: at + ".name") }
            let end = try CTLogListWire.date(wire.endTime, path: at + ".end_time")
            guard ends.insert(end).inserted else {
                throw CTLogListError(
                    "a second previous operator ending at this instant: which one issued an SCT of that time is "
                        + "ambiguous", path: at + ".end_time")
            }
            previous.append(.init(name: wire.name, end: end))
        }
        return CTLogList.Log(
            description: description, logID: id, key: keyBytes, url: url, mmd: mmd, state: state,
            temporalInterval: temporalInterval, operatorName: operatorName, previousOperators: previous)
    }
}

/// A member name as a coding key.
struct CTKey: CodingKey, ExpressibleByStringLiteral {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(stringLiteral value: String) { stringValue = value }

    /// `operators[0].logs[1]` for a decoder's coding path.
    static func path(_ keys: [any CodingKey]) -> String? {
        let text = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }
        return text.isEmpty ? nil : String(text)
    }
}

extension KeyedDecodingContainer where Key == CTKey {
    /// An optional member: absent is nil; `null` is refused (one way to leave a member out).
    func decodeOptional<T: Decodable>(_ type: T.Type, forKey key: CTKey) throws -> T? {
        guard contains(key) else { return nil }
        if try decodeNil(forKey: key) {
            throw CTLogListError("is null; leave the member out to omit it", path: CTKey.path(codingPath + [key]))
        }
        return try decode(type, forKey: key)
    }
}

extension CTLogListError {
    /// A decoder's error, as the field at fault and what it must be.
    init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init("missing field \(String(reflecting: key.stringValue))", path: CTKey.path(context.codingPath))
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let kind: String
            switch type {
            case is Int.Type: kind = "an integer"
            case is String.Type: kind = "a string"
            case is [Any].Type: kind = "a JSON array"
            default: kind = String(describing: type).hasPrefix("Array") ? "a JSON array" : "a JSON object"
            }
            self.init("must be \(kind)", path: CTKey.path(context.codingPath))
        case .dataCorrupted(let context):
            self.init(context.codingPath.isEmpty ? "not JSON" : context.debugDescription, path: CTKey.path(context.codingPath))
        @unknown default:
            self.init("not a v3 log list")
        }
    }
}
