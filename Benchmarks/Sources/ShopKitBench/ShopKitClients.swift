// ShopKit clients for the benchmark — THE ADAPTER THE INTEGRATOR FINISHES.
//
// Written against the transport API agreed for issue 3 while that transport was being built in another branch:
//     HTTPSTransport(configuration:), HTTPSTransport.Configuration(tls:),
//     TLSConfiguration(trustRoots: .pem(rootPEM, addingToSystem: false), pinning:),
//     PinningPolicy(pinSets: [PinSet(hostPattern: HostPattern("127.0.0.1"), pins: [...])]), SPKIPin("sha256/…"),
//     ClientTransport.send(_:body:baseURL:operationID:).
// It compiles only when `swift build` runs with SHOPKIT_TRANSPORT_READY=1 in its environment (see
// Benchmarks/Package.swift; `scripts/bench --shopkit` sets it). Without it, the ShopKit clients report
// "pending integration" and the rest of the benchmark builds and runs.
//
// INTEGRATOR, to add the ShopKit rows:
//   1. Build with `scripts/bench --shopkit` (or SHOPKIT_TRANSPORT_READY=1 swift build -c release
//      --package-path Benchmarks) and fix what does not compile below; every guess is marked `INTEGRATOR:`.
//   2. Pool size: the keep-alive-32 workload needs up to 32 connections to 127.0.0.1 (see `connections`).
//   3. Resumption: the newconn-* workloads need full handshakes; resume-* need pin-checked resumption.
//   4. api-stack / api-bare: fill in `makeShopKitAPIClient` with the composition root's APIClient
//      (retry → auth → dedup → transport, auth reading an in-memory TokenStore), decoding /json.
//   5. Run scripts/bench and commit BENCHMARKS.md.
//
// Checked before hand-off: with a stub `HTTPSTransport` of exactly these names (a `ClientTransport` with
// `Configuration(tls:)` and a throwing `init(configuration:)`), this file compiled and `run --client shopkit-pinned`
// went through it; without the flag the package builds and the rows read "pending integration".
import Foundation
import ShopKitBenchCore
import HTTPTypes
import OpenAPIRuntime
import ShopKitPinning
import ShopKitTLS

/// The ShopKit variants the benchmark knows.
enum ShopKitVariant: String, Sendable {
    /// Pins on: the leaf's SPKI and a backup intermediate's (not in the chain).
    case pinned = "shopkit-pinned"
    /// The same transport with no pin set, to show what pinning costs.
    case unpinned = "shopkit-unpinned"
}

#if SHOPKIT_TRANSPORT_READY

/// ShopKit's `HTTPSTransport` driven as a bare `ClientTransport`.
final class ShopKitBenchClient: BenchClient {
    private let transport: HTTPSTransport
    private let baseURL: URL

    init(
        variant: ShopKitVariant, baseURL: URL, rootPEM: String, pins: [String], connections: Int,
        resumption: Bool
    ) throws {
        var pinning = PinningPolicy()
        if variant == .pinned {
            let parsed = try pins.map { try SPKIPin($0) }
            pinning = PinningPolicy(pinSets: [PinSet(hostPattern: HostPattern("127.0.0.1"), pins: parsed)])
        }
        let tls = ShopKitTLS.TLSConfiguration(trustRoots: .pem(rootPEM, addingToSystem: false), pinning: pinning)
        let configuration = HTTPSTransport.Configuration(tls: tls)
        // INTEGRATOR: make `configuration` var and let the pool open `connections` connections to one host
        // (keep-alive-32 uses 32; the others 1).
        // INTEGRATOR: turn session resumption off when `resumption` is false (newconn-* = full handshakes) and
        // on when true (resume-*: every resumed session must still be pin-checked).
        _ = (connections, resumption)
        self.transport = try HTTPSTransport(configuration: configuration)
        self.baseURL = baseURL
    }

    func get(_ path: String, closeConnection: Bool) async throws -> Int {
        var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
        if closeConnection { request.headerFields[.connection] = "close" }
        let (response, body) = try await transport.send(request, body: nil, baseURL: baseURL, operationID: "bench")
        guard response.status == .ok else { throw BenchFailure("ShopKit: HTTP \(response.status.code)") }
        var bytes = 0
        if let body {
            for try await chunk in body { bytes += chunk.count }
        }
        return bytes
    }

    func shutdown() async throws {
        // INTEGRATOR: shut the transport's pool and event loops down if it has such a call.
    }
}

/// The ShopKit client for `variant`.
func makeShopKitClient(
    variant: ShopKitVariant, baseURL: URL, rootPEM: String, pins: [String], workload: Workload
) throws -> (any BenchClient)? {
    switch workload {
    case .apiStack, .apiBare:
        return try makeShopKitAPIClient(
            variant: variant, baseURL: baseURL, rootPEM: rootPEM, pins: pins, fullStack: workload == .apiStack)
    default:
        let resumption = workload == .resumeECDSA || workload == .resumeRSA
        return try ShopKitBenchClient(
            variant: variant, baseURL: baseURL, rootPEM: rootPEM, pins: pins,
            connections: workload.connections, resumption: resumption)
    }
}

/// The API client's full stack, or the bare transport, fetching and decoding `/json`.
func makeShopKitAPIClient(
    variant: ShopKitVariant, baseURL: URL, rootPEM: String, pins: [String], fullStack: Bool
) throws -> (any BenchClient)? {
    // INTEGRATOR: return a BenchClient whose get(_:closeConnection:) sends GET /json through
    //   fullStack ? APIClient(retry → auth → dedup → transport) : the bare HTTPSTransport,
    // decodes the body into `BenchJSON` with JSONDecoder, and returns the body's byte count.
    // Return nil until then: the row reads "pending integration".
    nil
}

/// The small JSON the benchmark nginx serves at /json.
struct BenchJSON: Decodable, Sendable {
    let id: Int
    let name: String
    let tags: [String]
}

#else

/// Without SHOPKIT_TRANSPORT_READY the ShopKit clients are not built: every ShopKit row is pending.
func makeShopKitClient(
    variant: ShopKitVariant, baseURL: URL, rootPEM: String, pins: [String], workload: Workload
) throws -> (any BenchClient)? {
    nil
}

#endif
