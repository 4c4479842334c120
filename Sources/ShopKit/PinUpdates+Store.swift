import Foundation
import ShopKitCredentials
import ShopKitPinning

extension PinUpdates {
    /// The baseline compiled into the app: what applies when no valid document does.
    var baseline: PinningPolicy { transport.configuration.tls.pinning }

    /// Where the rollback floor (the highest version ever applied, in decimal) is kept: next to the stored
    /// document, in a file of its own, so losing the document does not lose the floor.
    var floorPath: String { storePath + ".floor" }

    /// Makes `document` the one in force (under the state lock; the caller has replaced the transport's pins):
    /// raises the floor and starts its expiry timer.
    func track(_ document: PinSetDocument, _ state: inout PinUpdates.State) {
        state.floor = max(state.floor, document.version)
        state.inForce = document
        state.expiryTimer?.cancel()
        let (sleepUntil, expiresAt) = (self.sleepUntil, document.expiresAt)
        state.expiryTimer = Task { [weak self] in
            do { try await sleepUntil(expiresAt) } catch { return }
            self?.fallBackIfExpired()
        }
    }

    /// Applies the baseline again if the document in force has expired, unless another policy replaced it since
    /// (an expiring document never undoes a newer one).
    func fallBackIfExpired() {
        let expired = state.withLockedValue { state -> Int? in
            guard let inForce = state.inForce, now() >= inForce.expiresAt else { return nil }
            state.inForce = nil
            guard transport.replacePinning(baseline, ifVersion: inForce.version) else { return nil }
            return inForce.version
        }
        if let expired { onEvent(.expired(version: expired)) }
    }

    /// Waits until the wall clock reaches `date` (re-checked at least hourly, so a clock change is followed).
    static let sleepUntilWallClock: @Sendable (Date) async throws -> Void = { date in
        while true {
            let remaining = date.timeIntervalSinceNow
            guard remaining > 0 else { return }
            try await Task.sleep(for: .milliseconds(Int64((min(remaining, 3600) * 1000).rounded(.up))))
        }
    }

    /// The floor stored at `path`, nil when there is none.
    static func readFloor(_ path: String) throws(CredentialError) -> Int? {
        guard let bytes = try TokenFileIO.read(path) else { return nil }
        guard let floor = Int(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
            floor >= 0
        else {
            throw .corrupt("\(path) does not hold a pin-set document version; delete it only if you accept rollbacks")
        }
        return floor
    }

    /// Raises the stored floor to `version` (atomically, 0600, under the store's lock); the error, if it failed.
    func storeFloor(_ version: Int) async -> CredentialError? {
        let (path, directory) = (floorPath, (storePath as NSString).deletingLastPathComponent)
        let lock = storePath + ".lock"
        let result = await onIO { () throws(CredentialError) in
            try TokenFileIO.ensureDirectory(directory)
            try TokenFileIO.withExclusiveLock(lock) { () throws(CredentialError) in
                if let stored = try Self.readFloor(path), stored >= version { return }
                try TokenFileIO.atomicReplace(path, with: Array("\(version)\n".utf8))
            }
        }
        if case .failure(let error) = result { return error }
        return nil
    }

    /// Stores `text` atomically (0600), under the store's lock; the error, if it failed.
    func store(_ text: String, version: Int) async -> CredentialError? {
        let path = storePath
        let verifier = self.verifier
        let result = await onIO { () throws(CredentialError) in
            try TokenFileIO.ensureDirectory((path as NSString).deletingLastPathComponent)
            try TokenFileIO.withExclusiveLock(path + ".lock") { () throws(CredentialError) in
                // A concurrent update may have stored a newer document first: never replace it with an older one.
                if let stored = try TokenFileIO.read(path),
                    let document = try? verifier.signedDocument(String(decoding: stored, as: UTF8.self)),
                    document.version > version
                {
                    return
                }
                try TokenFileIO.atomicReplace(path, with: Array((text + "\n").utf8))
            }
        }
        if case .failure(let error) = result { return error }
        return nil
    }

    /// Runs blocking file work on the store's queue, never on the cooperative pool.
    func onIO<T: Sendable>(_ work: @escaping @Sendable () throws(CredentialError) -> T) async -> Result<T, CredentialError> {
        await withCheckedContinuation { continuation in
            io.async { continuation.resume(returning: Result { () throws(CredentialError) in try work() }) }
        }
    }
}
