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
        /// When a document refused as issued in the future becomes valid: it is read again then.
        var retryAt: Date?
        var inForce: (version: Int, expiresAt: Date)?
        var floor: Int
    }

    private let transport: HTTPSTransport
    private let path: String
    private let interval: Duration
    private let onEvent: @Sendable (PinUpdates.Event) -> Void
    private let now: @Sendable () -> Date
    private let sleep: @Sendable (Duration) async throws -> Void
    /// Runs after each read (tests swap the file there).
    private let afterRead: @Sendable () -> Void
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

    /// The same with an injected clock and sleeper, and a hook after each read (tests).
    init(
        transport: HTTPSTransport, path: String, interval: Duration,
        onEvent: @escaping @Sendable (PinUpdates.Event) -> Void, now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (Duration) async throws -> Void, afterRead: @escaping @Sendable () -> Void = {}
    ) {
        self.afterRead = afterRead
        self.transport = transport
        self.path = path
        self.interval = interval
        self.onEvent = onEvent
        self.now = now
        self.sleep = sleep
        self.state = NIOLockedValueBox(State(fingerprint: nil, retryAt: nil, inForce: nil, floor: transport.configuration.tls.pinning.version))
    }

    /// Reads the file and applies it if it is a valid document above the version in force; returns that version.
    ///
    /// The fingerprint ``run()`` compares is taken from the very file read (its `fstat`, before its first byte),
    /// or, when the file cannot be read, before the attempt: a file swapped in meanwhile is always read again.
    ///
    /// - Throws: the `CredentialError` of an unreadable or unsafe file, or the `PinSetDocumentError` that refused
    ///   it; the policy in force did not change.
    @discardableResult
    public func reload() async throws -> Int {
        fallBackIfExpired()
        let (path, afterRead) = (self.path, self.afterRead)
        let read: (Result<[UInt8]?, CredentialError>, [Int]) = await withCheckedContinuation { continuation in
            io.async {
                let before = Self.fingerprint(path)
                let result = Result { () throws(CredentialError) in try TokenFileIO.readWithStatus(path) }
                afterRead()
                switch result {
                case .success(let read?): continuation.resume(returning: (.success(read.bytes), Self.fingerprint(read.status)))
                case .success(nil): continuation.resume(returning: (.success(nil), before))
                case .failure(let error): continuation.resume(returning: (.failure(error), before))
                }
            }
        }
        state.withLockedValue {
            $0.fingerprint = read.1
            $0.retryAt = nil
        }
        let bytes: [UInt8]
        switch read.0 {
        case .failure(let error):
            onEvent(.storedDocumentUnusable(error))
            throw error
        case .success(nil):
            let error = CredentialError.io("\(path) does not exist: write the pin-set document there")
            onEvent(.storedDocumentUnusable(error))
            throw error
        case .success(let contents?):
            bytes = contents
        }
        let baseline = transport.configuration.tls.pinning
        let outcome = state.withLockedValue { state -> Result<Int, PinSetDocumentError> in
            do throws(PinSetDocumentError) {
                let document = try PinSetDocument(json: bytes)
                let current = max(state.floor, transport.pinning.version)
                do throws(PinSetDocumentError) {
                    try document.check(baseline: baseline, currentVersion: current, now: now())
                } catch {
                    if case .notYetValid(let issuedAt) = error {
                        // It becomes valid by itself: read it again then, even if the file does not change.
                        state.retryAt = issuedAt.addingTimeInterval(-PinSetDocument.clockSkew)
                    }
                    throw error
                }
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
    /// size, modification or status-change time: a `chmod` that makes it safe counts) or when a document issued
    /// in the future has become valid; applies the baseline again when the document in force expires.
    public func run() async {
        while !Task.isCancelled {
            fallBackIfExpired()
            let path = self.path
            let current = await withCheckedContinuation { continuation in
                io.async { continuation.resume(returning: Self.fingerprint(path)) }
            }
            let (recorded, retryAt) = state.withLockedValue { ($0.fingerprint, $0.retryAt) }
            if current != recorded || retryAt.map({ now() >= $0 }) == true { _ = try? await reload() }
            do { try await sleep(interval) } catch { return }
        }
    }

    /// Applies the baseline again when the document in force has expired, unless another policy replaced it since.
    private func fallBackIfExpired() {
        let expired = state.withLockedValue { state -> Int? in
            guard let inForce = state.inForce, now() >= inForce.expiresAt else { return nil }
            state.inForce = nil
            guard transport.replacePinning(transport.configuration.tls.pinning, ifVersion: inForce.version) else {
                return nil
            }
            return inForce.version
        }
        if let expired { onEvent(.expired(version: expired)) }
    }

    /// What tells one version of the file from the next: inode, size, modification and status-change times (ns);
    /// empty when absent.
    private static func fingerprint(_ path: String) -> [Int] {
        var info = stat()
        guard lstat(path, &info) == 0 else { return [] }
        return fingerprint(info)
    }

    private static func fingerprint(_ info: stat) -> [Int] {
        [
            Int(info.st_ino), Int(info.st_size), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec),
            Int(info.st_ctim.tv_sec), Int(info.st_ctim.tv_nsec),
        ]
    }
}
