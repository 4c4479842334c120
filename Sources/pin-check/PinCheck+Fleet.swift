import ArgumentParser
import Foundation
import ShopKitInspector
import ShopKitPinning

extension PinCheck {
    /// The most `--concurrency` accepted.
    static let maximumConcurrency = 1_024

    /// `--hosts-file`: which options apply (the rest are usage errors, never silently ignored).
    func validateFleet() throws {
        for (given, option) in [
            (!pins.isEmpty, "--pin"), (serverName != nil, "--servername"), (printConfig != nil, "--print-config"),
            (allowStaticRSA, "--allow-static-rsa"), (pinsDocument != nil, "--pins-document"),
        ] where given {
            throw ValidationError("\(option) does not apply to --hosts-file (put each host's pins in --pins-file)")
        }
        // A fleet check connects directly and presents no client certificate.
        for (given, option) in [
            (certFile != nil, "--cert"), (keyFile != nil, "--key"), (proxyURL != nil, "--proxy"),
            (proxyFromEnvironment, "--proxy-from-env"),
        ] where given {
            throw ValidationError(
                "\(option) does not apply to --hosts-file: a fleet check connects directly, without a client "
                    + "certificate; check such a server on its own (pin-check HOST[:PORT] \(option) ...)")
        }
        if let concurrency, !(1...Self.maximumConcurrency).contains(concurrency) {
            throw ValidationError("--concurrency must be from 1 to \(Self.maximumConcurrency)")
        }
    }

    /// Checks every host of the hosts file; prints a JSON line per host as it finishes (`--json`) or a summary
    /// table at the end, preceded with `--verbose` by each host's whole report (as a single check with `--verbose`
    /// prints it) as it finishes; returns the worst (highest) verdict exit code.
    func runFleet(_ path: String) async throws(Failure) -> Int32 {
        let addresses: [ServerAddress]
        do { addresses = try HostsFile.parse(try readFile(path, option: "--hosts-file")) } catch let error as Failure {
            throw error
        } catch {
            throw Failure(.usage, "--hosts-file \(path): \(error)")
        }
        var pinsFileContents: HostPinsFile?
        if let pinsFile {
            let text = try readFile(pinsFile, option: "--pins-file")
            do { pinsFileContents = try HostPinsFile(parsing: text) } catch {
                throw Failure(.usage, "--pins-file \(pinsFile): \(error) (with --hosts-file: PIN lines under [HOST] headers)")
            }
        }
        let pins = ReplaceablePins(pinsFileContents)
        // Before the first check starts: from then on SIGHUP reloads the pins file (without one, SIGHUP keeps its
        // default action and ends the run).
        let reloader = pinsFile.map { PinsReloader(path: $0, into: pins) }
        defer { reloader?.stop() }
        var fleet = FleetInspector(
            addresses: addresses, pins: pins,
            trustAnchorsPEM: try caFile.map { path throws(Failure) in try readFile(path, option: "--ca-file") },
            timeout: .seconds(timeout ?? 10), concurrency: concurrency ?? 16)
        (fleet.certificateTransparency, fleet.certificateTransparencyLogListSource) = try certificateTransparencyPolicy()
        var rows: [FleetRow?] = Array(repeating: nil, count: addresses.count)
        var worst: Int32 = 0
        let json = self.json
        let verbose = self.verbose
        do {
            try await fleet.run { index, report in
                worst = max(worst, report.verdict.exitCode)
                // Written at once (not buffered), so a CI log shows each host as it finishes; nothing but the row is
                // kept, so many hosts take the memory of a few.
                if json {
                    FileHandle.standardOutput.write(Data((report.json(pretty: false) + "\n").utf8))
                } else {
                    if verbose { FileHandle.standardOutput.write(Data((report.text(verbose: true) + "\n\n").utf8)) }
                    rows[index] = FleetRow(report)
                }
            }
        } catch {
            throw failure(for: error)
        }
        if !json { print(FleetRow.table(rows.compactMap { $0 }, worst: worst)) }
        return worst
    }
}

/// One line of the fleet summary: only what the table shows, so the rows of many hosts stay small.
struct FleetRow {
    let server: String
    let verdict: ServerReport.Verdict
    /// The CT verdict (`compliant`, `not-compliant`, `exempt`, `no-log-list`, `not-checked`), `-` when none was made.
    let ct: String
    let detail: String

    init(_ report: ServerReport) {
        server = ServerAddress(host: report.host, port: report.port).description
        verdict = report.verdict
        ct = report.certificateTransparency?.verdict ?? "-"
        switch report.verdict {
        case .ok:
            detail = report.matchedPin.map { "pin \($0) matched" }
                ?? (report.configuredPins.isEmpty ? "no pins for this host; chain and hostname ok" : "ok")
        default:
            let reason = (report.plainReason ?? report.reason ?? "").split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            detail = reason.count > 100 ? String(reason.prefix(99)) + "…" : reason
        }
    }

    /// The table (hosts in the hosts file's order) and a totals line with the exit status.
    static func table(_ rows: [FleetRow], worst: Int32) -> String {
        let width = max("SERVER".count, rows.map(\.server.count).max() ?? 0)
        let verdictWidth = ServerReport.Verdict.allCases.map(\.rawValue.count).max() ?? 0
        func pad(_ text: String, _ count: Int) -> String { text + String(repeating: " ", count: max(0, count - text.count)) }
        let ctWidth = "not-compliant".count
        var lines = [pad("SERVER", width) + "  " + pad("VERDICT", verdictWidth) + "  " + pad("CT", ctWidth) + "  DETAIL"]
        lines += rows.map {
            pad($0.server, width) + "  " + pad($0.verdict.rawValue, verdictWidth) + "  " + pad($0.ct, ctWidth) + "  "
                + $0.detail
        }
        let counts = ServerReport.Verdict.allCases.compactMap { verdict -> String? in
            let count = rows.filter { $0.verdict == verdict }.count
            return count == 0 ? nil : "\(count) \(verdict.rawValue)"
        }
        lines.append("\(rows.count) servers: \(counts.joined(separator: ", ")); exit \(worst)")
        return lines.joined(separator: "\n")
    }
}
