import NIOConcurrencyHelpers
import Foundation
import ShopKitCore
import ShopKitCredentials
import ShopKitHTTPS
import ShopKitPinning

/// Applies a local pin-set document file to an `HTTPSTransport` and applies it again whenever it changes: pins
/// for a server-side deployment, swapped without a restart.
///
/// The file is a `PinSetDocument`'s JSON, unsigned: it is trusted as the process's own configuration, so it must
/// follow the token store's file rules (owned by the user, mode 0600 or stricter, not a symbolic link). Every other
/// rule of a document holds: a version above the one in force, valid now, keeping the baseline's hosts. A file that
/// cannot be read or is refused changes nothing and is reported; when the document in force expires, the baseline
/// applies again.
///
/// Call ``reload()`` on demand (from a `SIGHUP` handler, say) or ``run()`` in a task of its own to check the file
/// every `interval`.
public final class PinsFileWatcher: Sendable {
    private struct State: Sendable {
        var fingerprint: [Int]?
        var inForce: (version: Int, expiresAt: Date)?
        var floor: Int
    }

    private let transport: HTTPSTransport
    private let path: String
    private let interval: Duration
    private let onEvent: @Sendable (PinUpdates.Event) -> Void
    private let now: @Sendable () -> Date
    private let sleep: @Sendable (Duration) async throws -> Void
    private let state: NIOLockedValueBox<State>
    private let io = DispatchQueue(label: "ShopKit.PinsFileWatcher")

    /// Watches `path` for `transport`, checking it every `interval` (default 5 s) while ``run()`` runs.
    public convenience init(
        transport: HTTPSTransport, path: String, interval: Duration = .seconds(5),
        onEvent: @escaping @Sendable (PinUpdates.Event) -> Void = { _ in }
    ) {
        self.init(
            transport: transport, path: path, interval: interval, onEvent: onEvent, now: { Date() },
            sleep: { try await Task.sleep(for: $0) })
    }

    /// The same with an injected clock and sleeper (tests).
    init(
        transport: HTTPSTransport, path: String, interval: Duration,
        onEvent: @escaping @Sendable (PinUpdates.Event) -> Void, now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.transport = transport
        self.path = path
        self.interval = interval
        self.onEvent = onEvent
        self.now = now
        self.sleep = sleep
        self.state = NIOLockedValueBox(State(fingerprint: nil, inForce: nil, floor: transport.configuration.tls.pinning.version))
    }

    /// Reads the file and applies it if it is a valid document above the version in force; returns that version.
    ///
    /// - Throws: the `CredentialError` of an unreadable or unsafe file, or the `PinSetDocumentError` that refused
    ///   it; the policy in force did not change.
    @discardableResult
    public func reload() async throws -> Int {
        fallBackIfExpired()
        let path = self.path
        let read: Result<([UInt8]?, [Int]), CredentialError> = await withCheckedContinuation { continuation in
            io.async {
                continuation.resume(
                    returning: Result { () throws(CredentialError) in (try TokenFileIO.read(path), Self.fingerprint(path)) })
            }
        }
        let bytes: [UInt8]
        switch read {
        case .failure(let error):
            onEvent(.storedDocumentUnusable(error))
            throw error
        case .success((nil, _)):
            let error = CredentialError.io("\(path) does not exist: write the pin-set document there")
            onEvent(.storedDocumentUnusable(error))
            throw error
        case .success((let contents?, let fingerprint)):
            state.withLockedValue { $0.fingerprint = fingerprint }
            bytes = contents
        }
        let baseline = transport.configuration.tls.pinning
        let outcome = state.withLockedValue { state -> Result<Int, PinSetDocumentError> in
            do throws(PinSetDocumentError) {
                let document = try PinSetDocument(json: bytes)
                let current = max(state.floor, transport.pinning.version)
                try document.check(baseline: baseline, currentVersion: current, now: now())
                transport.replacePinning(document.policy)
                state.floor = document.version
                state.inForce = (document.version, document.expiresAt)
                return .success(document.version)
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let version):
            onEvent(.applied(version: version))
            return version
        case .failure(let error):
            onEvent(.refused(error))
            throw error
        }
    }

    /// Checks the file every `interval` until the task is cancelled and reloads it when it changed (its inode,
    /// size or modification time); applies the baseline again when the document in force expires.
    public func run() async {
        while !Task.isCancelled {
            fallBackIfExpired()
            let path = self.path
            let current = await withCheckedContinuation { continuation in
                io.async { continuation.resume(returning: Self.fingerprint(path)) }
            }
            if current != state.withLockedValue({ $0.fingerprint }) { _ = try? await reload() }
            do { try await sleep(interval) } catch { return }
        }
    }

    private func fallBackIfExpired() {
        let expired = state.withLockedValue { state -> Int? in
            guard let inForce = state.inForce, now() >= inForce.expiresAt else { return nil }
            state.inForce = nil
            transport.replacePinning(transport.configuration.tls.pinning)
            return inForce.version
        }
        if let expired { onEvent(.expired(version: expired)) }
    }

    /// What tells one version of the file from the next: inode, size, modification time (ns); empty when absent.
    private static func fingerprint(_ path: String) -> [Int] {
        var info = stat()
        guard lstat(path, &info) == 0 else { return [] }
        return [Int(info.st_ino), Int(info.st_size), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)]
    }
}
