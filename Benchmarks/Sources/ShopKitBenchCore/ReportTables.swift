import Foundation

/// The table math, pure: results in, Markdown out.
public struct ReportTables: Sendable {
    public let results: [BenchResult]

    public init(results: [BenchResult]) { self.results = results }

    /// The results among `text`'s JSON lines; lines that are not results are skipped.
    public static func parse(jsonLines text: String) -> [BenchResult] {
        let decoder = JSONDecoder()
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{") else { return nil }
            return try? decoder.decode(BenchResult.self, from: Data(line.utf8))
        }
    }

    public static let workloadOrder: [String] = Workload.allCases.map(\.rawValue)
    public static let clientOrder = [
        "shopkit-pinned", "shopkit-pinned-ct", "shopkit-pinned-on-loop", "shopkit-unpinned", "ahc", "ahc-leafpin", "urlsession", "wrk", "h2load", "openssl-s_time",
    ]

    /// Median of the `ok` rows' values for one client and workload.
    public func median(_ client: String, _ workload: String, _ value: (BenchResult) -> Double?) -> Double? {
        let values = rows(client, workload).compactMap(value).sorted()
        guard !values.isEmpty else { return nil }
        let mid = values.count / 2
        return values.count % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2
    }

    public func rows(_ client: String, _ workload: String) -> [BenchResult] {
        results.filter { $0.client == client && $0.workload == workload && $0.status == "ok" }
    }

    /// The AsyncHTTPClient row a workload is compared with (resumption is compared with full handshakes).
    public static func ahcBaseline(for workload: String) -> String {
        workload.hasPrefix("resume-") ? "newconn-" + workload.dropFirst("resume-".count) : workload
    }

    /// The reference tool's client name for a workload: `openssl s_time` for handshakes, h2load for HTTP/2,
    /// wrk for the rest.
    public static func reference(for workload: String) -> String {
        if workload.hasPrefix("newconn-") || workload.hasPrefix("resume-") { return "openssl-s_time" }
        return workload.hasPrefix("h2-") ? "h2load" : "wrk"
    }

    public func markdown() -> String {
        var out = ""
        out += "| workload | client | req/s (median) | req/s (min–max) | p50 µs | p99 µs | MiB/s | peak RSS MiB | × AHC | × wrk / s_time / h2load |\n"
        out += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        let workloads = Self.workloadOrder.filter { $0 != Workload.soak.rawValue }
        for workload in workloads {
            let clients = Self.clientOrder.filter { client in results.contains { $0.client == client && $0.workload == workload } }
            for client in clients {
                out += row(client, workload) + "\n"
            }
        }
        out += "\n### RSS over the soak (keep-alive, 1 connection)\n\n"
        out += "| client | requests | RSS after warm-up MiB | RSS after MiB | growth | peak RSS MiB |\n|---|---:|---:|---:|---:|---:|\n"
        for client in Self.clientOrder {
            let soak = results.filter { $0.client == client && $0.workload == Workload.soak.rawValue }
            guard let first = soak.first else { continue }
            guard let ok = soak.first(where: { $0.status == "ok" }), let before = ok.rssBeforeKiB, let after = ok.rssAfterKiB else {
                out += "| \(client) | \(first.status) | | | | |\n"
                continue
            }
            let growth = (Double(after) - Double(before)) / Double(before) * 100
            out += "| \(client) | \(ok.requests) | \(mib(before)) | \(mib(after)) | \(String(format: "%+.1f%%", growth)) | \(ok.peakRSSKiB.map(mib) ?? "") |\n"
        }
        let tokenRows = results.filter { $0.workload.hasPrefix("token-") || $0.client == "secret-tool" }
        if !tokenRows.isEmpty {
            out += "\n### Token store\n\n| operation | client | ops/s | p50 µs | p99 µs | status |\n|---|---|---:|---:|---:|---|\n"
            for result in tokenRows {
                out += "| \(result.workload) | \(result.client) | \(result.status == "ok" ? fmt(result.reqPerSec) : "") | \(result.p50Micros.map(fmt) ?? "") | \(result.p99Micros.map(fmt) ?? "") | \(result.status) |\n"
            }
        }
        out += idleSection()
        out += streamsSection()
        out += http2Section()
        out += "\n### The bar (issue 13; the HTTP/2 line is issue 12's)\n\n" + bar()
        return out
    }

