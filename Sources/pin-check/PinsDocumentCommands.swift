import ArgumentParser
import Foundation
import ShopKitInspector
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// `pin-check sign-pins`: signs a pin-set document (JSON) as a compact JWS with an Ed25519 key. Thin: the document
/// is checked by ShopKitPinning's parser before anything is signed.
struct SignPinsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check sign-pins",
        abstract: "Sign a pin-set document (JSON) with an Ed25519 key, as a JWS an app's PinUpdates accepts.",
        discussion: """
            Checks the document first (the fields of a pins file plus version, issuedAt, expiresAt) and signs it
            only if an app would parse it. The JWS header names the key with --kid (default: the key file's name
            without its extension), which must be one of the key ids the app's PinSetVerifier trusts. Make a
            signing key with: openssl genpkey -algorithm ed25519 -out KEY (keep it offline). --key reads a file
            only you can read (mode 600), or a pipe to its end (--key /dev/stdin for a key decrypted on the fly; --kid
            is then required, since a pipe has no name to take the key id from).

            Exit status:
              0   signed
              64  usage error (unreadable file, a key that is not an unencrypted Ed25519 PEM key, a key file
                  other users can read, a key path that is neither a file nor a pipe, an empty key, a key from
                  standard input or a pipe without --kid, an --out naming an input)
              65  the document is not a valid pin-set document (the message names the field), or has expired
              73  the output cannot be written (or is not a regular file: a directory, a pipe, a device)
            """)

    @OptionGroup var signing: SigningOptions

    func execute() throws(Failure) -> Int32 {
        let json = try signing.document(kind: "pin-set document")
        let document: PinSetDocument
        do { document = try PinSetDocument(json: json) } catch {
            throw Failure(.refused, "--in \(signing.input): \(error)")
        }
        try checkSignable(
            audience: document.audience, issuedAt: document.issuedAt, expiresAt: document.expiresAt,
            input: signing.input, maker: "pins-document")
        let keyID = try signing.sign(json, kind: .pinSet, command: "sign-pins")
        print(
            "signed \(signing.input) (version \(document.version), \(document.policy.pinSets.count) hosts, expires "
                + "\(PinSetDocument.timestamp(document.expiresAt))) with key \(String(reflecting: keyID)): \(signing.out)")
        return 0
    }
}

extension SignPinsCommand {
    /// Whether `path` is standard input, an inherited descriptor or a pipe (FIFO), rather than a key file with a
    /// name: `/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N`, or a path that is not a regular file. A usability check
    /// only: the key's own checks are made on the descriptor that is read (`SecureBytes.readSecret`).
    static func isStreamed(_ path: String) -> Bool {
        if isStandardInput(path) { return true }
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        return (status.st_mode & S_IFMT) != S_IFREG
    }

    /// Whether `path` names standard input or an inherited descriptor (`/dev/stdin`, `/dev/fd/N`,
    /// `/proc/self/fd/N`): whatever was redirected into it, not the path, is what a chmod must change.
    static func isStandardInput(_ path: String) -> Bool {
        path == "/dev/stdin" || path.hasPrefix("/dev/fd/") || path.hasPrefix("/proc/self/fd/")
    }
}

