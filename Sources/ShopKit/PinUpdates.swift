import NIOConcurrencyHelpers
import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitCore
import ShopKitCredentials
import ShopKitHTTPS
import ShopKitPinning
import ShopKitTLS

/// Keeps an `HTTPSTransport`'s pins current from a signed pin-set document, so pins rotate without a release.
///
/// - The document is fetched from `documentURL` with the transport's trust roots, proxy and timeouts, the chain
///   and host name verified, but without its pins (``DocumentFetch/unpinned``, as wultra's SDKs do): the signature
///   carries the trust, so pins that broke can still be fixed. ``DocumentFetch/pinned`` fetches under the pins.
/// - It is applied only if `verifier` accepts it (`PinSetVerifier.verify(_:baseline:currentVersion:now:)`): signed
///   by one of the app's keys, a version above every one applied before, valid now, keeping the baseline's hosts.
/// - An accepted document is stored atomically in `storePath` (mode 0600 in a 0700 directory, the token store's
///   file rules) and applied again by ``start()`` on the next run, above the baseline compiled into the app
///   (`transport.configuration.tls.pinning`).
/// - A failed fetch or a refused document changes nothing; both are reported through `onEvent`.
/// - When the document in force expires with no newer one, the baseline applies again: never "no pins". From its
///   `expiresAt` every pin check, and every connection the pool hands out again, uses the baseline, whether or not
///   this object is still alive; its expiry timer then puts the baseline back as the transport's `pinning` and
///   reports ``Event/expired(version:)`` (while this object lives: keep it for as long as the transport).
/// - The rollback floor is read from its file by ``start()`` and again by every ``update()``, so neither a restart
///   (even one that never calls `start()`) nor a second updater of the same store goes below it.
///
/// Call ``start()`` once at launch, then ``update()`` on demand or ``run()`` in a task of its own to fetch every
/// `interval` (±10 % jitter, so a fleet of clients does not fetch in step).
public final class PinUpdates: DocumentTracking {
    /// What happened, for the app's log or metrics. Reported through `onEvent`, which must return at once.
    public enum Event: Sendable, CustomStringConvertible {
        /// A document was applied: fetched, or loaded from the store by ``start()``.
        case applied(version: Int)
        /// A fetched document was refused; the policy in force did not change.
        case refused(PinSetDocumentError)
        /// The document could not be fetched (connection, TLS with its pins, HTTP status); the policy did not change.
        case fetchFailed(any Error)
        /// The stored document cannot be used (unreadable, unsafe file, bad signature, invalid): the baseline
        /// applies until a fetch succeeds.
        case storedDocumentUnusable(any Error)
        /// The document in force (or the stored one) expired with no newer one: the baseline applies again.
        case expired(version: Int)
        /// An accepted document could not be stored: it applies until the process ends (its version, the rollback
        /// floor, was stored).
        case storeFailed(any Error)
        /// The fetched document is the one in force (same version): nothing to do.
        case upToDate(version: Int)
        /// An accepted document was not applied because its version could not be recorded as the rollback floor
        /// (the store's directory or file is unusable); the policy in force did not change.
        case floorNotStored(version: Int, any Error)

        public var description: String {
            switch self {
            case .applied(let version): return "pin-set document version \(version) applied"
            case .refused(let error): return "pin-set document refused, pins unchanged: \(error)"
            case .fetchFailed(let error): return "pin-set document fetch failed, pins unchanged: \(error)"
            case .storedDocumentUnusable(let error):
                return "stored pin-set document ignored, the baseline pins apply: \(error)"
            case .expired(let version):
                return "pin-set document version \(version) expired with no newer one: the baseline pins apply again"
            case .storeFailed(let error): return "pin-set document applied but not stored: \(error)"
            case .upToDate(let version): return "pin-set document version \(version) is up to date"
            case .floorNotStored(let version, let error):
                return "pin-set document version \(version) not applied: its version cannot be recorded as the "
                    + "rollback floor, pins unchanged: \(error)"
            }
        }
    }

