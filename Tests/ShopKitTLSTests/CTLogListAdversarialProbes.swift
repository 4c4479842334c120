import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS
import TestSupport
import Testing

/// Security review of the CT log list's operator history and of `CTLogListDocumentError` (branch ct-attack2):
/// adversarial probes with real `openssl s_server` peers, the TLS layer's own list loading, and signed documents.
/// The pure-policy probes are `ShopKitPinningTests`' `PolicyCTLogListAdversarialProbes`; pin-check's are
/// `PinCheckLogListAdversarialProbes`.
///
/// Run on demand: `SHOPKIT_ADVERSARIAL=1 swift test --filter CTLogListAdversarialProbes`.
@Suite(
    .enabled(if: ProcessInfo.processInfo.environment["SHOPKIT_ADVERSARIAL"] != nil, "set SHOPKIT_ADVERSARIAL=1"),
    .timeLimit(.minutes(3)))
struct CTLogListAdversarialProbes {
    typealias T = CertificateTransparencyTests

    /// Log C (operator Two) with `previous` as its `previous_operators`.
    static func handedOver(_ previous: [[String: String]]) throws -> CTLogList {
        try T.logList { json in
            var operators = json["operators"] as! [[String: Any]]
            var logs = operators[1]["logs"] as! [[String: Any]]
            logs[0]["previous_operators"] = previous
            operators[1]["logs"] = logs
            json["operators"] = operators
        }
    }

    // MARK: Operator history, end to end

    /// The TLS extension brings SCTs from log A (One) and log C (Two), issued 2026-11-01T01:00:00Z. With C run by
    /// One until a second after that, the two SCTs are one operator's: refused under `enforced`. Handed over at the
    /// SCT's instant: Two's, compliant. The assessment names the operator at the SCT's time.
    @Test(arguments: [("2026-11-01T01:00:01Z", false), ("2026-11-01T01:00:00Z", true), ("9999-12-31T23:59:59Z", false)])
    func aHandedOverLogThroughARealHandshake(endTime: String, compliant: Bool) async throws {
        let list = try Self.handedOver([["name": "ShopKit Test Operator One", "end_time": endTime]])
        let server = try await OpenSSLSServer.start(
            connections: 1, ["-tls1_3", "-serverinfo", TestCertificates.ctFile("adversarial/baseline.serverinfo").path])
        defer { server.stop() }
        let result = await T.connect(try T.context(logList: list), to: server)
        let evaluation = compliant ? T.evaluation(result, log: server.log) : T.refusal(result, log: server.log)
        let c = try #require(evaluation?.assessments.first { $0.logDescription == "ShopKit Test Log C" })
        print("PROBE handover at \(endTime): \(String(describing: evaluation?.verdict)); C's operator \(c.operatorName ?? "nil")")
        #expect(c.operatorName == (compliant ? "ShopKit Test Operator Two" : "ShopKit Test Operator One"))
        #expect(c.counted)
    }

    // MARK: Log keys: what pin-check log-list says against what the TLS layer loads

