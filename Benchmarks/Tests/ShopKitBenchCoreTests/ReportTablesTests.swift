import Foundation
import ShopKitBenchCore
import Testing

@Suite("Benchmark statistics and report tables")
struct ReportTablesTests {
    private func result(
        _ client: String, _ workload: String, rate: Double, round: Int = 1, status: String = "ok"
    ) -> BenchResult {
        var result = BenchResult(client: client, workload: workload, round: round)
        result.status = status
        result.reqPerSec = rate
        result.requests = 100
        return result
    }

    @Test func nearestRankQuantiles() {
        var latencies = Latencies()
        for micros in 1...100 { latencies.append(.microseconds(micros)) }
        let sorted = latencies.nanos.sorted()
        #expect(latencies.quantileMicros(0.50, sorted: sorted) == 50)
        #expect(latencies.quantileMicros(0.99, sorted: sorted) == 99)
        #expect(latencies.quantileMicros(0.99, sorted: []) == nil)
    }

    @Test func medianOfOddAndEvenRounds() {
        let odd = ReportTables(results: [
            result("ahc", "keepalive-1", rate: 300), result("ahc", "keepalive-1", rate: 100),
            result("ahc", "keepalive-1", rate: 200),
        ])
        #expect(odd.median("ahc", "keepalive-1") { $0.reqPerSec } == 200)
        let even = ReportTables(results: [
            result("ahc", "keepalive-1", rate: 100), result("ahc", "keepalive-1", rate: 200),
        ])
        #expect(even.median("ahc", "keepalive-1") { $0.reqPerSec } == 150)
    }

    @Test func failedAndPendingRowsAreNotCounted() {
        let tables = ReportTables(results: [
            result("ahc", "keepalive-1", rate: 100), result("ahc", "keepalive-1", rate: 0, status: "failed"),
        ])
        #expect(tables.median("ahc", "keepalive-1") { $0.reqPerSec } == 100)
        #expect(tables.median("shopkit-pinned", "keepalive-1") { $0.reqPerSec } == nil)
    }

    @Test func resumptionIsComparedWithAHCFullHandshakes() {
        #expect(ReportTables.ahcBaseline(for: "resume-rsa") == "newconn-rsa")
        #expect(ReportTables.ahcBaseline(for: "keepalive-32") == "keepalive-32")
        #expect(ReportTables.reference(for: "newconn-ecdsa") == "openssl-s_time")
        #expect(ReportTables.reference(for: "body-1mib") == "wrk")
        #expect(ReportTables.reference(for: "h2-keepalive-32") == "h2load")
        #expect(ReportTables.reference(for: "h2-body-1mib") == "h2load")
    }

    @Test func parsesTheScriptsPartialLinesAndSkipsNoise() {
        let text = """
            discover_other_daemon: 1
            {"client":"secret-tool","workload":"token-keyring-read","status":"ok","requests":20,"seconds":0.5,"req_per_s":40}
            {"client":"urlsession","workload":"keepalive-1","round":2,"status":"not measurable","note":"why"}
            {not json
            """
        let results = ReportTables.parse(jsonLines: text)
        #expect(results.count == 2)
        #expect(results.first?.reqPerSec == 40)
        #expect(results.first?.round == 0)
        #expect(results.last?.status == "not measurable")
    }

    @Test func jsonLineRoundTrips() throws {
        var original = result("ahc", "soak", rate: 1234.5)
        original.rssBeforeKiB = 1000
        original.rssAfterKiB = 1040
        let line = original.jsonLine()
        #expect(!line.contains("\n"))
        #expect(line.contains("\"req_per_s\":1234.5"))
        let decoded = try #require(ReportTables.parse(jsonLines: line).first)
        #expect(decoded.rssAfterKiB == 1040)
        #expect(decoded.workload == "soak")
    }

