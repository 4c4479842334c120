import Foundation
import Testing

/// The invariants of the model-based hostile test, checked on what every caller got (``Model/Call``) against
/// what the server received and did (``Model/Receipt``):
///
/// 1. **Its own response or a typed error.** A caller that got a response got status 200, its own token in the
///    header, and exactly its own body, and only where the server sent a whole response (a body framed by a bare
///    TCP close, or cut anywhere, is never a success). Every failure is an `HTTPSTransportError`, a `TLSError` or
///    a `CancellationError`.
/// 2. **Nothing sent twice unless idempotent and provably unprocessed.** A token the server received more than
///    once belongs to an idempotent method (GET, HEAD, PUT) with a body that can be replayed, was received at
///    most twice, and its first receipt was never answered: not one response byte before the HTTP/1.1 connection
///    closed (README: what the transport takes for a connection the server closed while idle), or an HTTP/2
///    stream above the GOAWAY's last stream id. A POST is received at most once. Every body the server received
///    is exactly its caller's. (Whether the HTTP/1.1 connection was *reused* is the client's view, which the
///    server cannot see: the long run found resends after a close on the server's first request of a connection,
///    so a connection can be leased before without a request reaching the server.)
/// 3. **No connection reused after doubt.** On HTTP/1.1, no request arrives on a connection after the one whose
///    response the server followed with stray bytes (or closed).
/// 4. **Everything ends by its deadline.** Every request ends within its request timeout plus a margin, and none
///    ends by a timer: the server never stalls for more than milliseconds.
enum ModelChecker {
    static func check(round: ModelRound, calls: [Model.Call], receipts: [Model.Receipt]) -> ModelReport {
        var violations: [String] = []
        var hangs: [String] = []
        let byToken = Dictionary(grouping: receipts, by: \.token)
        let callsByToken = Dictionary(uniqueKeysWithValues: calls.map { ($0.token, $0) })

        for call in calls {
            let received = byToken[call.token] ?? []
            let what = "\(call.method) \(call.token)\(call.streamedBody ? " (streamed body)" : "")\(call.cancelled ? " (cancelled)" : "")"
            switch call.outcome {
            case .hung(let why):
                hangs.append("\(what) did not end by its deadline (request timeout + margin): \(why)")
            case .failed(let error, let typed, let timer):
                if !typed { violations.append("\(what) failed with an untyped error: \(error)") }
                if timer && !call.cancelled {
                    hangs.append("\(what) ended by a timer after \(call.seconds) s (a hang cut short): \(error); server: \(describe(received))")
                }
            case .response(let status, let token, let body):
                let expected = call.method == "HEAD" ? [] : Model.responseBody(call.token)
                if status != 200 || token != call.token || body != expected {
                    let sample = String(decoding: body.prefix(24), as: UTF8.self).debugDescription
                    violations.append(
                        "\(what) got a response that is not its own: status \(status), token \(token ?? "none"), \(body.count) body bytes starting \(sample) (expected \(expected.count)); server: \(describe(received))")
                }
                if let last = received.last, !last.fate.deliversWholeResponse {
                    violations.append("\(what) succeeded although the server never sent it a whole response: \(describe(received))")
                } else if received.isEmpty {
                    violations.append("\(what) succeeded although the server never received it")
                }
            }
        }

        for (token, received) in byToken {
            guard let call = callsByToken[token] else {
                violations.append("the server received a request nobody sent: token \(token)")
                continue
            }
            for receipt in received where !receipt.bodyIntact {
                violations.append("the server received a body for \(call.method) \(token) that is not its caller's: \(receipt.plan)")
            }
            guard received.count > 1 else { continue }
            let idempotent = ["GET", "HEAD", "PUT"].contains(call.method)
            let earlierUnprocessed = received.dropLast().allSatisfy { receipt in
                switch receipt.fate {
                case .refusedByGoAway: return true
                case .cut(responseBytes: false): return true
                default: return false
                }
            }
            if !idempotent || !call.replayable || received.count > 2 || !earlierUnprocessed {
                violations.append("\(call.method) \(token) was sent \(received.count) times: \(describe(received))")
            }
        }

        if !round.http2 {
            for doubt in receipts where doubt.fate != .answered {
                let later = receipts.filter { $0.connection == doubt.connection && $0.indexOnConnection > doubt.indexOnConnection }
                for receipt in later {
                    violations.append(
                        "connection \(doubt.connection) was reused after doubt: \(receipt.method) \(receipt.token) came after \(doubt.token)'s \(doubt.plan)")
                }
            }
        }
        return ModelReport(round: round, calls: calls, receipts: receipts, violations: violations, hangs: hangs)
    }

