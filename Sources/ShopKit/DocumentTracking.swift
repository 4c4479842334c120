import NIOConcurrencyHelpers
import Foundation
import ShopKitCredentials
import ShopKitHTTPS
import ShopKitPinning

/// A signed document kept in force over a transport: a pin-set document or a CT log-list document.
protocol SignedUpdateDocument: Sendable {
    /// The document's version, above every one applied before.
    var version: Int { get }
    /// When the document stops being applied.
    var expiresAt: Date { get }
    /// Whether the document has expired at `now`.
    func isExpired(at now: Date) -> Bool
}

extension PinSetDocument: SignedUpdateDocument {}
extension CTLogListDocument: SignedUpdateDocument {}

/// The document in force over a transport, as `PinUpdates`, `PinsFileWatcher` and `CTLogListUpdates` keep it.
struct DocumentInForce<Document: SignedUpdateDocument>: Sendable {
    /// The highest version ever accepted (stored or applied): nothing at or below it is applied again.
    var floor: Int
    /// The document in force, nil while the baseline is.
    var document: Document?
    /// Ends the document in force when it expires (`fallBackIfExpired()`); cancelled when another applies.
    var expiryTimer: Task<Void, Never>?
}

/// The rollback floor kept in a file of its own (the highest version ever applied, in decimal, 0600, under the
/// token store's file rules), so that losing a document, or the process, does not lose it.
struct RollbackFloor: Sendable {
    /// The floor's file.
    let path: String
    /// The lock its writers take (shared with whatever else they write beside it).
    let lockPath: String
    /// What the floor is the version of, for messages.
    var documentKind = "pin-set document"

    /// The stored floor, nil when there is none.
    func read() throws(CredentialError) -> Int? {
        guard let bytes = try TokenFileIO.read(path) else { return nil }
        guard let floor = Int(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
            floor >= 0
        else {
            throw .corrupt("\(path) does not hold a \(documentKind) version; delete it only if you accept rollbacks")
        }
        return floor
    }

    /// Raises the stored floor to `version` (atomically, under the lock); never lowers it.
    func raise(to version: Int) throws(CredentialError) {
        try TokenFileIO.ensureDirectory((path as NSString).deletingLastPathComponent)
        try TokenFileIO.withExclusiveLock(lockPath) { () throws(CredentialError) in
            if let stored = try read(), stored >= version { return }
            try TokenFileIO.atomicReplace(path, with: Array("\(version)\n".utf8))
        }
    }
}

/// The events of a signed-document updater (``PinUpdates/Event``, ``CTLogListUpdates/Event``): each enum's cases
/// witness these, so the flows both updaters share report in the updater's own words.
protocol SignedDocumentEvent: Sendable {
    /// What refuses a document of the updater's kind (`PinSetDocumentError`, `CTLogListDocumentError`), its
    /// message naming that kind.
    associatedtype DocumentError: Error
    static func applied(version: Int) -> Self
    static func refused(_ error: DocumentError) -> Self
    static func fetchFailed(_ error: any Error) -> Self
    static func storedDocumentUnusable(_ error: any Error) -> Self
    static func expired(version: Int) -> Self
    static func storeFailed(_ error: any Error) -> Self
    static func upToDate(version: Int) -> Self
    static func floorNotStored(version: Int, _ error: any Error) -> Self
}

extension PinUpdates.Event: SignedDocumentEvent {}

/// What every keeper of a signed document shares (`PinUpdates`, `PinsFileWatcher`, `CTLogListUpdates`): the
/// rollback floor in its file, the document in force ended at its expiry by a timer of its own, and the store's
/// blocking file work off the cooperative pool.
protocol SignedDocumentKeeping: AnyObject, Sendable {
    associatedtype Document: SignedUpdateDocument
    associatedtype Event: SignedDocumentEvent
    var state: NIOLockedValueBox<DocumentInForce<Document>> { get }
    var now: @Sendable () -> Date { get }
    var sleepUntil: @Sendable (Date) async throws -> Void { get }
    var rollbackFloor: RollbackFloor { get }
    /// The queue blocking file work runs on, never the cooperative pool.
    var io: DispatchQueue { get }
    var onEvent: @Sendable (Event) -> Void { get }
    /// Applies the baseline again if the document in force has expired.
    func fallBackIfExpired()
}

extension SignedDocumentKeeping {
    /// Makes `document`, already in force on the transport, the one tracked (under the state lock): raises the
    /// floor and starts its expiry timer.
    func track(_ document: Document, _ state: inout DocumentInForce<Document>) {
        state.floor = max(state.floor, document.version)
        state.document = document
        state.expiryTimer?.cancel()
        let (sleepUntil, expiresAt) = (self.sleepUntil, document.expiresAt)
        state.expiryTimer = Task { [weak self] in
            do { try await sleepUntil(expiresAt) } catch { return }
            self?.fallBackIfExpired()
        }
    }