/// `pin-check verify-pins`: checks a signed pin-set document as an app would, with the app's public keys.
struct VerifyPinsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check verify-pins",
        abstract: "Check a signed pin-set document as an app would: signature, algorithm, version, dates.",
        discussion: """
            Give the public keys the app trusts (at least two, as the app needs) as KID=FILE, or FILE for a key id
            equal to the file's name without extension, and the app's --audience. Prints the document's version,
            dates, audience, strictHosts, unpinnedBaselineHosts, and each set's host, enforcement, expiration and
            pins.

            The app's baseline (the pins compiled into it) is not known here, so the rules that compare a document
            with it (every host the baseline pins keeps an enforced set live past the document's expiry unless
            listed in unpinnedBaselineHosts; a strict baseline stays strict) are not checked: the output says so
            on a line "baseline: not checked". The app checks them when it applies the document.

            Exit status:
              0   the document is valid now
              64  usage error (unreadable file, unusable public keys)
              65  the document is refused (the message says why and whose input is at fault)
            """)

    @OptionGroup var verifying: VerifyingOptions

    func execute() throws(Failure) -> Int32 {
        let (verified, text) = try verifiedDocument(
            verifying.document, option: nil, publicKeys: verifying.publicKeys, audience: verifying.audience,
            currentVersion: verifying.currentVersion)
        var lines = [
            verifying.validLine(
                text, kind: .pinSet, version: verified.version, issuedAt: verified.issuedAt,
                expiresAt: verified.expiresAt, audience: verified.audience),
            verified.policy.unpinnedHosts == .refuse
                ? "  strictHosts: true (hosts without a set are refused)"
                : "  strictHosts: false (hosts without a set connect unpinned; an app built strict refuses this document)",
        ]
        lines.append(
            "  baseline: not checked (verify-pins does not know the app's compiled-in pins: the app refuses a document "
                + "that drops or weakens a host its baseline pins, or relaxes a strict baseline)")
        if !verified.unpinnedBaselineHosts.isEmpty {
            lines.append("  unpinnedBaselineHosts: \(verified.unpinnedBaselineHosts.map(\.description).joined(separator: ", "))")
        }
        for set in verified.policy.pinSets {
            let expiration = set.expiration.map { "expires \(PinSetDocument.timestamp($0))" } ?? "no expiration"
            lines.append("  [\(set.hostPattern)] \(set.reportOnly ? "report-only" : "enforced"), \(expiration)")
            lines += set.pins.map { "    \($0)" }
        }
        print(lines.joined(separator: "\n"))
        return 0
    }
}

