import ArgumentParser
import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// `pin-check log-list`, `log-list-document`, `sign-log-list` and `verify-log-list`: a CT log list checked as an
/// app reads it, and the signed log-list document that replaces an app's list at run time (`CTLogListUpdates`),
/// made, signed and checked as `pins-document`, `sign-pins` and `verify-pins` do for pins.

/// `pin-check log-list FILE`: checks a log list as the TLS layer loads it.
struct LogListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check log-list",
        abstract: "Check a CT log list (Chrome's v3 schema) as an app loads it, and summarize it.",
        discussion: """
            Reads the list strictly, as CTLogList(json:) does, then loads every log's key into OpenSSL's CT log
            store, as the TLS layer does: a key OpenSSL cannot read, or a log_id that is not the SHA-256 of its
            key, refuses the list (an app refuses it too). Prints the list's date, version, operators and logs by
            state; warns on standard error when the list is older than 70 days (Certificate Transparency then acts
            report-only).

            Exit status:
              0   the list is valid
              64  usage error (unreadable file)
              65  the list is refused (the message names the field, or the log whose key does not load)
            """)

    @Argument(help: "The log list (JSON, Chrome's v3 schema).")
    var list: String

    func execute() throws(Failure) -> Int32 {
        let (logList, _) = try checkedLogList(list, option: nil)
        print(summary(of: logList, label: list))
        warnIfStale(logList)
        return 0
    }
}

/// `pin-check log-list-document`: a log-list document around a checked list, ready to review and sign.
struct LogListDocumentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check log-list-document",
        abstract: "Write a CT log-list document (JSON) around a log list, ready to sign with sign-log-list.",
        discussion: """
            Checks the list as `pin-check log-list` does, then writes the document an app's CTLogListUpdates
            takes once signed: the list, --version (above the log-list version apps have now; counted apart from
            pin-set versions), --audience (the app's identifier), issuedAt now and expiresAt --valid-days later.
            Publish lists fresher than 70 days: an app acts report-only with an older one.

            Exit status:
              0   written
              64  usage error
              65  the list is refused
              73  the output cannot be written
            """)

    @Option(name: .customLong("list"), help: "The log list (JSON, Chrome's v3 schema).")
    var list: String

    @Option(help: "The document's version: above the log-list version apps have now.")
    var version: Int

    @Option(help: "The app the document is for, as its PinSetVerifier(audience:) names it.")
    var audience: String

    @Option(name: .customLong("valid-days"), help: "Days until the document expires (default 30).")
    var validDays: Int = 30

    @Option(help: "Where to write the JSON (default: standard output).")
    var out: String?

    func execute() throws(Failure) -> Int32 {
        let maximumDays = Int(PinSetVerifier.defaultMaximumValidity.components.seconds / 86_400)
        guard (1...PinSetDocument.maximumVersion).contains(version), (1...maximumDays).contains(validDays) else {
            throw Failure(
                .usage, "--version must be from 1 to \(PinSetDocument.maximumVersion) and --valid-days from 1 to "
                    + "\(maximumDays) (what apps accept by default)")
        }
        guard !audience.isEmpty else {
            throw Failure(.usage, "--audience: give the app's identifier, as its PinSetVerifier(audience:) names it")
        }
        let (logList, data) = try checkedLogList(list, option: "--list")
        let now = Date()
        let json: String
        do {
            json = try CTLogListDocument.json(
                version: version, issuedAt: now, expiresAt: now + Double(validDays) * 86_400, audience: audience,
                logList: data)
            _ = try CTLogListDocument(json: Array(json.utf8))
        } catch {
            // The options are checked above and the list by checkedLogList: what is left is the list inside the
            // document (a list dated after now, or nested one level too deep).
            throw Failure(.refused, "--list \(list): as a document: \(describe(error))")
        }
        warnIfStale(logList)
        guard let out else {
            print(json)
            return 0
        }
        try writeOutput(json + "\n", to: out, inputs: [("--list", list)])
        return 0
    }
}

/// `pin-check sign-log-list`: signs a log-list document as a JWS of the log-list `typ`.
struct SignLogListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check sign-log-list",
        abstract: "Sign a CT log-list document (JSON) with an Ed25519 key, as a JWS an app's CTLogListUpdates accepts.",
        discussion: """
            Checks the document first (as an app reads it: the list strictly, every log's key loaded into OpenSSL,
            the dates as apps limit them) and signs it only if an app would take it, under the JWS typ
            shopkit-ct-log-list+jws (never read as a pin-set document). The keys are the app's pin-set signing
            keys; --key and --kid as for sign-pins.

            Exit status:
              0   signed
              64  usage error (as for sign-pins; an --out naming an input)
              65  the document is not a valid log-list document (the message names the field), or has expired
              73  the output cannot be written (or is not a regular file: a directory, a pipe, a device)
            """)

    @OptionGroup var signing: SigningOptions

    func execute() throws(Failure) -> Int32 {
        let json = try signing.document(kind: "log-list document")
        let document: CTLogListDocument
        do { document = try CTLogListDocument(json: json) } catch {
            throw Failure(.refused, "--in \(signing.input): \(describe(error))")
        }
        try checkSignable(
            audience: document.audience, issuedAt: document.issuedAt, expiresAt: document.expiresAt,
            input: signing.input, maker: "log-list-document")
        try loadKeys(document.logList, label: "--in \(signing.input)")
        let keyID = try signing.sign(json, kind: .ctLogList, command: "sign-log-list")
        warnIfStale(document.logList)
        print(
            "signed \(signing.input) (version \(document.version), \(document.logList.logs.count) logs, expires "
                + "\(PinSetDocument.timestamp(document.expiresAt))) with key \(String(reflecting: keyID)): \(signing.out)")
        return 0
    }
}