    /// Raises the floor in memory to the stored one: another updater of the same store (or a process before this
    /// one) may have applied a higher version since this one last looked. A floor that cannot be read raises
    /// nothing here; writing the next one fails on it, so nothing applies meanwhile.
    func catchUpWithStoredFloor() async {
        let floor = rollbackFloor
        guard case .success(let stored?) = await onIO({ () throws(CredentialError) in try floor.read() }) else { return }
        state.withLockedValue { $0.floor = max($0.floor, stored) }
    }

    /// Raises the stored floor to `version`; the error, if it failed.
    func storeFloor(_ version: Int) async -> CredentialError? {
        let floor = rollbackFloor
        if case .failure(let error) = await onIO({ () throws(CredentialError) in try floor.raise(to: version) }) {
            return error
        }
        return nil
    }

    /// What ``start()`` of an updater reads: raises the floor to the stored one, and returns the document stored at
    /// `path` as `parse` reads it; nil when there is none or it cannot be used (reported, as an unreadable floor is).
    func readStoredDocument(
        _ path: String, parse: (String) throws(Event.DocumentError) -> Document
    ) async -> Document? {
        let floorFile = rollbackFloor
        switch await onIO({ () throws(CredentialError) -> Int? in try floorFile.read() }) {
        case .success(let floor): state.withLockedValue { $0.floor = max($0.floor, floor ?? 0) }
        // Reported; the stored document's version is then the floor.
        case .failure(let error): onEvent(.storedDocumentUnusable(error))
        }
        let bytes: [UInt8]
        switch await onIO({ () throws(CredentialError) -> [UInt8]? in try TokenFileIO.read(path) }) {
        case .success(nil): return nil
        case .success(let stored?): bytes = stored
        case .failure(let error):
            onEvent(.storedDocumentUnusable(error))
            return nil
        }
        do throws(Event.DocumentError) { return try parse(String(decoding: bytes, as: UTF8.self)) } catch {
            onEvent(.storedDocumentUnusable(error))
            return nil
        }
    }

    /// The text `fetch` returns; its error reported (``SignedDocumentEvent/fetchFailed(_:)``) and thrown.
    func fetched(_ fetch: SignedDocumentFetch) async throws -> String {
        do { return try await fetch() } catch {
            onEvent(.fetchFailed(error))
            throw error
        }
    }

    /// What ``update()`` of an updater does with a fetched document `verify` judged (under the state lock): a
    /// refusal or the document in force served again is reported and ends there; an accepted document has its
    /// version recorded as the floor first (one that cannot be is not applied), then is applied by `apply` (under
    /// the state lock, refused if another update applied a newer one meanwhile), reported, and stored at `path`
    /// (`storedVersion` reads a stored document's version). Returns the version in force.
    func commit(
        _ text: String, at path: String,
        verify: (inout DocumentInForce<Document>) -> Result<Document, Event.DocumentError>,
        upToDate: (Event.DocumentError, DocumentInForce<Document>) -> Int?,
        apply: (Document, inout DocumentInForce<Document>) throws(Event.DocumentError) -> Void,
        storedVersion: @escaping @Sendable ([UInt8]) -> Int?
    ) async throws -> Int {
        let (outcome, inForce) = state.withLockedValue { state -> (Result<Document, Event.DocumentError>, Int?) in
            let outcome = verify(&state)
            guard case .failure(let error) = outcome else { return (outcome, nil) }
            return (outcome, upToDate(error, state))
        }
        let document: Document
        switch outcome {
        case .success(let verified): document = verified
        case .failure(let error):
            if let version = inForce {
                // The very document in force (same payload), served again: nothing to do, nothing refused.
                onEvent(.upToDate(version: version))
                return version
            }
            onEvent(.refused(error))
            throw error
        }
        // Recorded before it applies: no restart can go below a version that was in force.
        if let error = await storeFloor(document.version) {
            onEvent(.floorNotStored(version: document.version, error))
            throw error
        }
        let applied = state.withLockedValue { state in
            Result { () throws(Event.DocumentError) in try apply(document, &state) }
        }
        if case .failure(let error) = applied {
            onEvent(.refused(error))
            throw error
        }
        onEvent(.applied(version: document.version))
        if let error = await storeDocument(text, version: document.version, at: path, storedVersion: storedVersion) {
            onEvent(.storeFailed(error))
        }
        return document.version
    }