    @Test func tableShowsRatiosAndTheBar() {
        var soak = result("shopkit-pinned", "soak", rate: 1000)
        soak.rssBeforeKiB = 1000
        soak.rssAfterKiB = 1100
        let markdown = ReportTables(results: [
            result("ahc", "keepalive-1", rate: 1000), result("wrk", "keepalive-1", rate: 4000),
            result("shopkit-pinned", "keepalive-1", rate: 1500),
            result("shopkit-unpinned", "keepalive-32", rate: 0, status: "not measurable"),
            soak,
        ]).markdown()
        #expect(markdown.contains("| keepalive-1 | shopkit-pinned | 1500 | 1500–1500 (n=1) |"))
        #expect(markdown.contains("| 1.50 | 0.38 |"))
        #expect(markdown.contains("| keepalive-32 | shopkit-unpinned | not measurable |"))
        #expect(markdown.contains("| keep-alive 64 B, 1 connection: ShopKit (pinned) ≥ 1.5× AHC | 1.50× | yes |"))
        #expect(markdown.contains("| keep-alive 64 B, 1 connection: ShopKit (pinned) ≥ 0.7× wrk | 0.38× | **no** |"))
        #expect(markdown.contains("| RSS flat over the soak (≤ 5% growth) | +10.0% | **no** |"))
        #expect(markdown.contains("| 1 MiB, keep-alive: ShopKit (pinned) ≥ 1.0× wrk | not measured in this run | |"))
    }

    @Test func barComparesHandshakesWithSTimeAndReportsTheBoringSSLGap() {
        let markdown = ReportTables(results: [
            result("shopkit-pinned", "newconn-ecdsa", rate: 400), result("openssl-s_time", "newconn-ecdsa", rate: 500),
            result("ahc", "newconn-ecdsa", rate: 800),
            result("shopkit-pinned", "resume-ecdsa", rate: 1300), result("openssl-s_time", "resume-ecdsa", rate: 1400),
            result("shopkit-pinned", "api-stack", rate: 960), result("shopkit-pinned", "api-bare", rate: 1000),
        ]).markdown()
        #expect(markdown.contains("| full handshake, ECDSA: ShopKit (pinned) ≥ 1.0× `openssl s_time -new` | 0.80× | **no** |"))
        #expect(markdown.contains("| full handshake, ECDSA: ShopKit (pinned) × AHC (BoringSSL) | 0.50× | (reported) |"))
        #expect(markdown.contains("| full handshake, ECDSA: `openssl s_time -new` × AHC (OpenSSL itself vs BoringSSL) | 0.62× | (reported) |"))
        #expect(markdown.contains("| resumed, ECDSA: ShopKit (pinned) ≥ 0.85× `openssl s_time -reuse` | 0.93× | yes |"))
        #expect(markdown.contains("| resumed, ECDSA: ShopKit (pinned) ≥ 1.6× AHC full handshakes | 1.62× | yes |"))
        #expect(markdown.contains("| API stack (retry → auth → dedup) ≥ 0.95× the bare transport (pinned) | 0.96× | yes |"))
        #expect(markdown.contains("| resumed, RSA: ShopKit (pinned) ≥ 0.85× `openssl s_time -reuse` | not measured in this run | |"))
    }

    @Test func http2RowsShowHandshakesAndBothRatios() {
        var shopkit = result("shopkit-pinned", "h2-keepalive-32", rate: 3000)
        shopkit.connectionsOpened = 1
        var ahc = result("ahc", "h2-keepalive-32", rate: 2000)
        ahc.connectionsOpened = 2
        let markdown = ReportTables(results: [
            shopkit, ahc, result("shopkit-pinned", "keepalive-32", rate: 2000),
        ]).markdown()
        #expect(markdown.contains("| h2-keepalive-32 | shopkit-pinned | 3000 | 3000–3000 (n=1) | 1 | 1.50 | 1.50 |"))
        #expect(markdown.contains("| h2-keepalive-32 | ahc | 2000 | 2000–2000 (n=1) | 2 | 1.00 |  |"))
        #expect(markdown.contains("AHC over h2, with one TLS handshake | 1.50×, 1 handshake(s) | yes |"))
        // Two handshakes miss the target whatever the rate.
        shopkit.connectionsOpened = 2
        let twice = ReportTables(results: [shopkit, ahc]).markdown()
        #expect(twice.contains("AHC over h2, with one TLS handshake | 1.50×, 2 handshake(s) | **no** |"))
    }

