/// The libFuzzer targets: one per parser that reads outside input (issue 16).
///
/// Each target takes arbitrary bytes, must never crash, hang or leak, and checks its parser's invariants with
/// ``FuzzCheck/require(_:_:)`` (a broken invariant traps, so libFuzzer records the input as a crash). The
/// same functions run three ways: under libFuzzer (`scripts/fuzz`), from the replay driver (`shopkit-fuzz
/// TARGET FILE…`), and over every committed corpus file in `ShopKitFuzzTests` on each test run.
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// `SPKIPin` from text: `sha256/BASE64` (and curl's `sha256//`).
    case spkiPin = "spki-pin"
    /// A pins file as `pin-check --pins-file` reads it.
    case pinsFile = "pins-file"
    /// A host pattern and a host to match, separated by the first newline.
    case hostPattern = "host-pattern"
    /// PEM text through the OpenSSL wrappers: certificates, public keys, a private key, their pins and info.
    case pem = "pem"
    /// DER bytes through the same wrappers (wrapped into one PEM block whose label the first byte picks).
    case der = "der"
    /// The encrypted token file's header, as stored on disk.
    case tokenFile = "token-file"
    /// The keyring item's JSON body.
    case keyringItem = "keyring-item"
    /// A `Retry-After` header value.
    case retryAfter = "retry-after"
    /// Response bytes from the server, through the response decoder into `HTTP1ConnectionHandler`.
    case httpResponse = "http-response"
    /// Response bytes through the HTTP/1.1 response decoder alone: framing independent of read cuts, nothing lost,
    /// and agreement with NIO's decoder on the responses both accept.
    case http1ResponseDecoder = "http1-response-decoder"
    /// Server bytes facing several exchanges on one HTTP/1.1 connection, handed over as the pool does.
    case http1Connection = "http1-connection"
    /// Server bytes facing several requests on the streams of one HTTP/2 connection.
    case http2Connection = "http2-connection"
    /// A signed pin-set document (compact JWS), or a document's JSON signed by the target before verification.
    case pinSetDocument = "pin-set-document"
    /// An SCT list in its TLS encoding (a certificate's embedded SCTs, the TLS extension's body).
    case sctList = "sct-list"
    /// A CT log list (Chrome's v3 JSON), read alone and inside a log-list document.
    case ctLogList = "ct-log-list"

    /// The largest input worth trying (`-max_len`): bigger inputs only make each run slower.
    package var maxLength: Int {
        switch self {
        case .spkiPin, .hostPattern, .retryAfter: return 512
        case .pinsFile, .keyringItem, .pinSetDocument, .sctList: return 4_096
        case .ctLogList: return 8_192
        case .pem, .der, .httpResponse, .http1ResponseDecoder, .http1Connection, .http2Connection: return 16_384
        case .tokenFile: return 1_024
        }
    }

    /// Runs one input through the target.
    package func run(_ bytes: [UInt8]) {
        switch self {
        case .spkiPin: PinningTargets.spkiPin(bytes)
        case .pinsFile: PinningTargets.pinsFile(bytes)
        case .hostPattern: PinningTargets.hostPattern(bytes)
        case .pem: OpenSSLTargets.pem(bytes)
        case .der: OpenSSLTargets.der(bytes)
        case .tokenFile: AuthTargets.tokenFile(bytes)
        case .keyringItem: AuthTargets.keyringItem(bytes)
        case .retryAfter: APITargets.retryAfter(bytes)
        case .httpResponse: HTTPResponseTarget.run(bytes)
        case .http1ResponseDecoder: HTTP1ResponseDecoderTarget.run(bytes)
        case .http1Connection: HTTPConnectionTarget.run(bytes)
        case .http2Connection: HTTP2ConnectionTarget.run(bytes)
        case .pinSetDocument: PinSetDocumentTarget.run(bytes)
        case .sctList: SCTListTarget.run(bytes)
        case .ctLogList: CTLogListTarget.run(bytes)
        }
    }
}

/// Invariant checks that stop the process, so the fuzzer keeps the input that broke one.
enum FuzzCheck {
    static func require(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        if !condition() { fatalError("fuzz invariant broken: \(message())", file: file, line: line) }
    }
}

extension String {
    /// The input as text, the way a file reader would see it (invalid UTF-8 repaired, as `String(decoding:)` does).
    init(fuzzInput bytes: [UInt8]) { self.init(decoding: bytes, as: UTF8.self) }
}