    /// How the document is fetched.
    public enum DocumentFetch: Sendable, Hashable {
        /// With the chain and the host name verified against the transport's trust roots, but without its pins
        /// or Certificate Transparency (the default, as wultra's SDKs do): the document's signature carries the
        /// trust, so pins (or a CT log list) that broke, the case rotation exists for, can still be fixed by the
        /// next document. A server that can answer for
        /// the document host can only withhold a document or serve an old one, which the version floor refuses.
        case unpinned
        /// Through the transport, under the pins in force: a server whose chain fails them cannot serve the
        /// document, so pins that broke for the document host stay broken until a release.
        case pinned
    }

    let transport: HTTPSTransport
    private let documentURL: URL
    let verifier: PinSetVerifier
    let storePath: String
    private let interval: Duration
    private let fetchMode: DocumentFetch
    let onEvent: @Sendable (Event) -> Void
    let now: @Sendable () -> Date
    private let sleep: @Sendable (Duration) async throws -> Void
    let sleepUntil: @Sendable (Date) async throws -> Void
    private let random: @Sendable () -> Double
    let state: NIOLockedValueBox<DocumentInForce<PinSetDocument>>
    /// The store's file operations block: they run here, never on the cooperative pool.
    let io = DispatchQueue(label: "ShopKit.PinUpdates.store")

    /// Updates for `transport` from `documentURL` (https; any host the transport's trust roots verify).
    ///
    /// - Parameters:
    ///   - transport: the transport whose pins the documents replace; the fetch uses its configuration (trust
    ///     roots, proxy, timeouts).
    ///   - documentURL: where the signed document (compact JWS) is fetched from.
    ///   - verifier: the app's signing keys and identifier (audience).
    ///   - storePath: where the accepted document is kept, and its version (the rollback floor) in
    ///     `storePath + ".floor"`; the directory is created 0700 if missing.
    ///   - interval: how often ``run()`` fetches (default 6 hours).
    ///   - fetch: with the chain verified but without pins (``DocumentFetch/unpinned``, the default), or under
    ///     the pins in force (``DocumentFetch/pinned``).
    ///   - onEvent: told of every outcome; called on the updating task, must return at once.
    public convenience init(
        transport: HTTPSTransport, documentURL: URL, verifier: PinSetVerifier, storePath: String,
        interval: Duration = .seconds(6 * 3600), fetch: DocumentFetch = .unpinned,
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.init(
            transport: transport, documentURL: documentURL, verifier: verifier, storePath: storePath, interval: interval,
            onEvent: onEvent, now: { Date() }, sleep: { try await Task.sleep(for: $0) },
            random: { Double.random(in: 0..<1) }, sleepUntil: PinUpdates.sleepUntilWallClock, fetch: fetch)
    }

    /// The same with an injected clock, sleeper, random source and expiry timer (tests).
    init(
        transport: HTTPSTransport, documentURL: URL, verifier: PinSetVerifier, storePath: String, interval: Duration,
        onEvent: @escaping @Sendable (Event) -> Void, now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (Duration) async throws -> Void, random: @escaping @Sendable () -> Double,
        sleepUntil: @escaping @Sendable (Date) async throws -> Void = PinUpdates.sleepUntilWallClock,
        fetch: DocumentFetch = .unpinned
    ) {
        self.sleepUntil = sleepUntil
        self.fetchMode = fetch
        self.transport = transport
        self.documentURL = documentURL
        self.verifier = verifier
        self.storePath = storePath
        self.interval = interval
        self.onEvent = onEvent
        self.now = now
        self.sleep = sleep
        self.random = random
        self.state = NIOLockedValueBox(DocumentInForce(floor: transport.configuration.tls.pinning.version))
    }

    deinit {
        state.withLockedValue { $0.expiryTimer?.cancel() }
    }

    /// The signed document in force, nil while the baseline is (`transport.pinning` is the policy either way).
    ///
    /// A document is in force only once applied above the baseline's version (`PinningPolicy.version`): a stored
    /// document at or below it is never applied, so it is never the one in force, even when its version is the
    /// baseline's own (the release carries what supersedes it).
    public var documentInForce: PinSetDocument? { state.withLockedValue { $0.document } }

