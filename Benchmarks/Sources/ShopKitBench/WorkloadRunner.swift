import Foundation
import ShopKitBenchCore

/// Drives one client through one workload and measures it.
struct WorkloadRunner: Sendable {
    let workload: Workload
    let requests: Int
    /// The workers' preferred executor (the caller-on-the-loop experiment), or nil for the default pool.
    var executor: (any TaskExecutor)? = nil

    /// Runs the warm-up, then the measured requests; fills in everything but client and workload names.
    func run(_ client: some BenchClient) async throws -> BenchResult {
        let warmup = workload.warmupRequests(measured: requests)
        // The memory rows compare against the process before any connection: their warm-up opens them all.
        let rssBeforeConnections = ProcStatus.rssKiB()
        _ = try await drive(client, requests: warmup)
        let rssBefore = workload.measuresMemory ? rssBeforeConnections : ProcStatus.rssKiB()
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
        switch workload {
        case .soak, .idle1000:
            result.rssBeforeKiB = rssBefore
            result.rssAfterKiB = rssAfter
        case .h2Streams1000:
            // Its streams are closed by the time the requests return: the peak is RSS with all of them open.
            result.rssBeforeKiB = rssBefore
            result.rssAfterKiB = result.peakRSSKiB
        default:
            break
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
                let work: @Sendable () async throws -> (Latencies, Int) = {
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
                // Only the experiment sets a preference: even a nil one gives the task a preference record,
                // which makes every executor switch of the request take the task's status lock.
                if let executor {
                    group.addTask(executorPreference: executor, operation: work)
                } else {
                    group.addTask(operation: work)
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
