import Foundation
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// `pin-check --hosts-file`: 200 local servers with mixed verdicts checked by the built binary, each reported
/// correctly, the exit status the worst verdict's; concurrency bounds the connections and sets the pace.
@Suite("PinCheck fleet", .serialized, .timeLimit(.minutes(3)))
struct PinCheckFleetTests {
    /// The five kinds of server, 40 of each, and the verdict each must get.
    enum Kind: Int, CaseIterable {
        case ok, pinMismatch, untrusted, hostnameMismatch, refused

        var verdict: String {
            ["ok", "pin-mismatch", "untrusted", "hostname-mismatch", "connect-failed"][rawValue]
        }
    }

    /// The servers: a port and its kind each; stop() releases them.
    struct Fleet {
        var servers: [(port: Int, kind: Kind)] = []
        var stops: [@Sendable () async -> Void] = []

        static func start(perKind: Int) async throws -> Fleet {
            let contexts: [Kind: TLSServerContext] = [
                .ok: try TLSServerContext(
                    certificateChainPEM: TestCertificates.standardChain(), privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa")),
                .untrusted: try TLSServerContext(
                    certificateChainPEM: TestCertificates.chain(["other-leaf-localhost", "other-intermediate", "other-root"]),
                    privateKeyPEM: TestCertificates.privateKey("other-leaf-localhost")),
                .hostnameMismatch: try TLSServerContext(
                    certificateChainPEM: TestCertificates.chain(["leaf-other-host", "intermediate-2", "intermediate-1"]),
                    privateKeyPEM: TestCertificates.privateKey("leaf-other-host")),
            ]
            var fleet = Fleet()
            for _ in 0..<perKind {
                for kind in Kind.allCases {
                    if kind == .refused {
                        let closed = try BoundClosedPort()
                        fleet.servers.append((closed.port, kind))
                        fleet.stops.append { closed.release() }
                    } else {
                        let server = try await LoopbackTLSServer.start(tlsContext: contexts[kind == .pinMismatch ? .ok : kind]!)
                        fleet.servers.append((server.port, kind))
                        fleet.stops.append { try? await server.shutdown() }
                    }
                }
            }
            return fleet
        }

        func stop() async { for stop in stops { await stop() } }

        /// The hosts file for the servers of `kinds`.
        func hostsFile(_ kinds: Set<Kind> = Set(Kind.allCases)) -> String {
            "# the fleet\n" + servers.filter { kinds.contains($0.kind) }.map { "127.0.0.1:\($0.port)" }.joined(separator: "\n")
        }

        /// One pins file for all: the ok servers' real pins, the mismatching servers' foreign pins, none for the rest.
        var pinsFile: String {
            var lines = ["# one file, every host's set"]
            for server in servers {
                switch server.kind {
                case .ok:
                    lines += ["[127.0.0.1:\(server.port)]", "current \(TestCertificates.pin("leaf-localhost-ecdsa"))",
                              "backup \(TestCertificates.pin("backup-intermediate"))"]
                case .pinMismatch:
                    lines += ["[127.0.0.1:\(server.port)]", "\(TestCertificates.pin("other-root"))",
                              "\(TestCertificates.pin("other-intermediate"))"]
                default: continue
                }
            }
            return lines.joined(separator: "\n")
        }
    }

    static func run(_ arguments: [String], hosts: String, pins: String? = nil) async throws -> BuiltBinary.Outcome {
        let hostsURL = try PinCheckBinary.temporaryFile(hosts, suffix: ".hosts")
        let caURL = try PinCheckBinary.temporaryFile(TestCertificates.certificate("root"))
        let pinsURL = try pins.map { try PinCheckBinary.temporaryFile($0, suffix: ".pins") }
        defer { for url in [hostsURL, caURL] + [pinsURL].compactMap({ $0 }) { try? FileManager.default.removeItem(at: url) } }
        // A wide timeout (a test that needs a short one passes its own, which comes later and wins): 200 handshakes
        // on a loaded 2-core machine can take far longer than a real network's.
        var all = ["--hosts-file", hostsURL.path, "--ca-file", caURL.path, "--timeout", "60"] + arguments
        if let pinsURL { all += ["--pins-file", pinsURL.path] }
        return try await PinCheckBinary.run(all)
    }