    /// Applies the stored document, if there is one and it is still valid, above the baseline. A stored document
    /// that cannot be used leaves the baseline in force and is reported (``Event/storedDocumentUnusable(_:)``,
    /// ``Event/expired(version:)``). The rollback floor (the highest version ever applied) is read from its own
    /// file, so it outlives a lost document.
    public func start() async {
        let verifier = self.verifier
        guard let document = await readStoredDocument(storePath, parse: verifier.signedDocument) else { return }
        let event = state.withLockedValue { state -> Event? in
            // The floor file holds the stored document's own version when that document set it: it may apply again.
            let floor = state.floor == document.version ? document.version - 1 : state.floor
            let current = max(floor, transport.pinning.version)
            // Signed by the app's key and stored by it: no older document is applied again, even once it expired.
            state.floor = max(state.floor, document.version)
            if document.version == transport.pinning.version, document.version > baseline.version {
                // Already in force (applied through this transport before): track its expiry, or end it. A document
                // at the baseline's own version never applied (documents apply only above it): the baseline is in
                // force, and the check below refuses the document as not newer.
                guard document.isExpired(at: now()) else {
                    track(document, &state)
                    return nil
                }
                guard transport.replacePinning(baseline, ifVersion: document.version) else { return nil }
                state.document = nil
                return .expired(version: document.version)
            }
            do throws(PinSetDocumentError) {
                try document.check(baseline: baseline, currentVersion: current, now: now(), limits: verifier.limits)
            } catch .expired {
                return .expired(version: document.version)
            } catch {
                return .storedDocumentUnusable(error)
            }
            apply(document, &state)
            return .applied(version: document.version)
        }
        if let event { onEvent(event) }
    }

    /// Fetches the document now and applies it if the verifier accepts it; returns the version in force. The
    /// document in force served again is ``Event/upToDate(version:)``, not a refusal.
    ///
    /// The document's version is recorded as the rollback floor *before* it is applied: one whose version cannot
    /// be recorded is not applied (``Event/floorNotStored(version:_:)``), so no restart can go below a version
    /// that was in force.
    ///
    /// - Throws: the fetch's error (the transport's, with `TLSError.pinMismatch` when the server's chain fails the
    ///   pins in force, or an unexpected HTTP status), the `PinSetDocumentError` that refused the document, or the
    ///   `CredentialError` of a floor that cannot be stored; in every case the policy in force did not change.
    @discardableResult
    public func update() async throws -> Int {
        // Never below what was stored: the floor is read from its file on every update, so neither a restart that
        // calls `update()` without `start()` nor a second updater of the same store goes below what was applied.
        await catchUpWithStoredFloor()
        fallBackIfExpired()
        let text = try await fetched(
            SignedDocumentFetch(
                transport: transport, url: documentURL, mode: fetchMode, documentKind: "pin-set document",
                operationID: "pin-updates", io: io))
        let verifier = self.verifier
        return try await commit(
            text, at: storePath,
            verify: { state in
                let current = max(state.floor, transport.pinning.version)
                return Result { () throws(PinSetDocumentError) in
                    try verifier.verify(text, baseline: baseline, currentVersion: current, now: now())
                }
            },
            upToDate: { error, state in
                guard case .notNewer(let version, _) = error, version == transport.pinning.version,
                    let inForce = state.document, (try? verifier.signedDocument(text))?.json == inForce.json
                else { return nil }
                return version
            },
            apply: { document, state throws(PinSetDocumentError) in
                // Another update may have applied a newer document while the floor was written.
                let current = max(state.floor, transport.pinning.version)
                guard document.version > current else { throw .notNewer(version: document.version, current: current) }
                apply(document, &state)
            },
            storedVersion: { stored in (try? verifier.signedDocument(String(decoding: stored, as: UTF8.self)))?.version })
    }

    /// Fetches every `interval` (±10 % jitter) until the task is cancelled. Failures are reported through
    /// `onEvent` only. (The document in force ends at its expiry by a timer of its own, whether `run()` runs or
    /// not.)
    public func run() async {
        while !Task.isCancelled {
            do { try await sleep(nextDelay()) } catch { return }
            fallBackIfExpired()
            _ = try? await update()
        }
    }

    /// `interval` ±10 %, but no later than the expiry of the document in force.
    func nextDelay() -> Duration { nextDelay(interval: interval, random: random()) }
}