    /// Keys of other types and encodings, their `log_id` the SHA-256 of the bytes given (or of the key as
    /// OpenSSL re-encodes it): the TLS layer loads exactly the lists `pin-check log-list` says load. Printed: which
    /// keys load at all (RFC 6962 allows only P-256 ECDSA and RSA of 2048 bits or more).
    @Test func unusualLogKeysLoadAsPinCheckSays() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ct-keys-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let openssl = BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl"))
        let kinds: [(String, [String])] = [
            ("rsa2048", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
            ("rsa512", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:512"]),
            ("rsa-pss", ["-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048"]),
            ("ed25519", ["-algorithm", "ed25519"]),
            ("x25519", ["-algorithm", "x25519"]),
            ("p384", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
            ("secp256k1", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1"]),
            ("p256-explicit", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-pkeyopt", "ec_param_enc:explicit"]),
        ]
        var keys: [(String, [UInt8], [UInt8])] = []  // label, key bytes, the bytes log_id hashes
        for (label, arguments) in kinds {
            #expect(try await openssl.run(["genpkey"] + arguments + ["-out", "\(dir)/\(label).key"]).status == 0)
            #expect(try await openssl.run(["pkey", "-in", "\(dir)/\(label).key", "-pubout", "-outform", "DER", "-out", "\(dir)/\(label).der"]).status == 0)
            let der = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(label).der")))
            keys.append((label, der, der))
        }
        let a = [UInt8](Data(base64Encoded: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgoAmfg7iQymChYadkX48sYPAxomocT9ZXOXfes1yLTLy3EGjUHWuO74TmkfsizC4dSSPZFQQn1zH2pi0KbIOZg==")!)
        keys.append(("A's key + 2 bytes, id of the bytes", a + [0, 0], a + [0, 0]))
        keys.append(("A's key + 2 bytes, id of the key", a + [0, 0], a))
        for (label, key, hashed) in keys {
            let path = "\(dir)/list-\(label.filter(\.isLetter)).json"
            let data = try PinCheckLogListTestsBridge.list { json in
                var operators = json["operators"] as! [[String: Any]]
                var logs = operators[0]["logs"] as! [[String: Any]]
                logs[0]["key"] = Data(key).base64EncodedString()
                logs[0]["log_id"] = Data(try! SHA256Checksum.digest(hashed)).base64EncodedString()
                operators[0]["logs"] = logs
                json["operators"] = operators
            }
            try data.write(to: URL(fileURLWithPath: path))
            let pinCheck = try await BuiltBinary(named: "pin-check")!.run(["log-list", path])
            var tls = "loads"
            do {
                var configuration = try Probe.configuration()
                configuration.certificateTransparency = CertificateTransparencyPolicy(defaultMode: .enforced, logList: try CTLogList(json: data))
                _ = try TLSClientContext(configuration: configuration)
            } catch {
                tls = "refused: \(error)"
            }
            print("PROBE key \(label): pin-check log-list \(pinCheck.status); TLS layer \(tls.prefix(160))")
            #expect((pinCheck.status == 0) == (tls == "loads"), "\(label): pin-check \(pinCheck.status), TLS \(tls)")
        }
    }

    // MARK: CTLogListDocumentError's words

    static let signer = try! DocumentSigner()
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let list = #"{"log_list_timestamp":"2026-11-01T00:00:00Z","operators":[{"name":"One","logs":[{"description":"Log A","log_id":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=","key":"MFkw","state":{"usable":{"timestamp":"2025-01-01T00:00:00Z"}}}]}]}"#

    static func payload(audience: String = #""com.example.shop""#, list: String = list, extra: String = "") -> String {
        #"{"version":3,"issuedAt":"\#(PinSetDocument.timestamp(now - 3600))","expiresAt":"\#(PinSetDocument.timestamp(now + 86_400))","audience":\#(audience),"logList":\#(list)\#(extra)}"#
    }

    static func jws(header: String, payload: String) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        return input + "." + Base64URL.encode(try signer.current.signEd25519(Array(input.utf8)))
    }

    static func jws(_ payload: String) throws -> String {
        try jws(header: #"{"alg":"EdDSA","kid":"current","typ":"shopkit-ct-log-list+jws"}"#, payload: payload)
    }

    /// Refusals the existing tests do not cover, with control characters wherever an attacker writes text: every
    /// message is one printable line naming the CT log-list document (and "pin-set document" only for a token that
    /// is one).
    @Test func everyRefusalIsOnePrintableLineNamingTheLogListDocument() throws {
        let evil = #"\u001b]0;x\u0007\u001b[2J\r\nforged\u0085\u2028\u202e"#
        let header = { (fields: String) in "{" + fields + "}" }
        let cases: [(String, String)] = [
            ("crit header", try Self.jws(header: header(#""alg":"EdDSA","kid":"current","typ":"shopkit-ct-log-list+jws","crit":["exp"]"#), payload: Self.payload())),
            ("duplicate header member", try Self.jws(header: header(#""alg":"EdDSA","kid":"current","typ":"shopkit-ct-log-list+jws","typ":"shopkit-pins+jws""#), payload: Self.payload())),
            ("no typ", try Self.jws(header: header(#""alg":"EdDSA","kid":"current""#), payload: Self.payload())),
            ("no kid", try Self.jws(header: header(#""alg":"EdDSA","typ":"shopkit-ct-log-list+jws""#), payload: Self.payload())),
            ("kid with control characters", try Self.jws(header: header(#""alg":"EdDSA","kid":"\#(evil)","typ":"shopkit-ct-log-list+jws""#), payload: Self.payload())),
            ("typ with control characters", try Self.jws(header: header(#""alg":"EdDSA","kid":"current","typ":"\#(evil)""#), payload: Self.payload())),
            ("typ: pin-set, differently cased", try Self.jws(header: header(#""alg":"EdDSA","kid":"current","typ":"SHOPKIT-PINS+JWS""#), payload: Self.payload())),
            ("typ: application/shopkit-pins+jws", try Self.jws(header: header(#""alg":"EdDSA","kid":"current","typ":"application/shopkit-pins+jws""#), payload: Self.payload())),
            ("alg with control characters", try Self.jws(header: header(#""alg":"\#(evil)","kid":"current","typ":"shopkit-ct-log-list+jws""#), payload: Self.payload())),
            ("audience with control characters", try Self.jws(Self.payload(audience: "\"\(evil)\""))),
            ("unknown field with control characters", try Self.jws(Self.payload(extra: #","\#(evil)":1"#))),
            ("unknown log state with control characters", try Self.jws(Self.payload(list: Self.list.replacingOccurrences(of: #""usable""#, with: "\"\(evil)\"")))),
            ("duplicate operator with control characters", try Self.jws(Self.payload(list: Self.list.replacingOccurrences(
                of: #"{"name":"One","#, with: #"{"name":"\#(evil)","logs":[]},{"name":"\#(evil)","#)))),
            ("previous operator without end_time", try Self.jws(Self.payload(list: Self.list.replacingOccurrences(
                of: #""key":"MFkw","#, with: #""key":"MFkw","previous_operators":[{"name":"\#(evil)"}],"#)))),
            ("list timestamp with control characters", try Self.jws(Self.payload(list: Self.list.replacingOccurrences(of: "2026-11-01T00:00:00Z", with: evil)))),
            ("payload not UTF-8", {
                let header = Base64URL.encode(Array(#"{"alg":"EdDSA","kid":"current","typ":"shopkit-ct-log-list+jws"}"#.utf8))
                let payload = Base64URL.encode(Array(Self.payload(extra: #","x":""#).utf8) + [0xFF, 0x1B, 0x0A] + Array(#""}"#.utf8))
                let input = header + "." + payload
                return input + "." + Base64URL.encode(try! Self.signer.current.signEd25519(Array(input.utf8)))
            }()),
            ("header not JSON", try Self.jws(header: "\u{1B}[2J\n", payload: Self.payload())),
            ("a JWS with control characters", "\u{1B}[2J.\u{7}.\n"),
            ("a JWS of 1 MB", String(repeating: "A", count: 1 << 20) + ".." ),
        ]
        for (label, token) in cases {
            do {
                let document = try Self.signer.verifier.verifyLogList(token, currentVersion: 0, now: Self.now)
                Issue.record("\(label): accepted, version \(document.version)")
            } catch {
                let text = error.description
                print("PROBE error \(label): \(text.prefix(300))")
                let bad = text.unicodeScalars.filter {
                    $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || [0x2028, 0x2029].contains($0.value)
                }
                #expect(bad.isEmpty, "\(label): \(bad.map { String($0.value, radix: 16) })")
                #expect(text.contains("CT log-list document"), "\(label): \(text)")
                if case .wrongLogListType(let typ) = error.reason, text.contains("this is a pin-set document") {
                    // Said to be a pin-set document: the pin-set verifier must take a pin-set payload under this typ.
                    let header = String(decoding: try JSONSerialization.data(withJSONObject: ["alg": "EdDSA", "kid": "current", "typ": typ]), as: UTF8.self)
                    let pins = try Self.jws(header: header, payload: Self.signer.document(version: 3, now: Self.now))
                    let taken = Result { try Self.signer.verifier.verify(pins, baseline: PinningPolicy(), currentVersion: 0, now: Self.now) }
                    print("PROBE error \(label): said to be a pin-set document (typ \(typ.debugDescription)); the pin-set verifier \(taken.map { _ in "takes" })")
                    if case .failure = taken { Issue.record("\(label): called a pin-set document, which the pin-set verifier refuses") }
                } else {
                    #expect(!text.contains("pin-set document"), "\(label): \(text)")
                }
                #expect(text.utf8.count < 4096, "\(label): \(text.utf8.count) bytes")
                // U+202E (right-to-left override) reorders what a terminal shows: informational.
                if text.unicodeScalars.contains(where: { $0.value == 0x202E }) { print("PROBE error \(label): carries U+202E unescaped") }
            }
        }
    }
}

/// The test log list as JSON, changed (`PinCheckLogListTests.list` without a file).
enum PinCheckLogListTestsBridge {
    static func list(_ change: (inout [String: Any]) -> Void) throws -> Data {
        var object = try JSONSerialization.jsonObject(with: TestCertificates.ctData("test-log-list.json")) as! [String: Any]
        change(&object)
        return try JSONSerialization.data(withJSONObject: object)
    }
}
