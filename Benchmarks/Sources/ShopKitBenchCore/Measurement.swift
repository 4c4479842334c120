import Foundation

/// One measurement: one client, one workload, one process. Printed as one JSON line.
public struct BenchResult: Codable, Sendable {
    /// Which client: `ahc`, `urlsession`, `shopkit-pinned`, `shopkit-unpinned`, `wrk`, `openssl-s_time`, …
    public var client: String
    /// Which workload (see ``Workload``).
    public var workload: String
    /// Which interleaved round this was (0 = not part of rounds).
    public var round: Int = 0
    /// `ok`, `failed` or `not measurable` (with the reason in `note`).
    public var status: String = "ok"
    /// Why, when not `ok`; what the numbers mean, when that is not obvious.
    public var note: String?
    public var requests: Int = 0
    public var seconds: Double = 0
    public var reqPerSec: Double = 0
    public var p50Micros: Double?
    public var p99Micros: Double?
    public var mibPerSec: Double?
    /// Peak resident set (VmHWM) of the measuring process, in KiB.
    public var peakRSSKiB: Int?
    /// VmRSS after warm-up and after the measured requests (soak), in KiB.
    public var rssBeforeKiB: Int?
    public var rssAfterKiB: Int?
    /// TLS connections the client opened in the process (warm-up included): one handshake each. Set by the
    /// clients that can count them (ShopKit through its debug log, AsyncHTTPClient through its connection
    /// debug initializers) on the HTTP/2 workloads.
    public var connectionsOpened: Int?

    enum CodingKeys: String, CodingKey {
        case client, workload, round, status, note, requests, seconds
        case reqPerSec = "req_per_s"
        case p50Micros = "p50_us"
        case p99Micros = "p99_us"
        case mibPerSec = "mib_per_s"
        case peakRSSKiB = "peak_rss_kib"
        case rssBeforeKiB = "rss_before_kib"
        case rssAfterKiB = "rss_after_kib"
        case connectionsOpened = "connections_opened"
    }

    public init(client: String, workload: String, round: Int = 0) {
        self.client = client
        self.workload = workload
        self.round = round
    }

    /// Lenient: lines written by scripts/bench for references and failures carry only some fields.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        client = try c.decode(String.self, forKey: .client)
        workload = try c.decode(String.self, forKey: .workload)
        round = try c.decodeIfPresent(Int.self, forKey: .round) ?? 0
        status = try c.decodeIfPresent(String.self, forKey: .status) ?? "ok"
        note = try c.decodeIfPresent(String.self, forKey: .note)
        requests = try c.decodeIfPresent(Int.self, forKey: .requests) ?? 0
        seconds = try c.decodeIfPresent(Double.self, forKey: .seconds) ?? 0
        reqPerSec = try c.decodeIfPresent(Double.self, forKey: .reqPerSec) ?? 0
        p50Micros = try c.decodeIfPresent(Double.self, forKey: .p50Micros)
        p99Micros = try c.decodeIfPresent(Double.self, forKey: .p99Micros)
        mibPerSec = try c.decodeIfPresent(Double.self, forKey: .mibPerSec)
        peakRSSKiB = try c.decodeIfPresent(Int.self, forKey: .peakRSSKiB)
        rssBeforeKiB = try c.decodeIfPresent(Int.self, forKey: .rssBeforeKiB)
        rssAfterKiB = try c.decodeIfPresent(Int.self, forKey: .rssAfterKiB)
        connectionsOpened = try c.decodeIfPresent(Int.self, forKey: .connectionsOpened)
    }

    /// The result as one JSON line (sorted keys, so lines diff cleanly).
    public func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// Reads this process's memory counters from `/proc/self/status`.
public enum ProcStatus {
    /// Peak resident set size (VmHWM) in KiB.
    public static func peakRSSKiB() -> Int? { field("VmHWM:") }
    /// Current resident set size (VmRSS) in KiB.
    public static func rssKiB() -> Int? { field("VmRSS:") }

    private static func field(_ name: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            return Int(line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }
}

/// Latency samples in nanoseconds and the statistics the table needs.
public struct Latencies: Sendable {
    public init() {}

    public var nanos: [UInt64] = []

    public mutating func append(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        nanos.append(UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000))
    }

    public mutating func append(contentsOf other: Latencies) { nanos.append(contentsOf: other.nanos) }

    /// The `q`-quantile (0…1) in microseconds, nearest-rank on the sorted samples.
    public func quantileMicros(_ q: Double, sorted: [UInt64]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[min(max(rank, 0), sorted.count - 1)]) / 1000
    }
}

extension Duration {
    /// The duration in seconds as a `Double`.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