    static func describe(_ receipts: [Model.Receipt]) -> String {
        receipts.isEmpty
            ? "never received"
            : receipts.map { "[conn \($0.connection) #\($0.indexOnConnection): \($0.plan)]" }.joined(separator: " ")
    }
}

/// One round's outcome: its calls, the server's log, and the violations found.
struct ModelReport: Sendable {
    let round: ModelRound
    let calls: [Model.Call]
    let receipts: [Model.Receipt]
    /// Violations of invariant 1-3.
    let violations: [String]
    /// Violations of invariant 4: requests that hung (cut short by a timer, or past their deadline).
    let hangs: [String]

    /// Records each violation (hangs included) as an issue, naming the seed that replays it.
    func recordViolations(sourceLocation: SourceLocation = #_sourceLocation) {
        record(violations + hangs, sourceLocation: sourceLocation)
    }

    private func record(_ violations: [String], sourceLocation: SourceLocation) {
        guard !violations.isEmpty else { return }
        let header = "model round \(round.testDescription) (replay: SHOPKIT_MODEL_SEED=\(round.seed)):"
        var message = header + "\n  " + violations.joined(separator: "\n  ")
        if ProcessInfo.processInfo.environment["SHOPKIT_MODEL_VERBOSE"] != nil {
            message += "\n the server's log, in order:\n  " + receipts.map {
                "\($0.method) \($0.token) [conn \($0.connection) #\($0.indexOnConnection)]: \($0.plan)"
            }.joined(separator: "\n  ")
            message += "\n the callers:\n  " + calls.map { "\($0.method) \($0.token): \($0.outcome) in \($0.seconds) s" }
                .joined(separator: "\n  ")
        }
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }

    /// Counts over many rounds, for the long run's summary.
    struct Totals: CustomStringConvertible {
        var rounds = 0, calls = 0, succeeded = 0, failed = 0, cancelled = 0, receipts = 0, resent = 0
        var doubtful = 0, violations = 0, hangs = 0, roundsWithViolations = 0
        var errors: [String: Int] = [:]
        var fates: [String: Int] = [:]

        mutating func add(_ report: ModelReport) {
            rounds += 1
            calls += report.calls.count
            receipts += report.receipts.count
            violations += report.violations.count + report.hangs.count
            hangs += report.hangs.count
            if !report.violations.isEmpty || !report.hangs.isEmpty { roundsWithViolations += 1 }
            resent += report.receipts.count - Set(report.receipts.map(\.token)).count
            for call in report.calls {
                if call.cancelled { cancelled += 1 }
                switch call.outcome {
                case .response: succeeded += 1
                case .failed(let error, _, _):
                    failed += 1
                    errors[String(error.prefix { $0 != "(" && $0 != ":" }), default: 0] += 1
                case .hung: failed += 1
                }
            }
            for receipt in report.receipts {
                let name: String
                switch receipt.fate {
                case .answered: name = "answered"
                case .answeredThenStray: name = "answered, then stray bytes"
                case .answeredThenClosed: name = "answered, then closed"
                case .cut(let bytes): name = bytes ? "cut after some response bytes" : "cut before any response byte"
                case .refusedByGoAway: name = "refused by GOAWAY"
                }
                fates[name, default: 0] += 1
                if receipt.fate == .answeredThenStray { doubtful += 1 }
            }
        }

        var description: String {
            """
            rounds \(rounds) (with a violation: \(roundsWithViolations)), requests \(calls): \(succeeded) own responses, \
            \(failed) typed errors, \(cancelled) cancelled by their callers; the server received \(receipts) \
            (\(resent) resends); violations \(violations), of which hangs \(hangs)
            server fates: \(fates.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            errors: \(errors.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            """
        }
    }
}