/// `pin-check pins-document`: a pin-set document for the hosts of a hosts file, with the pins their servers use
/// now and the backup keys `backup-key` made, ready to check and sign.
struct PinsDocumentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check pins-document",
        abstract: "Write a pin-set document for every host of a hosts file: current pins plus backup keys.",
        discussion: """
            Connects to each HOST[:PORT] (chain and hostname verified, no pins) and pins its leaf key and its
            issuing CA's key; with --backup-dir, adds the pin of DIR/HOST.key made by pin-check backup-key (read
            into wiped memory; only its public half is used). Say --strict-hosts (for an app built with
            unpinnedHosts: .refuse) or --no-strict-hosts, and --audience APP; --previous DOCUMENT carries both over
            from the document in force. Add --ca-file when the servers' chains end at a private CA. Review the
            output, then sign it with sign-pins.

            Exit status:
              0   written
              64  usage error
              65  a host could not be verified (the message names it)
              69  OpenSSL or the trust store cannot be set up
            """)

    @Option(name: .customLong("hosts-file"), help: "The servers, one HOST[:PORT] per line ('#' comments).")
    var hostsFile: String

    @Option(name: .customLong("backup-dir"), help: "Where backup-key wrote HOST.key files.")
    var backupDirectory: String?

    @Option(name: .customLong("ca-file"), help: "PEM trust anchors replacing the system roots.")
    var caFile: String?

    @Option(help: "Seconds each host's connection and handshake may take (default 10).")
    var timeout: Double = 10

    @Option(help: "The document's version: above the version apps have now.")
    var version: Int

    @Option(help: "The app the document is for, as its PinSetVerifier(audience:) names it (default: --previous's).")
    var audience: String?

    @Option(name: .customLong("valid-days"), help: "Days until the document expires (default 90).")
    var validDays: Int = 90

    @Flag(
        name: .customLong("strict-hosts"), inversion: .prefixedNo, exclusivity: .exclusive,
        help: "Apps refuse hosts the document does not pin (--strict-hosts; match an app built with unpinnedHosts: .refuse), or connect them unpinned (--no-strict-hosts). Required unless --previous gives it.")
    var strictHosts: Bool?

    @Option(help: "The document in force (JSON, or the signed JWS): its strictHosts carries over unless a flag says otherwise.")
    var previous: String?

    @Option(
        name: .customLong("pubkey"),
        help: "With a signed --previous: a public key it must verify under, KID=FILE or FILE (PEM). Repeatable.")
    var publicKeys: [String] = []

    @Option(help: "Where to write the JSON (default: standard output).")
    var out: String?

    func execute() async throws(Failure) -> Int32 {
        // No longer than apps accept by default (PinSetVerifier's maximum validity).
        let maximumDays = Int(PinSetVerifier.defaultMaximumValidity.components.seconds / 86_400)
        guard (1...PinSetDocument.maximumVersion).contains(version), (1...maximumDays).contains(validDays) else {
            throw Failure(
                .usage, "--version must be from 1 to \(PinSetDocument.maximumVersion) and --valid-days from 1 to "
                    + "\(maximumDays) (what apps accept by default)")
        }
        guard timeout > 0, timeout <= 3600 else {
            throw Failure(.usage, "--timeout must be more than 0 and at most 3600 seconds")
        }
        let (strict, carriedAudience) = try carriedOver()
        guard let audience = audience ?? carriedAudience else {
            throw Failure(.usage, "give --audience APP (the app's identifier, as its PinSetVerifier(audience:) names it), or --previous DOCUMENT to keep its audience")
        }
        let addresses: [ServerAddress]
        do { addresses = try HostsFile.parse(try readText(hostsFile, option: "--hosts-file")) } catch let error as Failure {
            throw error
        } catch {
            throw Failure(.usage, "--hosts-file \(hostsFile): \(error)")
        }
        let anchors = try caFile.map { path throws(Failure) in try readText(path, option: "--ca-file") }
        var reports: [ServerReport?] = Array(repeating: nil, count: addresses.count)
        do {
            try await FleetInspector(addresses: addresses, trustAnchorsPEM: anchors, timeout: .seconds(timeout)).run {
                index, report in
                reports[index] = report
            }
        } catch {
            throw Failure(error.kind == .system ? .unavailable : .usage, error.description)
        }
        var pinsByHost: [(host: String, pins: [SPKIPin])] = []
        for report in reports.compactMap({ $0 }) {
            guard report.verdict == .ok, !report.verifiedChain.isEmpty else {
                throw Failure(.refused, "\(report.host):\(report.port) is \(report.verdict.rawValue): \(report.reason ?? "")")
            }
            var pins = report.verifiedChain.prefix(2).compactMap { try? SPKIPin($0.pin) }
            if let backupDirectory { pins += try backupPin(for: report.host, in: backupDirectory) }
            if let index = pinsByHost.firstIndex(where: { $0.host == report.host }) {
                pinsByHost[index].pins += pins
            } else {
                pinsByHost.append((report.host, pins))
            }
        }
        var sets: [PinSet] = []
        for entry in pinsByHost {
            do { sets.append(try PinSet(host: entry.host, pins: entry.pins.map(\.description))) } catch {
                throw Failure(.refused, "\(entry.host): \(error)")
            }
        }
        let now = Date()
        let json = PinSetDocument.json(
            version: version, issuedAt: now, expiresAt: now + Double(validDays) * 86_400,
            policy: PinningPolicy(pinSets: sets, unpinnedHosts: strict ? .refuse : .allow), audience: audience)
        guard let out else {
            print(json, terminator: "")
            return 0
        }
        // --previous may be the output: it is read whole before, and replacing the document in force with its
        // successor is the rotation's own step (the README's walkthrough does it).
        let inputs = [("--hosts-file", hostsFile)] + (caFile.map { [("--ca-file", $0)] } ?? [])
            + publicKeys.map { ("--pubkey", $0.split(separator: "=", maxSplits: 1).last.map(String.init) ?? $0) }
        try writeOutput(json, to: out, inputs: inputs)
        return 0
    }

    /// Whether the document is strict: `--[no-]strict-hosts`, else `--previous`'s `strictHosts`; never a silent
    /// default, since a lax document would turn a strict app's unpinned hosts on (an app refuses that anyway
    /// unless its baseline allows it, `documentsMayAllowUnpinnedHosts`).
    private func carriedOver() throws(Failure) -> (strict: Bool, audience: String?) {
        var carried: Bool?
        var carriedAudience: String?
        if let previous {
            let text = try readText(previous, option: "--previous").trimmingCharacters(in: .whitespacesAndNewlines)
            var json = Array(text.utf8)
            if !text.hasPrefix("{") {
                // A signed document carries its settings over only once its signature verifies: a forged one would
                // otherwise hand its strictHosts and audience to the next document.
                guard !publicKeys.isEmpty else {
                    throw Failure(
                        .usage, "--previous \(previous) is signed: give the public keys it must verify under (--pubkey), "
                            + "as for verify-pins")
                }
                do { json = try trustedKeys(publicKeys, audience: nil).signedDocument(text).json } catch let failure as Failure {
                    throw failure
                } catch {
                    throw Failure(.refused, "--previous \(previous): \(error)")
                }
            }
            do {
                let document = try PinSetDocument(json: json)
                carried = document.policy.unpinnedHosts == .refuse
                carriedAudience = document.audience
            } catch {
                throw Failure(.usage, "--previous \(previous): \(error)")
            }
        }
        if let strictHosts, let carried, carried, !strictHosts {
            FileHandle.standardError.write(Data(
                "pins-document: warning: --no-strict-hosts turns off the strict hosts of --previous \(previous ?? ""); apps built strict refuse such a document unless they allow it in code\n".utf8))
        }
        guard let strict = strictHosts ?? carried else {
            throw Failure(
                .usage,
                "say whether apps refuse hosts the document does not pin: --strict-hosts (for an app built with "
                    + "unpinnedHosts: .refuse) or --no-strict-hosts, or --previous DOCUMENT to keep its strictHosts")
        }
        return (strict, carriedAudience)
    }

    /// The pin of `DIR/HOST.key`, if backup-key made one for `host`.
    private func backupPin(for host: String, in directory: String) throws(Failure) -> [SPKIPin] {
        let path = (directory as NSString).appendingPathComponent(host.replacingOccurrences(of: "*", with: "wildcard") + ".key")
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        guard let secret = SecureBytes.contentsOfFile(path, limit: 64 * 1024) else {
            throw Failure(.usage, "--backup-dir: cannot read \(path)")
        }
        do { return [try OpenSSLKey.privateKey(pem: secret).spkiPin] } catch {
            throw Failure(.usage, "--backup-dir: \(path) is not an unencrypted PEM private key (\(error))")
        }
    }
}

