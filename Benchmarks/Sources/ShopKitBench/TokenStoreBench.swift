// Token-store throughput: the keyring store, the encrypted-file store with its key cached, and one unlock.
//
// Both stores go through CredentialVault, as the composition root uses them. `secret-tool lookup` is timed by
// scripts/bench itself, beside these rows.
import ArgumentParser
import Foundation
import ShopKitBenchCore
import ShopKitAPI
import ShopKitCredentials

/// Measures reads and writes per second of one token store, and the file store's unlock (KDF) cost.
struct Tokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measures a token store: writes/s and reads/s (and, for the file store, one unlock).",
        discussion: "Run the keyring store inside scripts/with-keyring (a private, unlocked gnome-keyring).")

    enum Store: String, ExpressibleByArgument, CaseIterable {
        case keyring, file
    }

    @Option(help: "keyring or file.")
    var store: Store

    @Option(help: "Writes and reads each.")
    var operations = 1000

    @Option(help: "File store only: unlocks (fresh store, first read = one scrypt) to time.")
    var unlocks = 3

    @Flag(help: "A tenth of the operations.")
    var quick = false

    func run() async throws {
        let count = max(1, operations / (quick ? 10 : 1))
        let key = CredentialKey(service: "dev.shopkit.bench", account: "bench-\(getpid())")
        let tokens = AuthTokens(
            accessToken: String(repeating: "a", count: 64), refreshToken: String(repeating: "r", count: 64),
            expiresAt: Date(timeIntervalSinceNow: 3600))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let fileURL = directory.appendingPathComponent("tokens.skt")

        let store = self.store
        let makeBackend: @Sendable () -> any CredentialBackend = {
            switch store {
            case .keyring:
                return KeyringStore(timeout: .seconds(5), allowUnlockPrompt: false)
            case .file:
                // A throwaway passphrase for a throwaway file; never printed.
                return EncryptedFileStore(
                    configuration: .init(url: fileURL),  // scrypt at its fixed cost, as an app gets it
                    passphrase: Passphrase(bytes: Array("shopkit-bench-throwaway".utf8)))
            }
        }
        let name = "token-\(store.rawValue)"
        let vault = CredentialVault(backend: makeBackend())
        let writeFailed = await measure("\(name)-write", count: count) {
            try await vault.write(tokens, for: key)
        }
        let readFailed = await measure("\(name)-read", count: count) {
            _ = try await vault.read(key)
        }
        var failed = writeFailed || readFailed
        if store == .file {
            let unlockFailed = await measure("\(name)-unlock", count: max(1, unlocks)) {
                // A fresh store has no cached key: its first read runs the KDF once.
                _ = try await CredentialVault(backend: makeBackend()).read(key)
            }
            failed = failed || unlockFailed
        }
        try? await vault.delete(key)
        if failed { throw ExitCode.failure }
    }

    /// Times `count` calls of `operation`, prints one JSON line; returns whether it failed.
    private func measure(
        _ workload: String, count: Int, _ operation: () async throws -> Void
    ) async -> Bool {
        var result = BenchResult(client: "shopkit", workload: workload)
        var latencies = Latencies()
        latencies.nanos.reserveCapacity(count)
        let clock = ContinuousClock()
        let start = clock.now
        do {
            for _ in 0..<count {
                let begin = clock.now
                try await operation()
                latencies.append(clock.now - begin)
            }
        } catch {
            let text = "\(error)"
            result.status = "failed"
            result.note = text
            print(result.jsonLine())
            return result.status == "failed"
        }
        let elapsed = (clock.now - start).seconds
        let sorted = latencies.nanos.sorted()
        result.requests = count
        result.seconds = elapsed
        result.reqPerSec = Double(count) / elapsed
        result.p50Micros = latencies.quantileMicros(0.5, sorted: sorted)
        result.p99Micros = latencies.quantileMicros(0.99, sorted: sorted)
        result.peakRSSKiB = ProcStatus.peakRSSKiB()
        print(result.jsonLine())
        return false
    }
}
