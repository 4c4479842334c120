import Foundation

/// The fixed workloads of issue 6. Not to be tuned to a number: change them only with the issue.
public enum Workload: String, CaseIterable, Sendable {
    /// Keep-alive GET of the 64-byte body, one connection, one request at a time.
    case keepalive1 = "keepalive-1"
    /// Keep-alive GET of the 64-byte body, 32 concurrent connections (32 workers, one request each at a time).
    case keepalive32 = "keepalive-32"
    /// One new TLS connection per GET, full handshake, against the ECDSA P-256 leaf.
    case newconnECDSA = "newconn-ecdsa"
    /// One new TLS connection per GET, full handshake, against the RSA-2048 leaf.
    case newconnRSA = "newconn-rsa"
    /// One new TLS connection per GET, full handshake, against a fourth server whose ECDSA P-256 leaf carries
    /// three embedded SCTs (TestCerts/ct/leaf-ct-compliant): Certificate Transparency's cost (issue 41), ShopKit
    /// with CT disabled beside ShopKit with CT enforced against the test log list.
    case newconnCT = "newconn-ct"
    /// One new TLS connection per GET with session resumption (ShopKit, pin-checked), ECDSA leaf.
    case resumeECDSA = "resume-ecdsa"
    /// One new TLS connection per GET with session resumption (ShopKit, pin-checked), RSA leaf.
    case resumeRSA = "resume-rsa"
    /// Keep-alive GET of the 1 MiB body, one connection.
    case body1MiB = "body-1mib"
    /// The API client's full stack (retry → auth → dedup → transport) decoding the small JSON.
    case apiStack = "api-stack"
    /// The bare transport fetching the same JSON, for the decorators' cost.
    case apiBare = "api-bare"
    /// Keep-alive GETs of the 64-byte body on one connection; RSS after warm-up and after the requests.
    case soak = "soak"
    /// Against the HTTP/2 server: GET of the 64-byte body, 32 concurrent requests (32 workers) that a client
    /// speaking h2 carries as streams of one connection (one TLS handshake).
    case h2Keepalive32 = "h2-keepalive-32"
    /// Against the HTTP/2 server: GET of the 1 MiB body, one request at a time.
    case h2Body1MiB = "h2-body-1mib"
    /// 1 000 concurrent GETs of the 64-byte body (1 000 workers, so 1 000 HTTP/1.1 connections), then the
    /// measured requests on those connections one each; RSS before the first connection and with all of them
    /// idle in the pool.
    case idle1000 = "idle-1000"
    /// Against the HTTP/2 server: 1 000 concurrent GETs of `/hold` (1 000 workers) on one connection, whose
    /// answers nginx sends slowly (`limit_rate`: about 6 s each), so that all 1 000 streams are open at once;
    /// RSS before the first connection and at its peak, with the streams open.
    case h2Streams1000 = "h2-streams-1000"

    /// The path served by the benchmark nginx.
    public var path: String {
        switch self {
        case .body1MiB, .h2Body1MiB: return "/1mib"
        case .apiStack, .apiBare: return "/json"
        case .h2Streams1000: return "/hold"
        default: return "/64b"
        }
    }

    /// Concurrent workers; over HTTP/1.1 each needs its own connection, over HTTP/2 they share one.
    public var connections: Int {
        switch self {
        case .keepalive32, .h2Keepalive32: return 32
        case .idle1000, .h2Streams1000: return 1_000
        default: return 1
        }
    }

    /// Whether the workload runs against the server that offers `h2` in ALPN (scripts/bench's third server).
    public var usesHTTP2Server: Bool { self == .h2Keepalive32 || self == .h2Body1MiB || self == .h2Streams1000 }

    /// Whether the row is about resident memory with every worker's connection or stream open, not about rate.
    public var measuresMemory: Bool { self == .idle1000 || self == .h2Streams1000 }

    /// Whether every request carries `Connection: close`.
    public var newConnectionPerRequest: Bool {
        switch self {
        case .newconnECDSA, .newconnRSA, .newconnCT, .resumeECDSA, .resumeRSA: return true
        default: return false
        }
    }

    /// Measured requests in a full run; `--quick` divides by 10.
    public var defaultRequests: Int {
        switch self {
        case .keepalive1: return 20_000
        case .keepalive32, .h2Keepalive32: return 40_000
        case .newconnECDSA, .newconnRSA, .newconnCT, .resumeECDSA, .resumeRSA: return 2_000
        case .body1MiB, .h2Body1MiB: return 2_000
        case .apiStack, .apiBare: return 20_000
        case .soak: return 100_000
        case .idle1000, .h2Streams1000: return 1_000
        }
    }

    /// Unmeasured requests first (connections up, caches and allocator warm).
    /// (The memory rows: one request per worker, which opens every connection or stream.)
    public func warmupRequests(measured: Int) -> Int {
        measuresMemory ? connections : max(connections * 10, measured / 10)
    }
}