extension PinCheck {
    /// `--pins-document`: the document checked exactly as `verify-pins` checks it (``verifiedDocument(_:option:publicKeys:audience:currentVersion:)``,
    /// so an app would take it), its policy (applied to the connection as an app applies it), and the pins of the
    /// set that policy applies to `host` now (for the report).
    func documentPolicy(_ path: String, host: String) throws(Failure) -> (policy: PinningPolicy, pins: [SPKIPin]) {
        let (document, _) = try verifiedDocument(
            path, option: "--pins-document", publicKeys: publicKeys, audience: audience ?? "",
            currentVersion: currentVersion ?? 0)
        let name = (try? ServerName(host).text) ?? host
        guard let set = document.policy.pinSet(for: name, at: Date()) else {
            throw Failure(.usage, "--pins-document \(path): no pin set covers \(name) (the document pins \(document.policy.hostPatterns))")
        }
        return (document.policy, set.pins)
    }
}

/// The signed document at `path` if an app would take it now: signature under one of `publicKeys`, `audience`,
/// version above `currentVersion` and within the maximum step, dates and maximum validity, all by
/// `PinSetVerifier.verify` (the app's own check; its compiled-in baseline is not known here). The one check that
/// `verify-pins` and `pin-check --pins-document` share, so they refuse the same documents with the same words
/// (exit 65; messages name the file, after `option` when it came with one).
func verifiedDocument(
    _ path: String, option: String?, publicKeys: [String], audience: String, currentVersion: Int
) throws(Failure) -> (document: PinSetDocument, text: String) {
    let verifier = try trustedKeys(publicKeys, audience: audience)
    let text = try readText(path, option: option ?? "document")
    let label = option.map { "\($0) \(path)" } ?? path
    do {
        return (try verifier.verify(text, baseline: PinningPolicy(), currentVersion: currentVersion, now: Date()), text)
    } catch {
        throw Failure(.refused, "\(label): \(error)")
    }
}

/// A verifier for `--pubkey` values, `KID=FILE` or `FILE` (the key id is then the file's name without extension),
/// for documents addressed to `audience` (nil: any audience, for a signature-only check).
func trustedKeys(_ values: [String], audience: String?) throws(Failure) -> PinSetVerifier {
    var keys: [String: String] = [:]
    for given in values {
        let (id, path): (String, String)
        if let equals = given.firstIndex(of: "=") {
            (id, path) = (String(given[..<equals]), String(given[given.index(after: equals)...]))
        } else {
            (id, path) = (((given as NSString).lastPathComponent as NSString).deletingPathExtension, given)
        }
        keys[id] = try readText(path, option: "--pubkey")
    }
    do {
        if let audience { return try PinSetVerifier(publicKeys: keys, audience: audience) }
        return try PinSetVerifier(publicKeys: keys, checkingAudience: nil)
    } catch {
        throw Failure(.usage, error.description)
    }
}

/// The text of the file at `path`, or a usage failure naming `option`.
func readText(_ path: String, option: String) throws(Failure) -> String {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw Failure(.usage, "\(option) \(path): cannot read the file (check the path and permissions)")
    }
    return String(decoding: data, as: UTF8.self)
}
