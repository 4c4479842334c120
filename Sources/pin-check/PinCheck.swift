import ArgumentParser
import Foundation
import ShopKit
import ShopKitOpenSSL

/// Shows a server's verified chain and its SPKI pins, and checks a pin set against it.
///
/// Thin: parsing and printing only; `ServerInspector` (ShopKitTLS) does the work.
@main
struct PinCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check",
        abstract: "Show a TLS server's verified chain and its SPKI pins, and check a pin set.",
        discussion: """
            Pins match only certificates on the chain OpenSSL verified, never extra certificates a server sends.

            Exit status:
              0   trusted, hostname ok, and no pins given or one matches
              1   trusted and hostname ok, but no pin matches
              2   chain not trusted (unknown root, expired, missing intermediate, weak key, ...)
              3   hostname mismatch
              4   connection or TLS handshake failure (refused, timeout, protocol too old, not TLS)
              64  usage error (malformed HOST:PORT or pin, unreadable file)
            """)

    @Argument(help: "The server, HOST[:PORT] (port 443 by default; IPv6 in brackets: [::1]:8443).")
    var server: String?

    @Option(name: .customLong("pin"), help: "A pin to check, sha256/BASE64 (curl's sha256//BASE64 too). Repeatable.")
    var pins: [String] = []

    @Option(name: .customLong("pins-file"), help: "A file of pins, one per line ('#' comments; NAME PIN lines too).")
    var pinsFile: String?

    @Option(name: .customLong("ca-file"), help: "PEM trust anchors replacing the system roots (like curl --cacert).")
    var caFile: String?

    @Option(name: .customLong("servername"), help: "The name sent as SNI and checked against the SANs (default HOST).")
    var serverName: String?

    @Option(help: "Seconds allowed for connect and handshake.")
    var timeout: Double = 10

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(name: .customLong("print-config"), help: "Print the leaf and intermediate pins as shopkit, okhttp, curl or android.")
    var printConfig: PinConfigFormat?

    @Option(name: .customLong("pem"), help: "Print the pins of the certificates or public keys in a PEM file (offline).")
    var pemFile: String?

    @Flag(help: "Start a local TLS server from the test certificates and check it (no network).")
    var demo = false

    func validate() throws {
        let modes = [server != nil, pemFile != nil, demo].filter { $0 }.count
        guard modes == 1 else { throw ValidationError("give exactly one of HOST[:PORT], --pem FILE or --demo") }
        if json, printConfig != nil { throw ValidationError("--print-config prints text: leave out --json") }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 seconds") }
    }

    func run() async throws {
        if let pemFile { return try printPEMPins(pemFile) }
        if demo { return try await runDemo() }
        let inspector = try makeInspector()
        let report: ServerReport
        do { report = try await inspector.inspect() } catch { throw ValidationError(error.description) }
        if json {
            print(report.json())
        } else {
            print(report.text())
        }
        if let printConfig {
            if let config = printConfig.render(report) {
                print("\n\(printConfig.rawValue) configuration:\n\(config)")
            } else {
                print("no verified chain: nothing to print for --print-config")
            }
        }
        throw ExitCode(report.verdict.exitCode)
    }

    private func makeInspector() throws -> ServerInspector {
        let address: ServerAddress
        do { address = try ServerAddress(parsing: server ?? "") } catch { throw ValidationError(error.description) }
        var texts = pins
        if let pinsFile {
            for line in try readFile(pinsFile, what: "--pins-file").split(whereSeparator: \.isNewline) {
                let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                if let last = content.split(whereSeparator: \.isWhitespace).last { texts.append(String(last)) }
            }
        }
        var parsed: [SPKIPin] = []
        for text in texts {
            do { parsed.append(try ServerInspector.parsePin(text)) } catch {
                throw ValidationError("pin '\(text)': \(error)")
            }
        }
        var anchors: String?
        if let caFile {
            let pem = try readFile(caFile, what: "--ca-file")
            do { _ = try OpenSSLCertificate.parsePEM(pem) } catch {
                throw ValidationError("--ca-file \(caFile) has no usable PEM certificate: \(error)")
            }
            anchors = pem
        }
        if let serverName, serverName.isEmpty { throw ValidationError("--servername must not be empty") }
        return ServerInspector(
            address: address, serverName: serverName, pins: parsed, trustAnchorsPEM: anchors,
            timeout: .milliseconds(Int64(timeout * 1000)))
    }

    private func printPEMPins(_ path: String) throws {
        let entries: [PEMPins.Entry]
        do { entries = try PEMPins.pins(pem: try readFile(path, what: "--pem")) } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("--pem \(path): no certificate or public key could be read: \(error)")
        }
        for entry in entries {
            print("\(entry.pin)  \(entry.subject) (\(entry.keyDescription))")
        }
    }

    private func readFile(_ path: String, what: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(what) \(path): cannot read the file (check the path and permissions)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

extension PinConfigFormat: ExpressibleByArgument {}