    @Test func http2IsComparedWithH2load() {
        let markdown = ReportTables(results: [
            result("shopkit-pinned", "h2-keepalive-32", rate: 3000), result("h2load", "h2-keepalive-32", rate: 10000),
            result("shopkit-pinned", "h2-body-1mib", rate: 900), result("h2load", "h2-body-1mib", rate: 1000),
        ]).markdown()
        #expect(markdown.contains("| h2-keepalive-32 | shopkit-pinned | 3000 | 3000–3000 (n=1) |"))
        #expect(markdown.contains("| h2-keepalive-32 | h2load | 10000 |"))
        #expect(markdown.contains("ShopKit (pinned) ≥ 0.35× h2load (1 connection, 32 streams) | 0.30× | **no** |"))
        #expect(markdown.contains("| HTTP/2, 1 MiB: ShopKit (pinned) ≥ 0.85× h2load (1 stream) | 0.90× | yes |"))
    }

    @Test func idleMemoryIsShownPerConnectionBesideAHC() {
        var shopkit = result("shopkit-pinned", "idle-1000", rate: 100)
        (shopkit.rssBeforeKiB, shopkit.rssAfterKiB) = (10_000, 30_000)
        var ahc = result("ahc", "idle-1000", rate: 100)
        (ahc.rssBeforeKiB, ahc.rssAfterKiB) = (20_000, 60_000)
        let markdown = ReportTables(results: [shopkit, ahc]).markdown()
        #expect(markdown.contains("### Memory with 1 000 idle HTTP/1.1 connections (idle-1000)"))
        #expect(markdown.contains("| shopkit-pinned | 29.3 | 29.3–29.3 | 20 | 0.50 |"))
        #expect(markdown.contains("| ahc | 58.6 | 58.6–58.6 | 40 | 1.00 |"))
        #expect(ReportTables(results: [shopkit]).idleSection().contains("| shopkit-pinned | 29.3 |"))
        #expect(ReportTables(results: [result("ahc", "keepalive-1", rate: 1)]).idleSection().isEmpty)
        #expect(markdown.contains("| memory, 1 000 idle HTTP/1.1 connections: ShopKit (pinned) RSS ≤ 1.0× AHC's | 0.50× | yes |"))
    }

    @Test func streamMemoryIsShownPerStreamBesideAHCAndAgainstTheBar() {
        var shopkit = result("shopkit-pinned", "h2-streams-1000", rate: 100)
        (shopkit.rssBeforeKiB, shopkit.rssAfterKiB) = (10_000, 40_000)
        var ahc = result("ahc", "h2-streams-1000", rate: 100)
        (ahc.rssBeforeKiB, ahc.rssAfterKiB) = (20_000, 30_000)
        let markdown = ReportTables(results: [shopkit, ahc]).markdown()
        #expect(markdown.contains("### Memory with 1 000 streams open on one HTTP/2 connection (h2-streams-1000)"))
        #expect(markdown.contains("| client | peak RSS with the streams open MiB (median) | min–max | growth per stream KiB | × AHC |"))
        #expect(markdown.contains("| shopkit-pinned | 39.1 | 39.1–39.1 | 30 | 1.33 |"))
        #expect(markdown.contains("| ahc | 29.3 | 29.3–29.3 | 10 | 1.00 |"))
        #expect(markdown.contains("| memory, 1 HTTP/2 connection with 1 000 streams open: ShopKit (pinned) RSS ≤ 1.0× AHC's | 1.33× | **no** |"))
        #expect(markdown.contains("| memory, 1 000 idle HTTP/1.1 connections: ShopKit (pinned) RSS ≤ 1.0× AHC's | not measured in this run | |"))
    }

    @Test func theCallerOnTheLoopRowIsComparedWithWrk() {
        let markdown = ReportTables(results: [
            result("shopkit-pinned-on-loop", "keepalive-1", rate: 3000), result("wrk", "keepalive-1", rate: 4000),
        ]).markdown()
        #expect(markdown.contains("| keepalive-1 | shopkit-pinned-on-loop | 3000 |"))
        #expect(markdown.contains("the caller on the transport's loop: ShopKit (pinned) ≥ 0.75× wrk | 0.75× | yes |"))
    }

    @Test func noHTTP2SectionWithoutHTTP2Rows() {
        let markdown = ReportTables(results: [result("ahc", "keepalive-1", rate: 1000)]).markdown()
        #expect(!markdown.contains("### HTTP/2"))
    }

    @Test func procStatusReadsThisProcess() throws {
        // The current size first: the peak only grows, so a peak read afterwards is at least that size even if
        // another thread allocated in between.
        let now = try #require(ProcStatus.rssKiB())
        let peak = try #require(ProcStatus.peakRSSKiB())
        #expect(peak >= now)
        #expect(now > 0)
    }
}
