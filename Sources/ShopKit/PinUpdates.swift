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
/// - The document is fetched from `documentURL` *through the transport it updates*: the fetch itself is pinned by
///   the policy in force, and a server whose chain fails those pins cannot serve it.
/// - It is applied only if `verifier` accepts it (`PinSetVerifier.verify(_:baseline:currentVersion:now:)`): signed
///   by one of the app's keys, a version above every one applied before, valid now, keeping the baseline's hosts.
/// - An accepted document is stored atomically in `storePath` (mode 0600 in a 0700 directory, the token store's
///   file rules) and applied again by ``start()`` on the next run, above the baseline compiled into the app
///   (`transport.configuration.tls.pinning`).
/// - A failed fetch or a refused document changes nothing; both are reported through `onEvent`.
/// - When the document in force expires with no newer one, the baseline applies again: never "no pins".
///
/// Call ``start()`` once at launch, then ``update()`` on demand or ``run()`` in a task of its own to fetch every
/// `interval` (±10 % jitter, so a fleet of clients does not fetch in step).
public final class PinUpdates: Sendable {
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
        /// An accepted document could not be stored: it applies until the process ends.
        case storeFailed(any Error)

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
            }
        }
    }

    private struct State: Sendable {
        /// The highest version ever accepted (stored or fetched): nothing at or below it is applied again.
        var floor: Int
        /// The version and expiry of the document in force, nil while the baseline is.
        var inForce: (version: Int, expiresAt: Date)?
    }

    private let transport: HTTPSTransport
    private let documentURL: URL
    private let verifier: PinSetVerifier
    private let storePath: String
    private let interval: Duration
    private let onEvent: @Sendable (Event) -> Void
    private let now: @Sendable () -> Date
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double
    private let state: NIOLockedValueBox<State>
    /// The store's file operations block: they run here, never on the cooperative pool.
    private let io = DispatchQueue(label: "ShopKit.PinUpdates.store")

    /// Updates for `transport` from `documentURL` (https, served by a host the transport's pins cover).
    ///
    /// - Parameters:
    ///   - transport: the transport whose pins the documents replace; the fetch goes through it, so the pins in
    ///     force check the server that serves the document.
    ///   - documentURL: where the signed document (compact JWS) is fetched from.
    ///   - verifier: the app's signing keys.
    ///   - storePath: where the accepted document is kept; its directory is created 0700 if missing.
    ///   - interval: how often ``run()`` fetches (default 6 hours).
    ///   - onEvent: told of every outcome; called on the updating task, must return at once.
    public convenience init(
        transport: HTTPSTransport, documentURL: URL, verifier: PinSetVerifier, storePath: String,
        interval: Duration = .seconds(6 * 3600), onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.init(
            transport: transport, documentURL: documentURL, verifier: verifier, storePath: storePath, interval: interval,
            onEvent: onEvent, now: { Date() }, sleep: { try await Task.sleep(for: $0) },
            random: { Double.random(in: 0..<1) })
    }

    /// The same with an injected clock, sleeper and random source (tests).
    init(
        transport: HTTPSTransport, documentURL: URL, verifier: PinSetVerifier, storePath: String, interval: Duration,
        onEvent: @escaping @Sendable (Event) -> Void, now: @escaping @Sendable () -> Date,
        sleep: @escaping @Sendable (Duration) async throws -> Void, random: @escaping @Sendable () -> Double
    ) {
        self.transport = transport
        self.documentURL = documentURL
        self.verifier = verifier
        self.storePath = storePath
        self.interval = interval
        self.onEvent = onEvent
        self.now = now
        self.sleep = sleep
        self.random = random
        self.state = NIOLockedValueBox(State(floor: transport.configuration.tls.pinning.version, inForce: nil))
    }

    /// The pins compiled into the app: what applies when no valid document does.
    private var baseline: PinningPolicy { transport.configuration.tls.pinning }

    /// Applies the stored document, if there is one and it is still valid, above the baseline. A stored document
    /// that cannot be used leaves the baseline in force and is reported (``Event/storedDocumentUnusable(_:)``,
    /// ``Event/expired(version:)``).
    public func start() async {
        let path = storePath
        let read = await onIO { () throws(CredentialError) -> [UInt8]? in try TokenFileIO.read(path) }
        let bytes: [UInt8]
        switch read {
        case .success(nil): return
        case .success(let stored?): bytes = stored
        case .failure(let error): return onEvent(.storedDocumentUnusable(error))
        }
        let document: PinSetDocument
        do { document = try verifier.signedDocument(String(decoding: bytes, as: UTF8.self)) } catch {
            return onEvent(.storedDocumentUnusable(error))
        }
        let event = state.withLockedValue { state -> Event? in
            let current = max(state.floor, transport.pinning.version)
            // Signed by the app's key and stored by it: no older document is applied again, even once it expired.
            state.floor = max(state.floor, document.version)
            if document.version == transport.pinning.version {
                // Already in force (applied through this transport before): track its expiry, or end it.
                guard now() >= document.expiresAt else {
                    state.inForce = (document.version, document.expiresAt)
                    return nil
                }
                transport.replacePinning(baseline)
                state.inForce = nil
                return .expired(version: document.version)
            }
            do throws(PinSetDocumentError) {
                try document.check(baseline: baseline, currentVersion: current, now: now())
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

    /// Fetches the document now and applies it if the verifier accepts it; returns the version in force.
    ///
    /// - Throws: the fetch's error (the transport's, with `TLSError.pinMismatch` when the server's chain fails the
    ///   pins in force, or an unexpected HTTP status), or the `PinSetDocumentError` that refused the document;
    ///   in both cases the policy in force did not change.
    @discardableResult
    public func update() async throws -> Int {
        fallBackIfExpired()
        let text: String
        do { text = try await fetch() } catch {
            onEvent(.fetchFailed(error))
            throw error
        }
        let accepted = state.withLockedValue { state -> Result<PinSetDocument, PinSetDocumentError> in
            let current = max(state.floor, transport.pinning.version)
            do throws(PinSetDocumentError) {
                let document = try verifier.verify(text, baseline: baseline, currentVersion: current, now: now())
                apply(document, &state)
                return .success(document)
            } catch {
                return .failure(error)
            }
        }
        switch accepted {
        case .failure(let error):
            onEvent(.refused(error))
            throw error
        case .success(let document):
            onEvent(.applied(version: document.version))
            if let error = await store(text, version: document.version) { onEvent(.storeFailed(error)) }
            return document.version
        }
    }

    /// Fetches every `interval` (±10 % jitter) until the task is cancelled, and falls back to the baseline when the
    /// document in force expires (it wakes up for that too). Failures are reported through `onEvent` only.
    public func run() async {
        while !Task.isCancelled {
            do { try await sleep(nextDelay()) } catch { return }
            fallBackIfExpired()
            _ = try? await update()
        }
    }

    /// `interval` ±10 %, but no later than the expiry of the document in force.
    func nextDelay() -> Duration {
        let intervalSeconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        var seconds = intervalSeconds * (0.9 + 0.2 * random())
        if let expiresAt = state.withLockedValue({ $0.inForce?.expiresAt }) {
            seconds = min(seconds, max(0, expiresAt.timeIntervalSince(now())))
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// Applies the baseline again if the document in force has expired.
    func fallBackIfExpired() {
        let expired = state.withLockedValue { state -> Int? in
            guard let inForce = state.inForce, now() >= inForce.expiresAt else { return nil }
            state.inForce = nil
            transport.replacePinning(baseline)
            return inForce.version
        }
        if let expired { onEvent(.expired(version: expired)) }
    }

    /// Applies `document` (under the state lock, so two updates apply in version order).
    private func apply(_ document: PinSetDocument, _ state: inout State) {
        transport.replacePinning(document.policy)
        state.floor = max(state.floor, document.version)
        state.inForce = (document.version, document.expiresAt)
    }

    /// GET `documentURL` through the transport; the body of a 200 response, at most a document's size.
    private func fetch() async throws -> String {
        guard var components = URLComponents(url: documentURL, resolvingAgainstBaseURL: false) else {
            throw HTTPSTransportError.invalidURL(reason: "\(documentURL.absoluteString) is not a URL the pin-set document can be fetched from")
        }
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        components.percentEncodedPath = ""
        components.percentEncodedQuery = nil
        guard let base = components.url else { throw HTTPSTransportError.invalidURL(reason: "\(documentURL.absoluteString) is not a URL the pin-set document can be fetched from") }
        var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
        request.headerFields[.accept] = "application/jose"
        let (response, body) = try await transport.send(request, body: nil, baseURL: base, operationID: "pin-updates")
        guard response.status == .ok else { throw UnexpectedStatus(status: response.status.code, url: documentURL) }
        var bytes: [UInt8] = []
        if let body { bytes = try await [UInt8](collecting: body, upTo: CompactJWS.maximumLength) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Stores `text` atomically (0600), under the store's lock; the error, if it failed.
    private func store(_ text: String, version: Int) async -> CredentialError? {
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

    /// Runs blocking file work on ``io``.
    private func onIO<T: Sendable>(_ work: @escaping @Sendable () throws(CredentialError) -> T) async
        -> Result<T, CredentialError>
    {
        await withCheckedContinuation { continuation in
            io.async { continuation.resume(returning: Result { () throws(CredentialError) in try work() }) }
        }
    }
}

/// The document URL answered with another status than 200 (the server's fault, or a wrong URL).
struct UnexpectedStatus: Error, CustomStringConvertible {
    let status: Int
    let url: URL
    var description: String { "\(url.absoluteString) answered HTTP \(status), not 200 with a pin-set document" }
}
