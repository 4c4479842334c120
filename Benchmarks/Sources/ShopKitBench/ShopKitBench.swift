import ArgumentParser
import Foundation
import NIOPosix
import ShopKitBenchCore
import ShopKitPinning

/// `shopkit-bench`: one client, one workload, one process, one JSON line. scripts/bench drives it.
@main
struct ShopKitBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shopkit-bench",
        abstract: "Measures ShopKit's HTTPS transport beside AsyncHTTPClient and URLSession.",
        discussion: """
            Each subcommand measures one thing in its own process (so RSS numbers belong to one client) and \
            prints one JSON line per result. scripts/bench starts the servers and runs everything.
            Exit codes: 0 measured (or not measurable, with the reason), 1 the measurement failed, 64 bad arguments.
            """,
        subcommands: [Run.self, Tokens.self, Report.self])
}

/// The clients `run` knows.
enum ClientKind: String, CaseIterable, ExpressibleByArgument, Sendable {
    case shopkitPinned = "shopkit-pinned"
    case shopkitUnpinned = "shopkit-unpinned"
    /// AsyncHTTPClient, unpinned.
    case ahc
    /// AsyncHTTPClient with the leaf-only pin after the handshake (see ``AHCBenchClient``).
    case ahcLeafPin = "ahc-leafpin"
    case urlsession
}

extension Workload: ExpressibleByArgument {}

extension CertificateTransparencyPolicy.Mode: @retroactive ExpressibleByArgument {}