    @Test func twoHundredServersWithMixedVerdictsAreEachReportedCorrectly() async throws {
        let fleet = try await Fleet.start(perKind: 40)
        let json = try await Self.run(["--json", "--concurrency", "16"], hosts: fleet.hostsFile(), pins: fleet.pinsFile)
        await fleet.stop()

        #expect(json.status == 4, "stderr: \(json.stderr)")
        let objects = json.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == 200)
        var verdicts: [Int: String] = [:]
        for object in objects {
            if let port = object["port"] as? Int { verdicts[port] = object["verdict"] as? String }
        }
        for server in fleet.servers {
            #expect(verdicts[server.port] == server.kind.verdict, "127.0.0.1:\(server.port) (\(server.kind))")
        }
        // The same fields as a single check's --json.
        let first = try #require(objects.first)
        #expect(
            Set(first.keys) == [
                "host", "port", "servername", "verdict", "reason", "tlsVersion", "cipher", "alpn", "verifiedChain",
                "presentedChain", "configuredPins", "matchedPin", "warnings", "clientCertificate", "proxy",
                "pinsDocument", "certificateTransparency",
            ])
    }

    @Test func theExitStatusIsTheWorstVerdicts() async throws {
        let fleet = try await Fleet.start(perKind: 2)
        var statuses: [Int32] = []
        for kinds: Set<Kind> in [[.ok], [.ok, .pinMismatch], [.ok, .pinMismatch, .untrusted], [.ok, .hostnameMismatch, .untrusted]] {
            statuses.append(try await Self.run([], hosts: fleet.hostsFile(kinds), pins: fleet.pinsFile).status)
        }
        let table = try await Self.run([], hosts: fleet.hostsFile(), pins: fleet.pinsFile)
        await fleet.stop()
        #expect(statuses == [0, 1, 2, 3])

        // The summary table: a row per server in the hosts file's order, then the totals and the exit status.
        #expect(table.status == 4)
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("SERVER") == true)
        #expect(lines.last == "10 servers: 2 ok, 2 pin-mismatch, 2 untrusted, 2 hostname-mismatch, 2 connect-failed; exit 4")
        let rows = lines.dropFirst().dropLast()
        #expect(rows.map { $0.split(separator: " ").first.map(String.init) ?? "" } == fleet.servers.map { "127.0.0.1:\($0.port)" })
        #expect(zip(rows, fleet.servers).allSatisfy { row, server in row.split(separator: " ")[1] == server.kind.verdict })
        #expect(rows.first?.contains("pin \(TestCertificates.pin("leaf-localhost-ecdsa")) matched") == true)
    }

    /// 32 hosts that never answer, 0.5 s each: 16 at a time take two rounds (about 1 s), never 32 rounds.
    @Test func concurrencyBoundsConnectionsAndSetsThePace() async throws {
        let silent = try StalledListener()
        defer { silent.close() }
        let hosts = Array(repeating: "127.0.0.1:\(silent.port)", count: 32).joined(separator: "\n")
        let start = ContinuousClock.now
        let outcome = try await Self.run(["--timeout", "0.5", "--concurrency", "16"], hosts: hosts)
        let elapsed = ContinuousClock.now - start
        #expect(outcome.status == 4)
        #expect(outcome.stdout.contains("32 servers: 32 connect-failed; exit 4"))
        #expect(elapsed >= .seconds(1))
        #expect(elapsed < .seconds(4), "took \(elapsed)")
    }

    /// 1,000 real handshakes need no more memory than 10 (each report is printed and dropped): GNU time's
    /// maximum resident set size of the child (scripts/bootstrap installs `time`), 1,000 hosts against 10.
    /// Not in the AddressSanitizer pass (`ASAN_OPTIONS` set): ASan's allocator keeps and fragments freed memory,
    /// so there the child's RSS measures ASan, not pin-check; the plain pass runs it.
    @Test(.disabled(if: ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil, "RSS under ASan measures its allocator"))
    func aThousandHostsTakeTheMemoryOfAFew() async throws {
        let fleet = try await Fleet.start(perKind: 1)
        let ok = fleet.servers.filter { $0.kind == .ok || $0.kind == .pinMismatch }
        func hosts(_ count: Int) -> String { (0..<count).map { "127.0.0.1:\(ok[$0 % ok.count].port)" }.joined(separator: "\n") }
        var peaks: [Int] = []
        for count in [10, 1_000] {
            let hostsURL = try PinCheckBinary.temporaryFile(hosts(count), suffix: ".hosts")
            let pinsURL = try PinCheckBinary.temporaryFile(fleet.pinsFile, suffix: ".pins")
            defer { for url in [hostsURL, pinsURL] { try? FileManager.default.removeItem(at: url) } }
            let outcome = try await BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/time")).run([
                "-f", "maxrss=%M", PinCheckBinary.binary().url.path, "--hosts-file", hostsURL.path, "--pins-file",
                pinsURL.path, "--ca-file", PinCheckCLITests.rootPEM, "--json",
            ])
            #expect(outcome.stdout.split(separator: "\n").count == count)
            #expect(outcome.status == 1)  // the mismatching server's verdict
            let line = outcome.stderr.split(separator: "\n").last { $0.hasPrefix("maxrss=") } ?? ""
            peaks.append(Int(line.dropFirst("maxrss=".count)) ?? .max)
        }
        await fleet.stop()
        #expect(peaks[1] < peaks[0] + 8 * 1024, "max RSS: 10 hosts \(peaks[0]) KiB, 1000 hosts \(peaks[1]) KiB")
    }

    @Test("fleet usage errors exit 64", arguments: [
        (["--concurrency", "0"], "--concurrency must be from 1 to 1024"),
        (["--pin", "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="], "--pin does not apply to --hosts-file"),
        (["--print-config", "curl"], "--print-config does not apply to --hosts-file"),
        // A fleet check has no client certificate and no proxy: they were silently ignored.
        (["--cert", "client.pem", "--key", "client.key"], "--cert does not apply to --hosts-file"),
        (["--proxy", "http://127.0.0.1:1"], "--proxy does not apply to --hosts-file"),
        (["--proxy-from-env"], "--proxy-from-env does not apply to --hosts-file"),
    ])
    func usageErrors(arguments: [String], message: String) async throws {
        let outcome = try await Self.run(arguments, hosts: "127.0.0.1:1")
        #expect(outcome.status == 64)
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
    }

    /// `--verbose` with `--hosts-file`: each host's whole report, as a single check with `--verbose` prints it
    /// (OpenSSL's own text of a handshake failure included), as each host finishes; then the table. It was
    /// silently ignored. Without it, only the table.
    @Test func verbosePrintsEachHostsReportThenTheTable() async throws {
        let ok = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa")
        let notTLS = try await VectorServer.start(for: PinCheckVector.all.first { $0.server == "not-tls" }!)
        let hosts = "127.0.0.1:\(ok.port)\n127.0.0.1:\(notTLS.port)\n"
        let verbose: BuiltBinary.Outcome
        let plain: BuiltBinary.Outcome
        do {
            verbose = try await Self.run(["--verbose", "--concurrency", "1"], hosts: hosts)
            plain = try await Self.run([], hosts: hosts)
        } catch {
            try? await ok.shutdown()
            await notTLS.stop()
            throw error
        }
        try await ok.shutdown()
        await notTLS.stop()

        #expect(verbose.status == 4, "stderr: \(verbose.stderr)")
        // Each host's report, whole: the trusted one's chain, the other's reason and OpenSSL's text.
        #expect(verbose.stdout.contains("127.0.0.1 at 127.0.0.1:\(ok.port)\n"), "\(verbose.stdout)")
        #expect(verbose.stdout.contains("Verified chain (leaf to root):"), "\(verbose.stdout)")
        #expect(verbose.stdout.contains("127.0.0.1 at 127.0.0.1:\(notTLS.port)\n"), "\(verbose.stdout)")
        #expect(verbose.stdout.contains("\n  OpenSSL: "), "\(verbose.stdout)")
        #expect(verbose.stdout.contains("wrong version number"), "\(verbose.stdout)")
        // Then the table, last, as without --verbose.
        let table = try #require(verbose.stdout.range(of: "\nSERVER "), "no table:\n\(verbose.stdout)")
        #expect(verbose.stdout[table.upperBound...].contains("2 servers: 1 ok, 1 connect-failed; exit 4"))
        #expect(!verbose.stdout[table.upperBound...].contains("Verified chain"), "reports after the table")

        #expect(plain.status == 4)
        #expect(plain.stdout.hasPrefix("SERVER "), "\(plain.stdout)")
        #expect(!plain.stdout.contains("Verified chain"))
        #expect(!plain.stdout.contains("OpenSSL: "))
    }

    @Test func malformedFilesExit64NamingTheLine() async throws {
        let badHost = try await Self.run([], hosts: "127.0.0.1:1\nexample.com:99999")
        #expect(badHost.status == 64)
        #expect(badHost.stderr.contains("line 2"))
        let badPins = try await Self.run([], hosts: "127.0.0.1:1", pins: "\(TestCertificates.pin("root"))\n")
        #expect(badPins.status == 64)
        #expect(badPins.stderr.contains("line 1: a pin before the first [HOST]"))
        let single = try await PinCheckBinary.run(["127.0.0.1:1", "--concurrency", "4"])
        #expect(single.status == 64)
    }
}
