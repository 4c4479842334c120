import Foundation

extension PinSetDocument {
    /// Checks that the document keeps every host pattern `baseline` pins at least as pinned as the baseline does,
    /// unless it lists the pattern in `unpinnedBaselineHosts`.
    ///
    /// The rule, for each baseline pattern: every host the pattern matches must get from the document an
    /// *enforced* set (not report-only) that stays live for the document's whole validity and past it (no
    /// `expiration`, or one after `expiresAt`: at `expiresAt` itself the document may still be in force until its
    /// expiry timer runs). So a report-only set, a set expiring early, or a more specific weak set under a
    /// baseline wildcard (`api.example.com` report-only under `*.example.com`) is refused; a broader enforced set
    /// (`**.example.com` for `api.example.com`) is enough.
    ///
    /// Hosts are compared by class rather than one by one: two hosts under the same set of patterns get the same
    /// set, and every class a pattern matches has a member among each pattern's base, one label in front of it, and
    /// two labels in front of it (with a label no pattern uses).
    func checkBaselineHosts(_ baseline: PinningPolicy) throws(PinSetDocumentError) {
        let patterns = policy.pinSets.map(\.hostPattern) + baseline.pinSets.map(\.hostPattern)
        let firstLabels = Set(patterns.map { $0.base.split(separator: ".").first.map(String.init) ?? "" })
        var fresh = "shopkit-probe"
        while firstLabels.contains(fresh) { fresh += "-x" }
        let probes = Set(patterns.flatMap { pattern -> [String] in
            pattern.kind == .ipAddress ? [pattern.base] : [pattern.base, "\(fresh).\(pattern.base)", "\(fresh).\(fresh).\(pattern.base)"]
        }).sorted()
        for set in baseline.pinSets where !unpinnedBaselineHosts.contains(set.hostPattern) {
            for host in probes where set.hostPattern.matches(host) {
                guard let applied = policy.pinSet(for: host) else {
                    throw .dropsBaselineHost(set.hostPattern.description)
                }
                let which = "the set for \(applied.hostPattern)"
                if applied.reportOnly {
                    throw .weakensBaselineHost(set.hostPattern.description, reason: "\(which) is report-only")
                }
                // Live at every instant the document may be in force, `expiresAt` included: from that instant the
                // document is expired (`isExpired(at:)`), but it stays in force until its expiry timer has put the
                // baseline back, and a set expired at that same instant would leave the host unpinned meanwhile.
                if let expiration = applied.expiration, expiration <= expiresAt {
                    throw .weakensBaselineHost(
                        set.hostPattern.description,
                        reason: "\(which) expires at \(Self.timestamp(expiration)), "
                            + (expiration == expiresAt ? "when the document does" : "before the document (\(Self.timestamp(expiresAt)))")
                            + "; a set must outlive the document")
                }
            }
        }
    }
}
