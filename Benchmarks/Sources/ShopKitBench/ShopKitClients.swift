// ShopKit clients for the benchmark: the pinned HTTPS transport (pins on and off), bare or under the API
// client's full decorator stack.
//
// Each workload gets the transport configured the way a user would for it: one pooled connection per worker
// (keep-alive-32 lets the pool open 32), session resumption off for the full-handshake workloads (newconn-*)
// and on for resume-* (every resumed connection is still held to the pin verdict of its session's full
// handshake), and the composition root's APIClient (retry → auth → dedup → transport) for api-stack.
import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import OpenAPIRuntime
import ShopKit
import ShopKitAPI
import ShopKitBenchCore
import ShopKitPinning
import ShopKitTLS

/// The ShopKit variants the benchmark knows.
enum ShopKitVariant: String, Sendable {
    /// Pins on: the leaf's SPKI and a backup intermediate's (not in the chain).
    case pinned = "shopkit-pinned"
    /// The same transport with no pin set, to show what pinning costs.
    case unpinned = "shopkit-unpinned"
}

/// The Certificate Transparency policy of a ShopKit client (`shopkit-bench run --ct MODE`); nil keeps the
/// library's default (report-only against the bundled list, which has no logs: no SCT is checked).
struct BenchCTSetting: Sendable {
    var mode: CertificateTransparencyPolicy.Mode
    /// The log list file (`--ct-log-list`), or nil for the bundled list.
    var logListPath: String?
    /// Roots that count as public (`--ct-public-root`), or empty for the system's.
    var publicRootPins: [String]

    func policy() throws -> CertificateTransparencyPolicy {
        let logList = try logListPath.map { try CTLogList(json: Data(contentsOf: URL(fileURLWithPath: $0))) } ?? .bundled
        let roots: CertificateTransparencyPolicy.PublicRoots =
            publicRootPins.isEmpty ? .system : .spkiPins(Set(try publicRootPins.map { try SPKIPin($0) }))
        // A century instead of 70 days: the dated test list would otherwise turn `enforced` into `reportOnly`
        // 70 days after its date, and the row would stop saying "enforced" (the work per handshake is the same).
        return CertificateTransparencyPolicy(
            defaultMode: mode, logList: logList, maximumLogListAge: 100 * 365 * 86_400, publicRoots: roots)
    }
}

/// The transport configuration for one variant and workload.
///
/// `httpVersion` nil keeps the transport's default (`.automatic`: h2 and http/1.1 offered in ALPN; the plain
/// benchmark servers choose http/1.1). `counter` gets a debug logger that counts new connections. `ct` nil keeps
/// the default CT policy. `logger` (the CT preflight's) replaces the counter's.
func makeShopKitTransport(
    variant: ShopKitVariant, rootPEM: String, pins: [String], connections: Int, resumption: Bool,
    httpVersion: HTTPSTransport.HTTPVersionPolicy? = nil, counter: ConnectionCounter? = nil,
    eventLoopGroup: (any EventLoopGroup)? = nil, ct: BenchCTSetting? = nil, logger: Logger? = nil
) throws -> HTTPSTransport {
    var pinning = PinningPolicy()
    if variant == .pinned {
        let parsed = try pins.map { try SPKIPin($0) }
        pinning = PinningPolicy(pinSets: [try PinSet(hostPattern: try HostPattern("127.0.0.1"), pins: parsed)])
    }
    var tls = ShopKitTLS.TLSClientConfiguration(
        trustRoots: .pem(rootPEM, addingToSystem: false), pinning: pinning, sessionResumption: resumption)
    if let ct { tls.certificateTransparency = try ct.policy() }
    if let counter { tls.logger = counter.shopKitLogger() }
    if let logger { tls.logger = logger }
    var configuration = HTTPSTransport.Configuration(
        tls: tls, pool: HTTPSTransport.Pool(maxConnectionsPerHost: max(1, connections)))
    if let httpVersion { configuration.httpVersion = httpVersion }
    configuration.eventLoopGroup = eventLoopGroup
    return try HTTPSTransport(configuration: configuration)
}

/// ShopKit's `HTTPSTransport` driven as a bare `ClientTransport`.
final class ShopKitBenchClient: BenchClient {
    private let transport: HTTPSTransport
    private let baseURL: URL
    private let decodeJSON: Bool
    private let counter: ConnectionCounter?

    init(transport: HTTPSTransport, baseURL: URL, decodeJSON: Bool = false, counter: ConnectionCounter? = nil) {
        self.transport = transport
        self.baseURL = baseURL
        self.decodeJSON = decodeJSON
        self.counter = counter
    }

    var connectionsOpened: Int? { counter?.value }

    /// `HTTPSTransport.executor`: the caller-on-the-loop row runs its workers under it.
    var loopExecutor: (any TaskExecutor)? { transport.executor }

    func get(_ path: String, closeConnection: Bool) async throws -> Int {
        var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
        if closeConnection { request.headerFields[.connection] = "close" }
        let (response, body) = try await transport.send(request, body: nil, baseURL: baseURL, operationID: "bench")
        guard response.status == .ok else { throw BenchFailure("ShopKit: HTTP \(response.status.code)") }
        guard let body else { return 0 }
        if decodeJSON {
            // api-bare: what a hand-written client over the bare transport does with /json.
            let data = try await Data(collecting: body, upTo: 1 << 20)
            _ = try JSONDecoder().decode(BenchJSON.self, from: data)
            return data.count
        }
        var bytes = 0
        for try await chunk in body { bytes += chunk.count }
        return bytes
    }

