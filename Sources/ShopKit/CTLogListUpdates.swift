import NIOConcurrencyHelpers
import Foundation
import ShopKitCredentials
import ShopKitHTTPS
import ShopKitPinning
import ShopKitTLS

/// Keeps an `HTTPSTransport`'s Certificate Transparency log list current from a signed log-list document
/// (`CTLogListDocument`), so logs that are added, retired or rejected reach the app without a release (issue 41):
/// the log-list counterpart of ``PinUpdates``, with the same keys, rules and store.
///
/// - The document is fetched from `documentURL` as ``PinUpdates`` fetches pin-set documents: by default with the
///   transport's trust roots, proxy and timeouts, the chain and host name verified, but without its pins and
///   without CT (``PinUpdates/DocumentFetch/unpinned``: the signature carries the trust, so a list that broke CT
///   for the document host can still be fixed); ``PinUpdates/DocumentFetch/pinned`` fetches through the transport.
/// - It is applied only if `verifier` accepts it (`PinSetVerifier.verifyLogList(_:currentVersion:now:)`): signed
///   by one of the app's keys under the log-list `typ`, for the app's audience, a version above every log-list
///   document applied before (counted apart from pin-set versions), valid now. A log whose key does not load
///   refuses the whole document.
/// - An accepted document is stored atomically in `storePath` (0600 in a 0700 directory), its version (the
///   rollback floor) in `storePath + ".floor"` first, and applied again by ``start()`` on the next run.
/// - When the document in force expires with no newer one, the configuration's list (the baseline,
///   `transport.configuration.tls.certificateTransparency.logList`) applies again: from its `expiresAt` on every
///   handshake, whether or not this object is still alive; its timer (while it lives) and every ``update()`` then
///   report ``Event/expired(version:)``. The policy's own staleness rule applies on
///   top, whichever list is in force: a list whose `log_list_timestamp` is older than `maximumLogListAge` makes
///   `enforced` act as `reportOnly`.
///
/// Give it a `storePath` of its own (not ``PinUpdates``'): the two kinds of document have their own versions.
/// One updater per transport: the transport's log list carries no version, so an updater only ends the document
/// it applied itself.
///
/// Call ``start()`` once at launch, then ``update()`` on demand or ``run()`` in a task of its own.
public final class CTLogListUpdates: SignedDocumentKeeping {
    /// What happened, for the app's log or metrics: the cases of ``PinUpdates/Event``, worded for the log list.
    public enum Event: Sendable, CustomStringConvertible {
        /// A document was applied: fetched, or loaded from the store by ``start()``.
        case applied(version: Int)
        /// A fetched document was refused (its log list not loading among the reasons:
        /// `PinSetDocumentError.malformedLogListDocument` as the error's `reason`); the list in force did not change.
        case refused(CTLogListDocumentError)
        /// The document could not be fetched (connection, TLS, HTTP status); the list in force did not change.
        case fetchFailed(any Error)
        /// The stored document cannot be used (unreadable, unsafe file, bad signature, invalid): the baseline list
        /// applies until a fetch succeeds.
        case storedDocumentUnusable(any Error)
        /// The document in force (or the stored one) expired with no newer one: the baseline list applies again.
        case expired(version: Int)
        /// An accepted document could not be stored: it applies until the process ends (its version, the rollback
        /// floor, was stored).
        case storeFailed(any Error)
        /// The fetched document is the one in force (same version, same payload): nothing to do.
        case upToDate(version: Int)
        /// An accepted document was not applied because its version could not be recorded as the rollback floor;
        /// the list in force did not change.
        case floorNotStored(version: Int, any Error)

        public var description: String {
            switch self {
            case .applied(let version): return "CT log-list document version \(version) applied"
            case .refused(let error): return "CT log-list document refused, log list unchanged: \(error)"
            case .fetchFailed(let error): return "CT log-list document fetch failed, log list unchanged: \(error)"
            case .storedDocumentUnusable(let error):
                return "stored CT log-list document ignored, the baseline log list applies: \(error)"
            case .expired(let version):
                return "CT log-list document version \(version) expired with no newer one: the baseline log list applies again"
            case .storeFailed(let error): return "CT log-list document applied but not stored: \(error)"
            case .upToDate(let version): return "CT log-list document version \(version) is up to date"
            case .floorNotStored(let version, let error):
                return "CT log-list document version \(version) not applied: its version cannot be recorded as the "
                    + "rollback floor, log list unchanged: \(error)"
            }
        }
    }