    /// Stores `text` atomically at `path` (0600, its directory created 0700), under the store's lock, unless the
    /// document stored there is newer (`storedVersion` reads a stored document's version); the error, if it failed.
    func storeDocument(
        _ text: String, version: Int, at path: String, storedVersion: @escaping @Sendable ([UInt8]) -> Int?
    ) async -> CredentialError? {
        let result = await onIO { () throws(CredentialError) in
            try TokenFileIO.ensureDirectory((path as NSString).deletingLastPathComponent)
            try TokenFileIO.withExclusiveLock(path + ".lock") { () throws(CredentialError) in
                // A concurrent update may have stored a newer document first: never replace it with an older one.
                if let stored = try TokenFileIO.read(path), let storedVersion = storedVersion(stored), storedVersion > version {
                    return
                }
                try TokenFileIO.atomicReplace(path, with: Array((text + "\n").utf8))
            }
        }
        if case .failure(let error) = result { return error }
        return nil
    }

    /// `interval` ±10 % (`random` in 0..<1), but no later than the expiry of the document in force.
    func nextDelay(interval: Duration, random: Double) -> Duration {
        let intervalSeconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        var seconds = intervalSeconds * (0.9 + 0.2 * random)
        if let expiresAt = state.withLockedValue({ $0.document?.expiresAt }) {
            seconds = min(seconds, max(0, expiresAt.timeIntervalSince(now())))
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// Runs blocking file work on ``io``, never on the cooperative pool.
    func onIO<T: Sendable>(_ work: @escaping @Sendable () throws(CredentialError) -> T) async -> Result<T, CredentialError> {
        await withCheckedContinuation { continuation in
            io.async { continuation.resume(returning: Result { () throws(CredentialError) in try work() }) }
        }
    }

    /// Waits until the wall clock reaches `date` (re-checked at least hourly, so a clock change is followed).
    static var sleepUntilWallClock: @Sendable (Date) async throws -> Void {
        { date in
            while true {
                let remaining = date.timeIntervalSinceNow
                guard remaining > 0 else { return }
                try await Task.sleep(for: .milliseconds(Int64((min(remaining, 3600) * 1000).rounded(.up))))
            }
        }
    }
}

/// What `PinUpdates` (documents fetched) and `PinsFileWatcher` (a local file) share, so both keep the same rules:
/// the document in force ends at its expiry by a timer of its own, an expiring document never undoes a newer one,
/// and the rollback floor is recorded in its file before a document applies.
protocol DocumentTracking: SignedDocumentKeeping where Document == PinSetDocument, Event == PinUpdates.Event {
    var transport: HTTPSTransport { get }
}

extension DocumentTracking {
    /// The baseline compiled into the app: what applies when no valid document does.
    var baseline: PinningPolicy { transport.configuration.tls.pinning }

    /// Puts `document` in force (under the state lock): replaces the transport's pins with its policy, which gives
    /// way to the baseline at the document's expiry in every evaluation, raises the floor and starts the expiry
    /// timer that puts the baseline itself back.
    func apply(_ document: PinSetDocument, _ state: inout DocumentInForce<PinSetDocument>) {
        transport.replacePinning(document.policy(over: baseline))
        track(document, &state)
    }

    /// Applies the baseline again if the document in force has expired (`PinSetDocument.isExpired(at:)`), unless
    /// another policy replaced it since (an expiring document never undoes a newer one).
    func fallBackIfExpired() {
        let expired = state.withLockedValue { state -> Int? in
            guard let inForce = state.document, inForce.isExpired(at: now()) else { return nil }
            state.document = nil
            guard transport.replacePinning(baseline, ifVersion: inForce.version) else { return nil }
            return inForce.version
        }
        if let expired { onEvent(.expired(version: expired)) }
    }

    /// The version in force a document must be above: the floor (lowered by one when `version` is the stored
    /// floor itself and no document of it was applied in this process, so that the document that set it applies
    /// again after a restart), and the transport's policy.
    func currentVersion(for version: Int, storedFloor: Int?, _ state: DocumentInForce<PinSetDocument>) -> Int {
        let stored = storedFloor.map { $0 == version && state.floor < version ? $0 - 1 : $0 } ?? 0
        return max(state.floor, stored, transport.pinning.version)
    }
}
