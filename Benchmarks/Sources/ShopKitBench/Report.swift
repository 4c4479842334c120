import ArgumentParser
import Foundation
import ShopKitBenchCore

/// Turns the JSON lines of a benchmark run into BENCHMARKS.md's tables: medians over the rounds, the spread,
/// and each client's ratio to AsyncHTTPClient and to the reference tool (wrk, or openssl s_time for handshakes).
struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Prints the Markdown tables for JSON-line results.")

    @Argument(help: "Files of JSON lines written by `run`, `tokens` and scripts/bench.")
    var inputs: [String]

    func validate() throws {
        for input in inputs where !FileManager.default.isReadableFile(atPath: input) {
            throw ValidationError("cannot read \(input)")
        }
    }

    func run() throws {
        var results: [BenchResult] = []
        for input in inputs {
            results += ReportTables.parse(jsonLines: try String(contentsOfFile: input, encoding: .utf8))
        }
        print(ReportTables(results: results).markdown())
    }
}
