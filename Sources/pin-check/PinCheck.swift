import ArgumentParser
import Foundation
import ShopKitCore
import ShopKitHTTPS
import ShopKitInspector
import ShopKitPinning
import ShopKitTLS

/// Shows a server's verified chain and its SPKI pins, and checks a pin set against it.
///
/// Thin: parsing and printing only; `ServerInspector`, `PinsFile` and `PEMPin` do the work.
struct PinCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check",
        abstract: "Show a TLS server's verified chain and its SPKI pins, and check a pin set.",
        discussion: """
            Pins match only certificates on the chain OpenSSL verified, never extra certificates a server sends.
            --pem and --demo take no other option.

            Many servers: --hosts-file FILE (one HOST[:PORT] a line) checks them concurrently (--concurrency, default
            16; --timeout per host). Its --pins-file holds every host's pins under [HOST] or [HOST:PORT] headers.
            Prints a summary table, or one JSON object per line with --json; with --verbose, each host's whole report
            (as a single check with --verbose prints it) as it finishes, then the table. Exits with the worst
            (highest) verdict code of all hosts. --cert, --key and the proxy options do not apply to --hosts-file. While it runs, SIGHUP re-reads --pins-file: checks that start afterwards use the new
            pins, checks in flight keep theirs; each reload is announced on standard error, and a file that cannot
            be read or parsed is reported there (file and line) and the previous pins stay. Without --pins-file,
            SIGHUP ends pin-check as it ends other programs.

            Certificate Transparency: every check shows the SCTs the server delivered (embedded, TLS extension, OCSP):
            each one's log, operator, log ID, timestamp, source and validity, and the policy's verdict, judged as apps
            judge them. --ct MODE picks the mode (report-only by default, as in apps; enforced; disabled asks for no
            SCTs). --ct-log-list FILE gives a log list in Chrome's v3 schema: ShopKit's bundled list has no logs, so
            without it the verdict is "no log list". Only chains ending at a public root are judged (the system's
            Mozilla roots, or the roots of --ct-public-root PEMFILE); others are exempt. A list older than 70 days is
            stale: enforced then acts as report-only, as in apps. With --hosts-file the table has a CT column.

            New backup key: pin-check backup-key --host HOST --out DIR (see pin-check backup-key --help).
            Signed pin updates: pin-check pins-document, sign-pins and verify-pins (see each one's --help).
            CT log lists: pin-check log-list FILE checks one as apps load it; signed log-list updates:
            pin-check log-list-document, sign-log-list and verify-log-list (see each one's --help).

            Exit status:
              0   trusted, hostname ok, and no pins given or one matches (with --pins-document: the document's
                  set for the host lets apps connect: a pin matches, or the set is report-only, or it has expired
                  in a document without strictHosts; the last two are reported as warnings)
              1   trusted and hostname ok, but no pin matches (with --pins-document: no pin of an enforced set
                  matches, or the host's set has expired in a document with strictHosts, which apps refuse)
              2   chain not trusted (unknown root, expired, missing intermediate, weak key, ...)
              3   hostname mismatch
              4   connection or TLS handshake failure (refused, timeout, protocol too old, not TLS, a client
                  certificate required or refused, or the proxy refused the tunnel, asked for credentials, or
                  could not be reached)
              5   --ct enforced (and a log list that is not stale): the chain is trusted and the name matches, but its
                  SCTs do not follow the CT policy, so the handshake was ended (apps with CT enforced refuse it); the
                  report shows the SCTs and why
              64  usage error (malformed HOST:PORT or pin, a HOST or --servername that is no host name, such as
                  127.1, 0x7f000001, ex_ample.com or a non-ASCII name; unreadable file, options that do not go
                  together)
              65  --pins-document: the document is refused, as verify-pins refuses it (signature, audience,
                  version, dates, validity)
              69  cannot check on this machine (OpenSSL or the system trust store failed; --demo without TestCerts/)
              70  --demo: a check did not end as expected
            """,
        version: ShopKitVersion.current)

    @Argument(help: "The server, HOST[:PORT] (port 443 by default; IPv6 in brackets: [::1]:8443).")
    var server: String?

    @Option(name: .customLong("pin"), help: "A pin to check, sha256/BASE64 (curl's sha256//BASE64 too). Repeatable.")
    var pins: [String] = []

    @Option(name: .customLong("pins-file"), help: "A file of pins: PIN or NAME PIN per line, '#' comments (with --hosts-file: under [HOST] headers, re-read on SIGHUP).")
    var pinsFile: String?

    @Option(
        name: .customLong("pins-document"),
        help: "Check as apps will after the update: the signed pin-set document (JWS) is checked as verify-pins checks it (exit 65 if refused), then its set for the host is applied as apps apply it (strictHosts, report-only, expiration); needs --pubkey and --audience.")
    var pinsDocument: String?

    @Option(name: .customLong("pubkey"), help: "With --pins-document: a trusted Ed25519 public key, KID=FILE or FILE. Repeatable.")
    var publicKeys: [String] = []

    @Option(help: "With --pins-document: the app's identifier, as its PinSetVerifier(audience:) names it: the document's audience must be this (as verify-pins --audience).")
    var audience: String?

    @Option(name: .customLong("current-version"), help: "With --pins-document: refuse a document not above this version (default 0, as verify-pins).")
    var currentVersion: Int?

    @Option(name: .customLong("ca-file"), help: "PEM trust anchors replacing the system roots (like curl --cacert).")
    var caFile: String?

    @Option(name: .customLong("cert"), help: "A client certificate chain (PEM, leaf first) for servers that ask for one; needs --key.")
    var certFile: String?

    @Option(name: .customLong("key"), help: "The private key of --cert (PEM, unencrypted).")
    var keyFile: String?

    @Option(name: .customLong("servername"), help: "The name sent as SNI and checked against the SANs (default HOST).")
    var serverName: String?

    @Option(help: "Seconds allowed for connect and handshake (default 10).")
    var timeout: Double?

    @Option(
        name: .customLong("proxy"),
        help: "Reach the server through this HTTP proxy's CONNECT tunnel: http://HOST:PORT or https://HOST:PORT (no credentials on the command line; use --proxy-from-env).")
    var proxyURL: String?

    @Flag(
        name: .customLong("proxy-from-env"),
        help: "Use HTTPS_PROXY/https_proxy (which may hold user:password) and NO_PROXY from the environment, as curl does.")
    var proxyFromEnvironment = false

    @Flag(
        name: .customLong("allow-static-rsa"),
        help: "Allow TLS 1.2 static RSA key exchange (no forward secrecy) for legacy servers; reported as a warning.")
    var allowStaticRSA = false

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Flag(help: "With text output: add OpenSSL's own error text to a handshake failure (JSON always has it); with --hosts-file, print each host's whole report before the table.")
    var verbose = false

    @Option(name: .customLong("print-config"), help: "Print the leaf and intermediate pins as shopkit, okhttp, curl or android.")
    var printConfig: PinConfigFormat?

    @Option(name: .customLong("pem"), help: "Print the pins of the certificates or public keys in a PEM file (offline).")
    var pemFile: String?

    @Flag(help: "Start a local TLS server from the source tree's TestCerts/ and check it (no network).")
    var demo = false

    @Option(
        name: .customLong("ct"),
        help: "Certificate Transparency mode to evaluate: disabled, report-only (default, as in apps) or enforced (a non-compliant chain is refused: exit 5).")
    var ctMode: CTModeOption?

    @Option(name: .customLong("ct-log-list"), help: "A CT log list in Chrome's v3 schema, instead of ShopKit's bundled list (which has no logs).")
    var ctLogList: String?

    @Option(
        name: .customLong("ct-public-root"),
        help: "A PEM file of roots that count as public for CT, instead of the system's Mozilla roots (chains ending elsewhere are exempt). Repeatable.")
    var ctPublicRoots: [String] = []

    @Option(name: .customLong("hosts-file"), help: "Check every HOST[:PORT] line of FILE concurrently ('#' comments).")
    var hostsFile: String?

    @Option(help: "With --hosts-file: the most connections at once (default 16, at most 1024).")
    var concurrency: Int?

    /// The server-check options given, by their flag names.
    private var serverOptionsGiven: [String] {
        [
            (!pins.isEmpty, "--pin"), (pinsFile != nil, "--pins-file"), (pinsDocument != nil, "--pins-document"),
            (!publicKeys.isEmpty, "--pubkey"), (audience != nil, "--audience"), (currentVersion != nil, "--current-version"),
            (caFile != nil, "--ca-file"),
            (serverName != nil, "--servername"), (timeout != nil, "--timeout"), (json, "--json"),
            (printConfig != nil, "--print-config"), (concurrency != nil, "--concurrency"), (certFile != nil, "--cert"),
            (keyFile != nil, "--key"), (proxyURL != nil, "--proxy"), (proxyFromEnvironment, "--proxy-from-env"),
            (verbose, "--verbose"),
        ].filter(\.0).map(\.1) + certificateTransparencyOptionsGiven
    }

    /// The CT options given, by their flag names.
    private var certificateTransparencyOptionsGiven: [String] {
        let given: [(Bool, String)] = [
            (ctMode != nil, "--ct"), (ctLogList != nil, "--ct-log-list"), (!ctPublicRoots.isEmpty, "--ct-public-root"),
        ]
        return given.filter(\.0).map(\.1)
    }

    func validate() throws {
        let modes = [
            server.map { _ in "HOST[:PORT]" }, pemFile.map { _ in "--pem" }, demo ? "--demo" : nil,
            hostsFile.map { _ in "--hosts-file" },
        ].compactMap { $0 }
        guard modes.count == 1 else {
            let clash = modes.isEmpty ? "" : "\(modes.joined(separator: " and ")) exclude each other: "
            throw ValidationError(
                "\(clash)give \(modes.isEmpty ? "" : "exactly ")one of HOST[:PORT], --pem FILE or --demo, "
                    + "or --hosts-file FILE for many servers")
        }
        if modes[0] == "--hosts-file" {
            try validateFleet()
        } else if modes[0] != "HOST[:PORT]", let option = serverOptionsGiven.first {
            throw ValidationError("\(option) does not apply to \(modes[0]), which takes no other option")
        } else if concurrency != nil {
            throw ValidationError("--concurrency applies to --hosts-file only")
        }
        if json, printConfig != nil { throw ValidationError("--print-config prints text: leave out --json") }
        if let timeout, !(timeout > 0 && timeout <= 3600) {
            throw ValidationError("--timeout must be more than 0 and at most 3600 seconds")
        }
        if let serverName, serverName.isEmpty { throw ValidationError("--servername must not be empty") }
        if (certFile == nil) != (keyFile == nil) { throw ValidationError("--cert and --key go together: give both") }
        if (pinsDocument == nil) != publicKeys.isEmpty {
            throw ValidationError("--pins-document and --pubkey go together: give the document and the app's public keys")
        }
        if pinsDocument == nil, audience != nil || currentVersion != nil {
            throw ValidationError("--audience and --current-version apply to --pins-document only")
        }
        if pinsDocument != nil, audience == nil {
            throw ValidationError(
                "--pins-document needs --audience APP (the app's identifier, as its PinSetVerifier(audience:) names it), as verify-pins does")
        }
        if pinsDocument != nil, !pins.isEmpty || pinsFile != nil {
            throw ValidationError(
                "--pins-document applies the document's pins as apps do: leave out --pin and --pins-file (check them on their own)")
        }
        if proxyURL != nil, proxyFromEnvironment { throw ValidationError("--proxy and --proxy-from-env exclude each other") }
        _ = try proxy()
    }

    /// The proxy from `--proxy` or `--proxy-from-env`, or nil.
    ///
    /// - Throws: `ValidationError` (exit 64) for an unusable URL, and for credentials in `--proxy`: argv is
    ///   visible to every user of the machine.
    func proxy() throws -> ProxyConfiguration? {
        do {
            if proxyFromEnvironment { return try ProxyConfiguration.fromEnvironment() }
            guard let proxyURL else { return nil }
            guard let url = URL(string: proxyURL.contains("://") ? proxyURL : "http://" + proxyURL) else {
                throw ValidationError("--proxy: not a URL; expected http://HOST:PORT or https://HOST:PORT")
            }
            guard url.user == nil, url.password == nil else {
                throw ValidationError(
                    "--proxy: leave credentials out of the command line (other users can read it); put the URL with user:password in HTTPS_PROXY and pass --proxy-from-env")
            }
            return try ProxyConfiguration(url: url)
        } catch let error as HTTPSTransportError {
            throw ValidationError("\(proxyFromEnvironment ? "--proxy-from-env" : "--proxy"): \(error)")
        }
    }

    /// Runs the mode given and returns the exit status (a verdict's, or 0).
    func execute() async throws(Failure) -> Int32 {
        if let pemFile { return try printPEMPins(pemFile) }
        if demo { return try await runDemo() }
        if let hostsFile { return try await runFleet(hostsFile) }
        let inspector = try makeInspector()
        let report: ServerReport
        do { report = try await inspector.inspect() } catch { throw failure(for: error) }
        print(json ? report.json() : report.text(verbose: verbose))
        if let printConfig {
            if let config = printConfig.render(report) {
                print("\n\(printConfig.rawValue) configuration:\n\(config)")
            } else {
                print("no verified chain: nothing to print for --print-config")
            }
        }
        return report.verdict.exitCode
    }

    private func makeInspector() throws(Failure) -> ServerInspector {
        let address: ServerAddress
        do { address = try ServerAddress(parsing: server ?? "") } catch { throw Failure(.usage, error.description) }
        // Both names are made canonical (or refused) before anything connects: a form a resolver reads as an address
        // (`127.1`, `0x7f000001`), an underscore or a non-ASCII name is the caller's input, not a handshake failure.
        do { _ = try ServerName(address.host) } catch { throw Failure(.usage, "HOST: \(error)") }
        if let serverName {
            do { _ = try ServerName(serverName) } catch { throw Failure(.usage, "--servername: \(error)") }
        }
        var parsed: [SPKIPin] = []
        for text in pins {
            do { parsed.append(try SPKIPin(text)) } catch { throw Failure(.usage, "--pin \(text): \(error)") }
        }
        if let pinsFile {
            let text = try readFile(pinsFile, option: "--pins-file")
            do { parsed += try PinsFile.parse(text) } catch {
                throw Failure(.usage, "--pins-file \(pinsFile): \(error)")
            }
        }
        var documentPolicy: PinningPolicy?
        if let pinsDocument {
            let (policy, documentPins) = try self.documentPolicy(pinsDocument, host: serverName ?? address.host)
            (documentPolicy, parsed) = (policy, documentPins)
        }
        var inspector = ServerInspector(
            address: address, serverName: serverName, pins: parsed,
            trustAnchorsPEM: try caFile.map { path throws(Failure) in try readFile(path, option: "--ca-file") },
            timeout: .seconds(timeout ?? 10),
            proxy: (try? proxy()) ?? nil)
        inspector.allowsStaticRSAKeyExchange = allowStaticRSA
        (inspector.certificateTransparency, inspector.certificateTransparencyLogListSource) =
            try certificateTransparencyPolicy()
        inspector.documentPolicy = documentPolicy
        if let certFile, let keyFile {
            do { inspector.clientIdentity = try ClientIdentity.pemFiles(certificateChain: certFile, privateKey: keyFile) } catch {
                throw Failure(.usage, "--cert \(certFile) --key \(keyFile): \(error)")
            }
        }
        return inspector
    }

    /// A failure before connecting: the caller's input (64) or this machine's TLS setup (69).
    func failure(for error: TLSContextError) -> Failure {
        switch error.kind {
        case .trustAnchors: return Failure(.usage, "--ca-file \(caFile ?? ""): \(error)")
        case .invalidInput: return Failure(.usage, error.description)
        case .system: return Failure(.unavailable, "cannot check on this machine: \(error)")
        }
    }

    private func printPEMPins(_ path: String) throws(Failure) -> Int32 {
        let text = try readFile(path, option: "--pem")
        let entries: [PEMPin]
        do { entries = try PEMPin.read(pem: text) } catch { throw Failure(.usage, "--pem \(path): \(error)") }
        for entry in entries {
            print("\(entry.pin)  \(entry.subject) (\(entry.key))")
        }
        return 0
    }

    func readFile(_ path: String, option: String) throws(Failure) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure(.usage, "\(option) \(path): cannot read the file (check the path and permissions)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

extension PinConfigFormat: ExpressibleByArgument {}

/// `--ct`'s values, spelled as pin-check spells modes elsewhere (`report-only`).
enum CTModeOption: String, ExpressibleByArgument, CaseIterable {
    case disabled
    case reportOnly = "report-only"
    case enforced

    var mode: CertificateTransparencyPolicy.Mode {
        switch self {
        case .disabled: return .disabled
        case .reportOnly: return .reportOnly
        case .enforced: return .enforced
        }
    }
}

extension PinCheck {
    /// The CT policy of `--ct`, `--ct-log-list` and `--ct-public-root`, and where its list came from (`bundled` or
    /// the file's path).
    ///
    /// - Throws: `Failure` (64) for a list file that cannot be read or is not a v3 log list, and for a root file
    ///   without a certificate.
    func certificateTransparencyPolicy() throws(Failure) -> (CertificateTransparencyPolicy, String) {
        var logList = CTLogList.bundled
        var source = "bundled"
        if let ctLogList {
            guard let data = FileManager.default.contents(atPath: ctLogList) else {
                throw Failure(.usage, "--ct-log-list \(ctLogList): cannot read the file (check the path and permissions)")
            }
            do { logList = try CTLogList(json: data) } catch {
                throw Failure(.usage, "--ct-log-list \(ctLogList): not a log list in Chrome's v3 schema: \(error)")
            }
            source = ctLogList
        }
        var publicRoots = CertificateTransparencyPolicy.PublicRoots.system
        if !ctPublicRoots.isEmpty {
            var pins: Set<SPKIPin> = []
            for path in ctPublicRoots {
                let text = try readFile(path, option: "--ct-public-root")
                do { pins.formUnion(try PEMPin.read(pem: text).map(\.pin)) } catch {
                    throw Failure(.usage, "--ct-public-root \(path): \(error)")
                }
            }
            publicRoots = .spkiPins(pins)
        }
        let policy = CertificateTransparencyPolicy(
            defaultMode: ctMode?.mode ?? .reportOnly, logList: logList, publicRoots: publicRoots)
        return (policy, source)
    }
}