    /// How the document is fetched (as ``PinUpdates`` fetches; an unpinned fetch also leaves CT unchecked).
    public typealias DocumentFetch = PinUpdates.DocumentFetch

    let transport: HTTPSTransport
    private let documentURL: URL
    private let verifier: PinSetVerifier
    private let storePath: String
    private let interval: Duration
    private let fetchMode: DocumentFetch
    let onEvent: @Sendable (Event) -> Void
    let now: @Sendable () -> Date
    private let sleep: @Sendable (Duration) async throws -> Void
    let sleepUntil: @Sendable (Date) async throws -> Void
    private let random: @Sendable () -> Double
    let state = NIOLockedValueBox(DocumentInForce<CTLogListDocument>(floor: 0))
    /// The store's file operations block: they run here, never on the cooperative pool.
    let io = DispatchQueue(label: "ShopKit.CTLogListUpdates.store")

    var rollbackFloor: RollbackFloor {
        RollbackFloor(path: storePath + ".floor", lockPath: storePath + ".lock", documentKind: "CT log-list document")
    }

    /// Updates for `transport`'s CT log list from `documentURL` (https; any host the transport's trust roots
    /// verify).
    ///
    /// - Parameters:
    ///   - transport: the transport whose log list the documents replace; the fetch uses its configuration.
    ///   - documentURL: where the signed log-list document (compact JWS) is fetched from.
    ///   - verifier: the app's signing keys and identifier (audience), as for pin-set documents.
    ///   - storePath: where the accepted document is kept (not the pin-set document's path), and its version (the
    ///     rollback floor) in `storePath + ".floor"`; the directory is created 0700 if missing.
    ///   - interval: how often ``run()`` fetches (default 24 hours), ±10 % jitter.
    ///   - fetch: unpinned (the default) or under the pins in force.
    ///   - onEvent: told of every outcome; called on the updating task, must return at once.
    public convenience init(
        transport: HTTPSTransport, documentURL: URL, verifier: PinSetVerifier, storePath: String,
        interval: Duration = .seconds(24 * 3600), fetch: DocumentFetch = .unpinned,
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.init(
            transport: transport, documentURL: documentURL, verifier: verifier, storePath: storePath, interval: interval,
            onEvent: onEvent, now: { Date() }, sleep: { try await Task.sleep(for: $0) },
            random: { Double.random(in: 0..<1) }, sleepUntil: CTLogListUpdates.sleepUntilWallClock, fetch: fetch)
    }

    /// The same with an injected clock, sleeper, random source and expiry timer (tests).
    init(
        transport: HTTPSTransport, documentURL: URL, verifier: PinSetVerifier, storePath: String, interval: Duration,
        onEvent: @escaping @Sendable (Event) -> Void, now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (Duration) async throws -> Void, random: @escaping @Sendable () -> Double,
        sleepUntil: @escaping @Sendable (Date) async throws -> Void = CTLogListUpdates.sleepUntilWallClock,
        fetch: DocumentFetch = .unpinned
    ) {
        self.transport = transport
        self.documentURL = documentURL
        self.verifier = verifier
        self.storePath = storePath
        self.interval = interval
        self.fetchMode = fetch
        self.onEvent = onEvent
        self.now = now
        self.sleep = sleep
        self.sleepUntil = sleepUntil
        self.random = random
    }

    deinit {
        state.withLockedValue { $0.expiryTimer?.cancel() }
    }

    /// The configuration's log list: what applies when no valid document does.
    var baseline: CTLogList { transport.configuration.tls.certificateTransparency.logList }

    /// The signed document in force, nil while the baseline list is (`transport.certificateTransparencyLogList` is
    /// the list either way).
    public var documentInForce: CTLogListDocument? { state.withLockedValue { $0.document } }