    /// Resident memory with 1 000 idle pooled HTTP/1.1 connections (idle-1000), beside AsyncHTTPClient's.
    public func idleSection() -> String {
        memorySection(
            .idle1000, title: "Memory with 1 000 idle HTTP/1.1 connections (idle-1000)",
            state: "RSS with the connections idle", unit: "connection")
    }

    /// Resident memory at its peak with 1 000 streams open on one HTTP/2 connection (h2-streams-1000).
    public func streamsSection() -> String {
        memorySection(
            .h2Streams1000, title: "Memory with 1 000 streams open on one HTTP/2 connection (h2-streams-1000)",
            state: "peak RSS with the streams open", unit: "stream")
    }

    /// One memory row per client: RSS in `state` (`rssAfterKiB`), its spread, what each of the 1 000 connections
    /// or streams added over the process before the first connection, and the ratio to AsyncHTTPClient's RSS.
    private func memorySection(_ workload: Workload, title: String, state: String, unit: String) -> String {
        let name = workload.rawValue
        let clients = Self.clientOrder.filter { !rows($0, name).isEmpty }
        guard !clients.isEmpty else { return "" }
        var out = "\n### \(title)\n\n"
        out += "| client | \(state) MiB (median) | min–max | growth per \(unit) KiB | × AHC |\n"
        out += "|---|---:|---:|---:|---:|\n"
        let ahc = median("ahc", name) { $0.rssAfterKiB.map(Double.init) }
        /// What the connections or streams added: RSS in `state` minus RSS before the first connection, per one.
        func growth(_ result: BenchResult) -> Double? {
            guard let after = result.rssAfterKiB, let before = result.rssBeforeKiB else { return nil }
            return Double(after - before) / Double(workload.connections)
        }
        for client in clients {
            let values = rows(client, name).compactMap(\.rssAfterKiB).map(Double.init)
            let rss = median(client, name) { $0.rssAfterKiB.map(Double.init) }
            let perOne = median(client, name, growth).map { String(format: "%.0f", $0) } ?? ""
            let spread = "\(values.min().map { mib(Int($0)) } ?? "")–\(values.max().map { mib(Int($0)) } ?? "")"
            out += "| \(client) | \(rss.map { mib(Int($0)) } ?? "") | \(spread) | \(perOne) | \(ratio(rss, ahc)) |\n"
        }
        return out
    }

    /// The HTTP/2 rows beside the same clients over HTTP/1.1, with the TLS handshakes each process did.
    func http2Section() -> String {
        let pairs = [(Workload.h2Keepalive32.rawValue, Workload.keepalive32.rawValue),
                     (Workload.h2Body1MiB.rawValue, Workload.body1MiB.rawValue)]
        guard pairs.contains(where: { pair in results.contains { $0.workload == pair.0 } }) else { return "" }
        var out = "\n### HTTP/2 (nginx with `http2`; one connection carries concurrent requests as streams)\n\n"
        out += "| workload | client | req/s (median) | req/s (min–max) | TLS handshakes per process (max) | × AHC over h2 | × itself over HTTP/1.1 |\n"
        out += "|---|---|---:|---:|---:|---:|---:|\n"
        for (h2, http1) in pairs {
            for client in Self.clientOrder where !rows(client, h2).isEmpty {
                let ok = rows(client, h2)
                let rate = median(client, h2) { $0.reqPerSec }
                let rates = ok.map(\.reqPerSec)
                let handshakes = ok.compactMap(\.connectionsOpened).max().map(String.init) ?? ""
                let ahc = median("ahc", h2) { $0.reqPerSec }
                let overHTTP1 = median(client, http1) { $0.reqPerSec }
                out += "| \(h2) | \(client) | \(rate.map(fmt) ?? "") | \(fmt(rates.min() ?? 0))–\(fmt(rates.max() ?? 0)) (n=\(ok.count)) | \(handshakes) | \(ratio(rate, ahc)) | \(ratio(rate, overHTTP1)) |\n"
            }
        }
        return out
    }

