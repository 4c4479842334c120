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
/// cannot be read or is refused changes nothing and is reported.
///
/// As `PinUpdates` does: when the document in force expires, a timer of its own applies the baseline again
/// (whether ``run()`` runs or not), and the rollback floor (the highest version ever applied) is kept in
/// `path + ".floor"` (0600, written under `path + ".lock"`, in the file's directory, which must be private to the
/// user), recorded before a document applies: a document whose version cannot be recorded is not applied, and an
/// older document is refused after a restart too. The document the floor names applies again after a restart.
///
/// Call ``reload()`` on demand (from a `SIGHUP` handler, say) or ``run()`` in a task of its own to check the file
/// every `interval`.
public final class PinsFileWatcher: DocumentTracking {
    private struct Watch: Sendable {
        var fingerprint: [Int]?
        /// When a document refused as issued in the future becomes valid: it is read again then.
        var retryAt: Date?
    }

    let transport: HTTPSTransport
    private let path: String
    private let interval: Duration
    let onEvent: @Sendable (PinUpdates.Event) -> Void
    let now: @Sendable () -> Date
    private let sleep: @Sendable (Duration) async throws -> Void
    let sleepUntil: @Sendable (Date) async throws -> Void
    /// Runs after each read (tests swap the file there).
    private let afterRead: @Sendable () -> Void
    private let watch = NIOLockedValueBox(Watch())
    let state: NIOLockedValueBox<DocumentInForce<PinSetDocument>>
    let io = DispatchQueue(label: "ShopKit.PinsFileWatcher")
    /// The rollback floor's file, beside the watched file.
    var rollbackFloor: RollbackFloor { RollbackFloor(path: path + ".floor", lockPath: path + ".lock") }

    /// Watches `path` for `transport`, checking it every `interval` (default 5 s) while ``run()`` runs.
    public convenience init(
        transport: HTTPSTransport, path: String, interval: Duration = .seconds(5),
        onEvent: @escaping @Sendable (PinUpdates.Event) -> Void = { _ in }
    ) {
        self.init(
            transport: transport, path: path, interval: interval, onEvent: onEvent, now: { Date() },
            sleep: { try await Task.sleep(for: $0) }, sleepUntil: PinsFileWatcher.sleepUntilWallClock)
    }

    /// The same with an injected clock, sleeper and expiry timer, and a hook after each read (tests).
    init(
        transport: HTTPSTransport, path: String, interval: Duration,
        onEvent: @escaping @Sendable (PinUpdates.Event) -> Void, now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        sleepUntil: @escaping @Sendable (Date) async throws -> Void = PinsFileWatcher.sleepUntilWallClock,
        afterRead: @escaping @Sendable () -> Void = {}
    ) {
        self.sleepUntil = sleepUntil
        self.afterRead = afterRead
        self.transport = transport
        self.path = path
        self.interval = interval
        self.onEvent = onEvent
        self.now = now
        self.sleep = sleep
        self.state = NIOLockedValueBox(DocumentInForce(floor: transport.configuration.tls.pinning.version))
    }

    deinit {
        state.withLockedValue { $0.expiryTimer?.cancel() }
    }

    /// Reads the file and applies it if it is a valid document above the version in force; returns that version.
    ///
    /// The fingerprint ``run()`` compares is taken from the very file read (its `fstat`, before its first byte),
    /// or, when the file cannot be read, before the attempt: a file swapped in meanwhile is always read again.
    ///
    /// - Throws: the `CredentialError` of an unreadable or unsafe file (or rollback floor, or a floor that cannot
    ///   be recorded), or the `PinSetDocumentError` that refused it; the policy in force did not change.
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
        watch.withLockedValue {
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
        let floorFile = rollbackFloor
        let storedFloor: Int?
        switch await onIO({ () throws(CredentialError) -> Int? in try floorFile.read() }) {
        case .success(let floor): storedFloor = floor
        case .failure(let error):
            // A floor that cannot be read protects nothing: no document applies until it can be (fail safe).
            onEvent(.storedDocumentUnusable(error))
            throw error
        }
        let checked = state.withLockedValue { state -> Result<PinSetDocument, PinSetDocumentError> in
            Result { () throws(PinSetDocumentError) in
                let document = try PinSetDocument(json: bytes)
                let current = currentVersion(for: document.version, storedFloor: storedFloor, state)
                try document.check(baseline: baseline, currentVersion: current, now: now())
                return document
            }
        }
        let document: PinSetDocument
        switch checked {
        case .success(let accepted): document = accepted
        case .failure(let error):
            if case .notYetValid(let issuedAt) = error {
                // It becomes valid by itself: read it again then, even if the file does not change.
                watch.withLockedValue { $0.retryAt = issuedAt.addingTimeInterval(-PinSetDocument.clockSkew) }
            }
            onEvent(.refused(error))
            throw error
        }
        // Recorded before it applies: no restart can go below a version that was in force.
        if let error = await storeFloor(document.version) {
            onEvent(.floorNotStored(version: document.version, error))
            throw error
        }
        let applied = state.withLockedValue { state -> Result<Int, PinSetDocumentError> in
            // Another reload may have applied a newer document while the floor was written.
            let current = max(state.floor, transport.pinning.version)
            guard document.version > current else { return .failure(.notNewer(version: document.version, current: current)) }
            apply(document, &state)
            return .success(document.version)
        }
        switch applied {
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
            let (recorded, retryAt) = watch.withLockedValue { ($0.fingerprint, $0.retryAt) }
            if current != recorded || retryAt.map({ now() >= $0 }) == true { _ = try? await reload() }
            do { try await sleep(interval) } catch { return }
        }
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