/// Runs one client on one workload and prints one JSON line.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Runs one client on one workload.")

    @Option(help: "Client: \(ClientKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var client: ClientKind

    @Option(help: "Workload: \(Workload.allCases.map(\.rawValue).joined(separator: ", ")).")
    var workload: Workload

    @Option(help: "Server base URL, https://127.0.0.1:PORT.")
    var url: String

    @Option(help: "PEM file of the root the clients trust (and nothing else).")
    var root: String

    @Option(name: .customLong("pin"), help: "An SPKI pin sha256/BASE64 (repeat: leaf, backup intermediate).")
    var pins: [String] = []

    @Option(help: "Measured requests (default: the workload's; --quick divides it by 10).")
    var requests: Int?

    @Flag(help: "A tenth of the requests.")
    var quick = false

    @Option(help: "Round number, copied into the result.")
    var round = 0

    @Flag(
        help: """
            ShopKit clients only: the workers' tasks prefer the transport's executor \
            (`withTaskExecutorPreference(transport.executor)`, the default event loop group), so no request \
            crosses between threads. The result's client gets the suffix -on-loop.
            """)
    var callerOnLoop = false

    @Option(
        help: """
            ShopKit clients only: the Certificate Transparency mode for every host (disabled, reportOnly, \
            enforced) instead of the library's default policy. Not disabled: one GET on a transport of its own \
            first logs the CT verdict into the result's note, and the result's client gets the suffix -ct \
            (-ct-reportonly for reportOnly).
            """)
    var ct: CertificateTransparencyPolicy.Mode?

    @Option(name: .customLong("ct-log-list"), help: "With --ct: the log list (Chrome's v3 JSON schema) instead of the bundled one.")
    var ctLogList: String?

    @Option(
        name: .customLong("ct-public-root"),
        help: "With --ct: the SPKI pin sha256/BASE64 of a root that counts as public (repeat); default the system's.")
    var ctPublicRoots: [String] = []

    func validate() throws {
        guard url.hasPrefix("https://"), URL(string: url) != nil else {
            throw ValidationError("--url must be https://HOST:PORT")
        }
        guard FileManager.default.isReadableFile(atPath: root) else {
            throw ValidationError("--root \(root) is not a readable PEM file")
        }
        if let requests, requests < 1 { throw ValidationError("--requests must be at least 1") }
        if (client == .shopkitPinned || client == .ahcLeafPin) && pins.isEmpty {
            throw ValidationError("--pin is required for \(client.rawValue)")
        }
        if callerOnLoop && client != .shopkitPinned && client != .shopkitUnpinned {
            throw ValidationError("--caller-on-loop is for the ShopKit clients only")
        }
        if ct != nil && client != .shopkitPinned && client != .shopkitUnpinned {
            throw ValidationError("--ct is for the ShopKit clients only")
        }
        if ct == nil && (ctLogList != nil || !ctPublicRoots.isEmpty) {
            throw ValidationError("--ct-log-list and --ct-public-root need --ct")
        }
        if let ctLogList, !FileManager.default.isReadableFile(atPath: ctLogList) {
            throw ValidationError("--ct-log-list \(ctLogList) is not a readable file")
        }
    }

    /// The CT policy `--ct` asks for, or nil for the library's default.
    private var ctSetting: BenchCTSetting? {
        ct.map { BenchCTSetting(mode: $0, logListPath: ctLogList, publicRootPins: ctPublicRoots) }
    }

    /// The suffix of the result's client name for `--ct`.
    private var ctSuffix: String {
        switch ct {
        case .enforced: return "-ct"
        case .reportOnly: return "-ct-reportonly"
        case .disabled, nil: return ""
        }
    }

    func run() async throws {
        let count = requests ?? max(1, workload.defaultRequests / (quick ? 10 : 1))
        var result = BenchResult(
            client: client.rawValue + ctSuffix + (callerOnLoop ? "-on-loop" : ""), workload: workload.rawValue,
            round: round)
        do {
            let ctNote = try await ctPreflight()
            guard let benchClient = try makeClient(count: count) else {
                result.status = "not measurable"
                result.note = "this client does not run this workload"
                print(result.jsonLine())
                return
            }
            var runner = WorkloadRunner(workload: workload, requests: count)
            if callerOnLoop { runner.executor = benchClient.loopExecutor }
            var measured = try await runner.run(benchClient)
            measured.connectionsOpened = benchClient.connectionsOpened
            try await benchClient.shutdown()
            measured.client = result.client
            measured.round = round
            measured.note = callerOnLoop ? "the caller's tasks prefer transport.executor (its event loop)" : note
            if let ctNote { measured.note = [measured.note, ctNote].compactMap { $0 }.joined(separator: "; ") }
            result = measured
            print(result.jsonLine())
        } catch {
            result.status = "failed"
            result.note = "\(error)"
            print(result.jsonLine())
            throw ExitCode.failure
        }
    }

    private var note: String? {
        switch client {
        case .ahc: return "unpinned: AsyncHTTPClient has no verification hook"
        case .ahcLeafPin: return "leaf-only SPKI pin checked after the handshake (connection debug initializer)"
        case .urlsession: return "cannot pin on Linux; trusts the test root via a private mount namespace"
        case .shopkitPinned: return "pins: leaf + backup intermediate, checked on the verified chain"
        case .shopkitUnpinned: return "same transport, no pin set"
        }
    }

    /// With `--ct`: what the CT policy does on this server, for the result's note. Not disabled: one GET on a
    /// transport of its own must log a CT verdict (a row that claims CT work must have done it), and under
    /// `enforced` it must be compliant (else the measured handshakes would all be refused).
    private func ctPreflight() async throws -> String? {
        guard let ct, let setting = ctSetting else { return nil }
        guard ct != .disabled else { return "CT disabled" }
        guard let base = URL(string: url) else { throw ValidationError("bad --url") }
        let rootPEM = try String(contentsOfFile: root, encoding: .utf8)
        let verdict = try await shopKitCTPreflight(
            baseURL: base, rootPEM: rootPEM, pins: client == .shopkitPinned ? pins : [], path: workload.path,
            ct: setting)
        guard let verdict else { throw BenchFailure("CT \(ct.rawValue): no CT verdict was logged on the preflight GET") }
        if ct == .enforced && !verdict.hasPrefix("compliant") {
            throw BenchFailure("CT enforced: the preflight GET's chain is not compliant: \(verdict)")
        }
        return "CT \(ct.rawValue) (\(ctLogList == nil ? "bundled log list" : "log list \(URL(fileURLWithPath: ctLogList!).lastPathComponent)")): \(verdict)"
    }

    private func makeClient(count: Int) throws -> (any BenchClient)? {
        guard let base = URL(string: url) else { throw ValidationError("bad --url") }
        let connections = workload.connections
        switch client {
        case .ahc, .ahcLeafPin:
            guard workload != .resumeECDSA && workload != .resumeRSA else {
                throw BenchFailure("AsyncHTTPClient does not resume TLS sessions; resume-* is ShopKit's workload")
            }
            let leafPins = client == .ahcLeafPin ? try pins.map(Self.digest) : []
            return try AHCBenchClient(
                baseURL: url, rootPEMPath: root, connections: connections, leafPins: leafPins,
                http2: workload.usesHTTP2Server)
        case .urlsession:
            // The h2-* rows compare the two clients that pick HTTP/2 in ALPN and multiplex on one connection.
            guard !workload.usesHTTP2Server else { return nil }
            return URLSessionBenchClient(baseURL: url, connections: connections)
        case .shopkitPinned, .shopkitUnpinned:
            let rootPEM = try String(contentsOfFile: root, encoding: .utf8)
            let variant: ShopKitVariant = client == .shopkitPinned ? .pinned : .unpinned
            return try makeShopKitClient(
                variant: variant, baseURL: base, rootPEM: rootPEM, pins: pins, workload: workload, ct: ctSetting)
        }
    }

    /// The 32 digest bytes of a `sha256/BASE64` pin.
    static func digest(_ pin: String) throws -> [UInt8] {
        guard pin.hasPrefix("sha256/"), let data = Data(base64Encoded: String(pin.dropFirst(7))), data.count == 32
        else { throw ValidationError("--pin \(pin) is not sha256/BASE64 of 32 bytes") }
        return Array(data)
    }
}