/// `pin-check verify-log-list`: checks a signed log-list document as an app would, with the app's public keys.
struct VerifyLogListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check verify-log-list",
        abstract: "Check a signed CT log-list document as an app would: signature, typ, audience, version, dates, keys.",
        discussion: """
            Give the public keys the app trusts (at least two) as KID=FILE or FILE, and the app's --audience;
            --current-version is the log-list version the app has now. Checks the document with the app's own
            check (PinSetVerifier.verifyLogList), then loads the list's keys into OpenSSL, and prints the
            document's version, dates, audience and the list's summary.

            Exit status:
              0   the document is valid now
              64  usage error (unreadable file, unusable public keys)
              65  the document is refused (the message says why and whose input is at fault)
            """)

    @OptionGroup var verifying: VerifyingOptions

    func execute() throws(Failure) -> Int32 {
        let verifier = try trustedKeys(verifying.publicKeys, audience: verifying.audience)
        let text = try readText(verifying.document, option: "document")
        let verified: CTLogListDocument
        do { verified = try verifier.verifyLogList(text, currentVersion: verifying.currentVersion, now: Date()) } catch {
            throw Failure(.refused, "\(verifying.document): \(error)")
        }
        try loadKeys(verified.logList, label: verifying.document)
        print(
            verifying.validLine(
                text, kind: .ctLogList, version: verified.version, issuedAt: verified.issuedAt,
                expiresAt: verified.expiresAt, audience: verified.audience)
                + "\n  " + summary(of: verified.logList, label: "log list"))
        warnIfStale(verified.logList)
        return 0
    }
}

/// The log list in the file at `path`, read strictly and with every key loaded into OpenSSL's CT log store (what
/// the TLS layer does), and the file's bytes; a list an app would refuse is a `.refused` failure naming the field.
func checkedLogList(_ path: String, option: String?) throws(Failure) -> (list: CTLogList, data: Data) {
    let label = option.map { "\($0) \(path)" } ?? path
    guard let data = FileManager.default.contents(atPath: path) else {
        throw Failure(.usage, "\(label): cannot read the file (check the path and permissions)")
    }
    let list: CTLogList
    do { list = try CTLogList(json: data) } catch {
        throw Failure(.refused, "\(label): \(error)")
    }
    try loadKeys(list, label: label)
    return (list, data)
}

/// Loads `list`'s keys into an OpenSSL CT log store, as the TLS layer does; when that fails, names the first log
/// that does not load on its own, with OpenSSL's or the store's reason.
func loadKeys(_ list: CTLogList, label: String) throws(Failure) {
    do { _ = try OpenSSLCTLogStore(list) } catch {
        for (index, entry) in list.operators.enumerated() {
            for log in entry.logs {
                do {
                    _ = try OpenSSLCTLogStore(CTLogList(timestamp: list.timestamp, operators: [.init(name: entry.name, logs: [log])]))
                } catch {
                    throw Failure(
                        .refused, "\(label): operators[\(index)], log \(String(reflecting: log.description)): its key "
                            + "does not load as a CT log's key (the list is at fault; an app refuses the whole list): \(error)")
                }
            }
        }
        throw Failure(.refused, "\(label): OpenSSL cannot load the list's keys (the list is at fault): \(error)")
    }
}

/// "FILE: log list of DATE, version V: N operators, M logs (2 usable, 1 retired)".
func summary(of list: CTLogList, label: String) -> String {
    var states: [String: Int] = [:]
    for log in list.logs { states[log.state?.name ?? "no state", default: 0] += 1 }
    let order = ["qualified", "usable", "readonly", "retired", "pending", "rejected", "no state"]
    let counts = order.compactMap { name in states[name].map { "\($0) \(name)" } }
    return "\(label): log list of \(PinSetDocument.timestamp(list.timestamp)), version "
        + "\(list.version.map(printableOnOneLine) ?? "(none)"): "
        + "\(list.operators.count) operators, \(list.logs.count) logs"
        + (counts.isEmpty ? "" : " (\(counts.joined(separator: ", ")))")
}

/// A warning on standard error when `list` is stale now (older than the policy's maximum age, or dated ahead of
/// the clock): an app acts report-only with it.
func warnIfStale(_ list: CTLogList) {
    let policy = CertificateTransparencyPolicy(logList: list)
    guard policy.logListIsStale(at: Date()) else { return }
    let age = Date().timeIntervalSince(list.timestamp)
    let when = age < 0 ? "ahead of this machine's clock" : "\(Int(age / 86_400)) days ago"
    FileHandle.standardError.write(Data((
        "pin-check: warning: the log list is dated \(PinSetDocument.timestamp(list.timestamp)) (\(when)): apps "
            + "treat a list older than \(Int(policy.maximumLogListAge / 86_400)) days, or dated ahead of their clock, "
            + "as stale and act report-only with it\n").utf8))
}

/// A document error's text, naming the log-list document.
private func describe(_ error: any Error) -> String {
    (error as? PinSetDocumentError).map { "\(CTLogListDocumentError(reason: $0))" } ?? "\(error)"
}