    private func row(_ client: String, _ workload: String) -> String {
        let ok = rows(client, workload)
        guard !ok.isEmpty else {
            let any = results.first { $0.client == client && $0.workload == workload }
            let status = any?.status ?? "missing"
            let note = any?.note.map { " (\($0))" } ?? ""
            return "| \(workload) | \(client) | \(status)\(note) | | | | | | | |"
        }
        let rate = median(client, workload) { $0.reqPerSec }
        let rates = ok.map(\.reqPerSec)
        let spread = "\(fmt(rates.min() ?? 0))–\(fmt(rates.max() ?? 0)) (n=\(ok.count))"
        let p50 = median(client, workload) { $0.p50Micros }
        let p99 = median(client, workload) { $0.p99Micros }
        let mibs = median(client, workload) { $0.mibPerSec }
        let peak = ok.compactMap(\.peakRSSKiB).max()
        let ahc = median("ahc", Self.ahcBaseline(for: workload)) { $0.reqPerSec }
        let ref = median(Self.reference(for: workload), workload) { $0.reqPerSec }
        return "| \(workload) | \(client) | \(rate.map(fmt) ?? "") | \(spread) | \(p50.map(fmt) ?? "") | \(p99.map(fmt) ?? "") | \(mibs.map { String(format: "%.1f", $0) } ?? "") | \(peak.map(mib) ?? "") | \(ratio(rate, ahc)) | \(ratio(rate, ref)) |"
    }

