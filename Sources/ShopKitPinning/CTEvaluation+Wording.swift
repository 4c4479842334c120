extension CTEvaluation {
    /// The verdict in words, for logs and errors: what was found and, when not compliant, why.
    public var verdictDescription: String {
        let stale = logListStale ? " (the log list is stale: enforcement is off until a newer list arrives)" : ""
        switch verdict {
        case .compliant:
            return "compliant: \(assessments.filter(\.counted).count) of \(assessments.count) SCTs counted\(stale)"
        case .notCompliant(let reason): return "not compliant: \(reason)\(stale)"
        case .exempt(let reason): return "exempt: \(reason)"
        case .notChecked: return "not checked: Certificate Transparency is disabled for this host"
        case .noLogList: return "not checked: the log list has no logs"
        }
    }
}
