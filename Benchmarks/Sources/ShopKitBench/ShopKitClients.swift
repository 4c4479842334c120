// ShopKit clients for the benchmark: the pinned HTTPS transport (pins on and off), bare or under the API
// client's full decorator stack.
//
// Each workload gets the transport configured the way a user would for it: one pooled connection per worker
// (keep-alive-32 lets the pool open 32), session resumption off for the full-handshake workloads (newconn-*)
// and on for resume-* (every resumed connection is still held to the pin verdict of its session's full
// handshake), and the composition root's APIClient (retry → auth → dedup → transport) for api-stack.
import Foundation
import HTTPTypes
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

/// The transport configuration for one variant and workload.
///
/// `httpVersion` nil keeps the transport's default (`.automatic`: h2 and http/1.1 offered in ALPN; the plain
/// benchmark servers choose http/1.1). `counter` gets a debug logger that counts new connections.
func makeShopKitTransport(
    variant: ShopKitVariant, rootPEM: String, pins: [String], connections: Int, resumption: Bool,
    httpVersion: HTTPSTransport.HTTPVersionPolicy? = nil, counter: ConnectionCounter? = nil,
    eventLoopGroup: (any EventLoopGroup)? = nil
) throws -> HTTPSTransport {
    var pinning = PinningPolicy()
    if variant == .pinned {
        let parsed = try pins.map { try SPKIPin($0) }
        pinning = PinningPolicy(pinSets: [try PinSet(hostPattern: try HostPattern("127.0.0.1"), pins: parsed)])
    }
    var tls = ShopKitTLS.TLSClientConfiguration(
        trustRoots: .pem(rootPEM, addingToSystem: false), pinning: pinning, sessionResumption: resumption)
    if let counter { tls.logger = counter.shopKitLogger() }
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
    eventLoopGroup: (any EventLoopGroup)? = nil
) throws -> (any BenchClient)? {
    let resumption = workload == .resumeECDSA || workload == .resumeRSA
    // Keep-alive workloads reuse connections, so resumption does not matter there; the new-connection ones
    // must do a full handshake each time.
    // The h2-* workloads: the default protocol choice (h2 when the server picks it), each new connection counted.
    let counter = workload.usesHTTP2Server ? ConnectionCounter() : nil
    let transport = try makeShopKitTransport(
        variant: variant, rootPEM: rootPEM, pins: pins, connections: workload.connections,
        resumption: resumption || !workload.newConnectionPerRequest,
        httpVersion: workload.usesHTTP2Server ? .automatic : nil, counter: counter, eventLoopGroup: eventLoopGroup)
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