    /// The performance bar of issue 13, with issue 12's HTTP/2 target: each line a ratio of medians in this run.
    private func bar() -> String {
        var out = "| target | measured | met |\n|---|---:|---|\n"
        func line(_ target: String, _ value: Double?, _ threshold: Double) {
            guard let value else {
                out += "| \(target) | not measured in this run | |\n"
                return
            }
            out += "| \(target) | \(String(format: "%.2f×", value)) | \(value >= threshold ? "yes" : "**no**") |\n"
        }
        func report(_ what: String, _ value: Double?) {
            out += "| \(what) | \(value.map { String(format: "%.2f×", $0) } ?? "not measured in this run") | (reported) |\n"
        }
        func r(_ a: String, _ wa: String, _ b: String, _ wb: String) -> Double? {
            guard let x = median(a, wa, { $0.reqPerSec }), let y = median(b, wb, { $0.reqPerSec }), y > 0 else { return nil }
            return x / y
        }
        let pinned = "shopkit-pinned"
        line("keep-alive 64 B, 1 connection: ShopKit (pinned) ≥ 1.5× AHC", r(pinned, "keepalive-1", "ahc", "keepalive-1"), 1.5)
        line("keep-alive 64 B, 1 connection: ShopKit (pinned) ≥ 0.7× wrk", r(pinned, "keepalive-1", "wrk", "keepalive-1"), 0.7)
        line("keep-alive 64 B, 1 connection, the caller on the transport's loop: ShopKit (pinned) ≥ 0.75× wrk",
             r("\(pinned)-on-loop", "keepalive-1", "wrk", "keepalive-1"), 0.75)
        line("keep-alive 64 B, 32 connections: ShopKit (pinned) ≥ 1.3× AHC", r(pinned, "keepalive-32", "ahc", "keepalive-32"), 1.3)
        for key in ["ecdsa", "rsa"] {
            let name = key.uppercased()
            line("full handshake, \(name): ShopKit (pinned) ≥ 1.0× `openssl s_time -new`",
                 r(pinned, "newconn-\(key)", "openssl-s_time", "newconn-\(key)"), 1.0)
            report("full handshake, \(name): ShopKit (pinned) × AHC (BoringSSL)", r(pinned, "newconn-\(key)", "ahc", "newconn-\(key)"))
            report("full handshake, \(name): `openssl s_time -new` × AHC (OpenSSL itself vs BoringSSL)",
                   r("openssl-s_time", "newconn-\(key)", "ahc", "newconn-\(key)"))
            line("resumed, \(name): ShopKit (pinned) ≥ 0.85× `openssl s_time -reuse`",
                 r(pinned, "resume-\(key)", "openssl-s_time", "resume-\(key)"), 0.85)
            line("resumed, \(name): ShopKit (pinned) ≥ 1.6× AHC full handshakes", r(pinned, "resume-\(key)", "ahc", "newconn-\(key)"), 1.6)
        }
        line("1 MiB, keep-alive: ShopKit (pinned) ≥ 1.0× wrk", r(pinned, "body-1mib", "wrk", "body-1mib"), 1.0)
        line("API stack (retry → auth → dedup) ≥ 0.95× the bare transport (pinned)", r(pinned, "api-stack", pinned, "api-bare"), 0.95)
        let h2 = Workload.h2Keepalive32.rawValue
        let h2Target = "HTTP/2, 32 concurrent requests: ShopKit (pinned) ≥ 1.2× AHC over h2, with one TLS handshake"
        if let value = r(pinned, h2, "ahc", h2) {
            let handshakes = rows(pinned, h2).compactMap(\.connectionsOpened).max()
            let met = value >= 1.2 && handshakes == 1
            out += "| \(h2Target) | \(String(format: "%.2f×", value)), \(handshakes.map { "\($0) handshake(s)" } ?? "handshakes not counted") | \(met ? "yes" : "**no**") |\n"
        } else {
            out += "| \(h2Target) | not measured in this run | |\n"
        }
        line("HTTP/2, 32 concurrent requests: ShopKit (pinned) ≥ 0.35× h2load (1 connection, 32 streams)",
             r(pinned, h2, "h2load", h2), 0.35)
        line("HTTP/2, 1 MiB: ShopKit (pinned) ≥ 0.85× h2load (1 stream)",
             r(pinned, Workload.h2Body1MiB.rawValue, "h2load", Workload.h2Body1MiB.rawValue), 0.85)
        for (workload, what) in [(Workload.idle1000, "1 000 idle HTTP/1.1 connections"),
                                 (Workload.h2Streams1000, "1 HTTP/2 connection with 1 000 streams open")] {
            let shopkit = median(pinned, workload.rawValue) { $0.rssAfterKiB.map(Double.init) }
            let ahc = median("ahc", workload.rawValue) { $0.rssAfterKiB.map(Double.init) }
            let value = shopkit.flatMap { s in ahc.flatMap { $0 > 0 ? s / $0 : nil } }
            let target = "memory, \(what): ShopKit (pinned) RSS ≤ 1.0× AHC's"
            guard let value else {
                out += "| \(target) | not measured in this run | |\n"
                continue
            }
            out += "| \(target) | \(String(format: "%.2f×", value)) | \(value <= 1.0 ? "yes" : "**no**") |\n"
        }
        out += "| pinning within 2% (instructions) of pins off | wall clock cannot resolve 2% here: see the instruction counts below | |\n"
        let soak = results.first { $0.client == pinned && $0.workload == "soak" && $0.status == "ok" }
        if let soak, let before = soak.rssBeforeKiB, let after = soak.rssAfterKiB {
            let growth = (Double(after) - Double(before)) / Double(before) * 100
            out += "| RSS flat over the soak (≤ 5% growth) | \(String(format: "%+.1f%%", growth)) | \(growth <= 5 ? "yes" : "**no**") |\n"
        } else {
            out += "| RSS flat over the soak (≤ 5% growth) | not measured in this run | |\n"
        }
        return out
    }

    private func ratio(_ a: Double?, _ b: Double?) -> String {
        guard let a, let b, b > 0 else { return "" }
        return String(format: "%.2f", a / b)
    }

    private func fmt(_ value: Double) -> String {
        value >= 100 ? String(Int(value.rounded())) : String(format: "%.1f", value)
    }

    private func mib(_ kib: Int) -> String { String(format: "%.1f", Double(kib) / 1024) }
}