    /// Applies the stored document, if there is one and it is still valid. A stored document that cannot be used
    /// leaves the baseline list in force and is reported (``Event/storedDocumentUnusable(_:)``,
    /// ``Event/expired(version:)``). The rollback floor is read from its own file, so it outlives a lost document.
    public func start() async {
        let verifier = self.verifier
        guard let document = await readStoredDocument(storePath, parse: verifier.signedLogListDocument) else { return }
        let event = state.withLockedValue { state -> Event? in
            if state.document?.version == document.version { return nil }
            // The floor file holds the stored document's own version when that document set it: it may apply again.
            let current = state.floor == document.version ? document.version - 1 : state.floor
            // Signed by the app's key and stored by it: no older document is applied again, even once it expired.
            state.floor = max(state.floor, document.version)
            do throws(CTLogListDocumentError) {
                try verifier.checkLogList(document, currentVersion: current, now: now())
                try apply(document, &state)
            } catch {
                if case .expired = error.reason { return .expired(version: document.version) }
                return .storedDocumentUnusable(error)
            }
            return .applied(version: document.version)
        }
        if let event { onEvent(event) }
    }

    /// Fetches the document now and applies it if the verifier accepts it; returns its version. The document in
    /// force served again is ``Event/upToDate(version:)``, not a refusal.
    ///
    /// The document's version is recorded as the rollback floor *before* it is applied: one whose version cannot be
    /// recorded is not applied (``Event/floorNotStored(version:_:)``). A document whose log list does not load is
    /// refused after its version was recorded: publish the next version.
    ///
    /// - Throws: the fetch's error, the `CTLogListDocumentError` that refused the document (its `reason` says why),
    ///   or the `CredentialError` of a floor that cannot be stored; in every case the log list in force did not
    ///   change.
    @discardableResult
    public func update() async throws -> Int {
        await catchUpWithStoredFloor()
        fallBackIfExpired()
        let text = try await fetched(
            SignedDocumentFetch(
                transport: transport, url: documentURL, mode: fetchMode, documentKind: "CT log-list document",
                operationID: "ct-log-list-updates", io: io))
        let verifier = self.verifier
        return try await commit(
            text, at: storePath,
            verify: { state in
                Result { () throws(CTLogListDocumentError) in
                    try verifier.verifyLogList(text, currentVersion: state.floor, now: now())
                }
            },
            upToDate: { error, state in
                guard case .notNewer(let version, _) = error.reason, let inForce = state.document, inForce.version == version,
                    (try? verifier.signedLogListDocument(text))?.json == inForce.json
                else { return nil }
                return version
            },
            apply: { document, state throws(CTLogListDocumentError) in
                // Another update may have applied a newer document while the floor was written.
                guard document.version > state.floor else {
                    throw CTLogListDocumentError(reason: .notNewer(version: document.version, current: state.floor))
                }
                try apply(document, &state)
            },
            storedVersion: { stored in
                (try? verifier.signedLogListDocument(String(decoding: stored, as: UTF8.self)))?.version
            })
    }

    /// Fetches every `interval` (±10 % jitter, no later than the expiry of the document in force) until the task is
    /// cancelled. Failures are reported through `onEvent` only.
    public func run() async {
        while !Task.isCancelled {
            do { try await sleep(nextDelay(interval: interval, random: random())) } catch { return }
            fallBackIfExpired()
            _ = try? await update()
        }
    }

    /// Puts `document`'s log list in force on the transport (under the state lock) and tracks its expiry.
    ///
    /// - Throws: `CTLogListDocumentError` (`reason` `PinSetDocumentError.malformedLogListDocument`) when a log of
    ///   the list does not load (its key, or an id that is not its key's SHA-256); the list in force is kept.
    private func apply(
        _ document: CTLogListDocument, _ state: inout DocumentInForce<CTLogListDocument>
    ) throws(CTLogListDocumentError) {
        do { try transport.replaceCertificateTransparencyLogList(document.logList, until: document.expiresAt) } catch {
            throw CTLogListDocumentError(reason: .malformedLogListDocument("its log list does not load: \(error)"))
        }
        track(document, &state)
    }

    /// Applies the baseline list again if the document in force has expired.
    func fallBackIfExpired() {
        let expired = state.withLockedValue { state -> Int? in
            guard let inForce = state.document, inForce.isExpired(at: now()) else { return nil }
            state.document = nil
            state.expiryTimer?.cancel()
            // The baseline loaded when the transport was made: it loads again.
            try? transport.replaceCertificateTransparencyLogList(baseline)
            return inForce.version
        }
        if let expired { onEvent(.expired(version: expired)) }
    }
}

extension CTLogListUpdates.Event: SignedDocumentEvent {}