    func shutdown() async throws {
        await transport.shutdown()
    }
}

/// The ShopKit client for `variant` on `workload`.
func makeShopKitClient(
    variant: ShopKitVariant, baseURL: URL, rootPEM: String, pins: [String], workload: Workload,
    eventLoopGroup: (any EventLoopGroup)? = nil, ct: BenchCTSetting? = nil
) throws -> (any BenchClient)? {
    let resumption = workload == .resumeECDSA || workload == .resumeRSA
    // Keep-alive workloads reuse connections, so resumption does not matter there; the new-connection ones
    // must do a full handshake each time.
    // The h2-* workloads: the default protocol choice (h2 when the server picks it), each new connection counted.
    let counter = workload.usesHTTP2Server ? ConnectionCounter() : nil
    let transport = try makeShopKitTransport(
        variant: variant, rootPEM: rootPEM, pins: pins, connections: workload.connections,
        resumption: resumption || !workload.newConnectionPerRequest,
        httpVersion: workload.usesHTTP2Server ? .automatic : nil, counter: counter, eventLoopGroup: eventLoopGroup,
        ct: ct)
    switch workload {
    case .apiStack:
        return ShopKitAPIBenchClient(transport: transport, baseURL: baseURL)
    case .apiBare:
        return ShopKitBenchClient(transport: transport, baseURL: baseURL, decodeJSON: true)
    default:
        return ShopKitBenchClient(transport: transport, baseURL: baseURL, counter: counter)
    }
}

/// The API client's full stack (retry → auth → dedup → transport, built by `ShopKitFactory`) fetching and
/// decoding `/json`, with a bearer token from an in-memory store.
final class ShopKitAPIBenchClient: BenchClient {
    private let transport: HTTPSTransport
    private let client: APIClient

    init(transport: HTTPSTransport, baseURL: URL) {
        self.transport = transport
        let configuration = ShopKitConfiguration(
            auth: .init(tokenStore: MemoryTokenStore(), tokenRefresher: FixedRefresher()))
        self.client = ShopKitFactory.makeAPIClient(baseURL: baseURL, configuration: configuration, transport: transport)
    }

    func get(_ path: String, closeConnection: Bool) async throws -> Int {
        let decoded = try await client.send(GetBenchJSON(path: path))
        // The APIClient hands back the decoded value, not the body: count what nginx serves for it.
        return decoded.id == 42 ? BenchJSON.servedBytes : 0
    }

    func shutdown() async throws {
        await transport.shutdown()
    }
}

/// GET /json through the API client.
struct GetBenchJSON: APIRequest {
    typealias Response = BenchJSON
    let path: String
}

/// A token store in memory (the bench measures the HTTP stack, not a credential backend).
actor MemoryTokenStore: TokenStore {
    private var tokens: AuthTokens? = AuthTokens(
        accessToken: String(repeating: "t", count: 64), refreshToken: "bench-refresh",
        expiresAt: Date(timeIntervalSinceNow: 86_400))

    func loadTokens() async throws -> AuthTokens? { tokens }
    func saveTokens(_ tokens: AuthTokens) async throws { self.tokens = tokens }
    func clearTokens() async throws { tokens = nil }
}

/// A refresher that is never needed (nginx never answers 401); it hands out fresh tokens if it were.
struct FixedRefresher: TokenRefresher {
    func refresh(_ tokens: AuthTokens) async throws -> AuthTokens {
        AuthTokens(accessToken: tokens.accessToken, refreshToken: tokens.refreshToken,
                   expiresAt: Date(timeIntervalSinceNow: 86_400))
    }
}

/// The small JSON the benchmark nginx serves at /json.
struct BenchJSON: Decodable, Sendable {
    let id: Int
    let name: String
    let tags: [String]

    /// The byte size of scripts/bench's /json.
    static let servedBytes = #"{"id":42,"name":"ShopKit","tags":["tls","pinning"]}"#.utf8.count
}


/// The CT verdict of one GET on a transport of its own with `ct`'s policy (ShopKit's debug log line
/// "Certificate Transparency", its `tls.ct` value), so a CT row states what every handshake of it did without
/// logging in the measured ones. Nil when no verdict was logged (CT disabled for the host).
func shopKitCTPreflight(
    baseURL: URL, rootPEM: String, pins: [String], path: String, ct: BenchCTSetting
) async throws -> String? {
    let verdicts = NIOLockedValueBox<[String]>([])
    var logger = Logger(label: "shopkit-bench.ct-preflight") { _ in CTVerdictLogHandler(verdicts: verdicts) }
    logger.logLevel = .debug
    let transport = try makeShopKitTransport(
        variant: .pinned, rootPEM: rootPEM, pins: pins, connections: 1, resumption: false, ct: ct, logger: logger)
    let client = ShopKitBenchClient(transport: transport, baseURL: baseURL)
    do {
        _ = try await client.get(path, closeConnection: true)
    } catch {
        try await client.shutdown()
        throw error
    }
    try await client.shutdown()
    return verdicts.withLockedValue { $0.first }
}

/// Keeps the `tls.ct` metadata of ShopKit's "Certificate Transparency" log lines.
private struct CTVerdictLogHandler: LogHandler {
    let verdicts: NIOLockedValueBox<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
        function: String, line: UInt
    ) {
        guard message.description.hasPrefix("Certificate Transparency"), let value = metadata?["tls.ct"] else { return }
        verdicts.withLockedValue { $0.append("\(value)") }
    }
}
