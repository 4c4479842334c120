import Foundation

/// The fixed workloads of issue 6. Not to be tuned to a number: change them only with the issue.
enum Workload: String, CaseIterable, Sendable {
    /// Keep-alive GET of the 64-byte body, one connection, one request at a time.
    case keepalive1 = "keepalive-1"
    /// Keep-alive GET of the 64-byte body, 32 concurrent connections (32 workers, one request each at a time).
    case keepalive32 = "keepalive-32"
    /// One new TLS connection per GET, full handshake, against the ECDSA P-256 leaf.
    case newconnECDSA = "newconn-ecdsa"
    /// One new TLS connection per GET, full handshake, against the RSA-2048 leaf.
    case newconnRSA = "newconn-rsa"
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

    /// The path served by the benchmark nginx.
    var path: String {
        switch self {
        case .body1MiB: return "/1mib"
        case .apiStack, .apiBare: return "/json"
        default: return "/64b"
        }
    }

    /// Concurrent workers, each with its own connection.
    var connections: Int { self == .keepalive32 ? 32 : 1 }

    /// Whether every request carries `Connection: close`.
    var newConnectionPerRequest: Bool {
        switch self {
        case .newconnECDSA, .newconnRSA, .resumeECDSA, .resumeRSA: return true
        default: return false
        }
    }

    /// Measured requests in a full run; `--quick` divides by 10.
    var defaultRequests: Int {
        switch self {
        case .keepalive1: return 20_000
        case .keepalive32: return 40_000
        case .newconnECDSA, .newconnRSA, .resumeECDSA, .resumeRSA: return 2_000
        case .body1MiB: return 2_000
        case .apiStack, .apiBare: return 20_000
        case .soak: return 100_000
        }
    }

    /// Unmeasured requests first (connections up, caches and allocator warm).
    func warmupRequests(measured: Int) -> Int { max(connections * 10, measured / 10) }
}

/// Drives one client through one workload and measures it.
struct WorkloadRunner: Sendable {
    let workload: Workload
    let requests: Int

    /// Runs the warm-up, then the measured requests; fills in everything but client and workload names.
    func run(_ client: some BenchClient) async throws -> BenchResult {
        let warmup = workload.warmupRequests(measured: requests)
        _ = try await drive(client, requests: warmup)
        let rssBefore = ProcStatus.rssKiB()
        let start = ContinuousClock.now
        let (latencies, bytes) = try await drive(client, requests: requests)
        let elapsed = (ContinuousClock.now - start).seconds
        let rssAfter = ProcStatus.rssKiB()

        let sorted = latencies.nanos.sorted()
        var result = BenchResult(client: "", workload: workload.rawValue)
        result.requests = sorted.count
        result.seconds = elapsed
        result.reqPerSec = Double(sorted.count) / elapsed
        result.p50Micros = latencies.quantileMicros(0.50, sorted: sorted)
        result.p99Micros = latencies.quantileMicros(0.99, sorted: sorted)
        result.mibPerSec = Double(bytes) / elapsed / 1_048_576
        result.peakRSSKiB = ProcStatus.peakRSSKiB()
        if workload == .soak {
            result.rssBeforeKiB = rssBefore
            result.rssAfterKiB = rssAfter
        }
        return result
    }

    /// `requests` GETs spread over the workload's workers; returns every latency and the body bytes read.
    private func drive(_ client: some BenchClient, requests: Int) async throws -> (Latencies, Int) {
        let workers = workload.connections
        let path = workload.path
        let close = workload.newConnectionPerRequest
        return try await withThrowingTaskGroup(of: (Latencies, Int).self) { group in
            for worker in 0..<workers {
                let share = requests / workers + (worker < requests % workers ? 1 : 0)
                group.addTask {
                    var latencies = Latencies()
                    latencies.nanos.reserveCapacity(share)
                    var bytes = 0
                    let clock = ContinuousClock()
                    for _ in 0..<share {
                        let start = clock.now
                        bytes += try await client.get(path, closeConnection: close)
                        latencies.append(clock.now - start)
                    }
                    return (latencies, bytes)
                }
            }
            var all = Latencies()
            all.nanos.reserveCapacity(requests)
            var bytes = 0
            for try await (latencies, count) in group {
                all.append(contentsOf: latencies)
                bytes += count
            }
            return (all, bytes)
        }
    }
}
