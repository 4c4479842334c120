import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// Attaches the user's bearer token and recovers from a 401 with one shared refresh and one replay.
///
/// This is the auth logic itself, as a swift-openapi-runtime `ClientMiddleware`: give it to a generated client's
/// `Client(serverURL:transport:middlewares:)` or ``APIClient``'s `middlewares`, after the retry middleware and
/// before the dedup middleware.
///
/// A request that needs no token (its operation is public by `requirement`, or it is an ``APIClient``
/// request with ``APIRequest/requiresAuth`` `false`) is passed on untouched. For every other request:
/// 1. Load the tokens from the ``TokenStore``; none → throw ``APIError/unauthorized`` without sending.
/// 2. Send with `Authorization: Bearer <access token>`. Anything but 401 is returned as is.
/// 3. On 401, *recover* for the rejected access token. Recoveries are single flight, keyed by that token: every
///    caller rejected with the same token awaits the same one. A recovery reads the store again; if the store
///    already holds a different access token (another caller refreshed meanwhile, the "stale token" case) it
///    returns that without refreshing, otherwise it calls the ``TokenRefresher`` once and saves the result.
/// 4. Replay the request once with the recovered token. A second 401 signs the user out.
///
/// Signing out clears the store (only if it still holds the rejected token, so a new session is never wiped),
/// tells the ``SignOutObserver`` once per rejected token, and makes every affected caller throw
/// ``APIError/unauthorized``. A refresher that throws signs out too, unless its error is a
/// `RetryClassifiableError` with `isRetryable == true` (offline, server down): then the session is kept and
/// the error is thrown to the caller. Refreshed tokens the store fails to save are still used for the replay and
/// kept for the next recovery of the same token, so a rotated refresh token is never lost. At most two requests
/// go upstream per call, so no path can loop.
///
/// The refresh runs in its own task: a cancelled caller stops waiting at once, while the refresh goes on, so a
/// rotated refresh token is always saved even if every caller went away.
///
/// A 401 for a request whose body can be iterated only once is returned without recovery (it cannot be replayed);
/// ``APIClient`` maps it to ``APIError/unauthorized``, a generated client returns it as the operation's 401 output.
/// In a generated client, the ``APIError/unauthorized`` this middleware throws arrives as OpenAPIRuntime's
/// `ClientError`, with the ``APIError`` as its `underlyingError`.
///
/// - Warning: Tokens are held in memory only while a call needs them, and never logged or put in an error.
public actor AuthenticationMiddleware: ClientMiddleware {
    /// Which operations need the token; the others pass through untouched.
    package nonisolated let requirement: AuthenticationRequirement
    private nonisolated let store: any TokenStore
    private nonisolated let refresher: any TokenRefresher
    private nonisolated let observer: (any SignOutObserver)?
    private nonisolated let logger: Logger

    /// What a recovery produced for its callers.
    enum Recovery: Sendable {
        /// Replay with these tokens.
        case tokens(AuthTokens)
        /// The user is (now) signed out.
        case signedOut
        /// The store or a transient refresher error; the session is kept.
        case failed(any Error)
    }

    /// Who waits for which recovery, keyed by the rejected access token (pure bookkeeping; evicted when it ends).
    private var recoveries = SingleFlight<String, CheckedContinuation<Recovery, any Error>>()
    /// A fingerprint (`hashValue`, per-process seed) of the last signed-out access token, to tell the observer once.
    private var lastSignOutFingerprint: Int?
    /// Operation IDs already logged as resembling a public one (each is logged once).
    private var typosNoted: Set<String> = []
    /// Tokens a refresh produced that the store could not save, and the access token they replace: a later
    /// recovery for that token uses them (and saves them again) instead of refreshing with a refresh token the
    /// backend may already have rotated away.
    private var unsaved: (rejected: String, fresh: AuthTokens)?

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - store: Where tokens are read, saved after a refresh, and cleared on sign-out.
    ///   - refresher: Trades rejected tokens for new ones.
    ///   - observer: Told after every sign-out.
    ///   - requirement: Which operations need the token (default: all of them).
    ///   - logger: Gets one notice per sign-out (the reason only).
    public init(
        store: any TokenStore, refresher: any TokenRefresher, observer: (any SignOutObserver)? = nil,
        requirement: AuthenticationRequirement = .everyOperation,
        logger: Logger = Logger(label: "ShopKit.AuthenticationMiddleware")
    ) {
        self.requirement = requirement
        self.store = store
        self.refresher = refresher
        self.observer = observer
        self.logger = logger
    }

    /// Sends `request` through `next` with the bearer token, recovering from one 401 as described on the type.
    public nonisolated func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        if AuthenticationRequirement.skipsCurrentRequest
            || !requirement.requiresAuthentication(operationID: operationID, request: request)
        {
            // Reset for the layers below, so a request they make on their own is authenticated as usual.
            return try await AuthenticationRequirement.$skipsCurrentRequest.withValue(false) {
                try await next(request, body, baseURL)
            }
        }
        guard let tokens = try await store.loadTokens() else {
            if let near = requirement.publicOperation(resembling: operationID) { await noteTypo(operationID, near) }
            throw APIError.unauthorized
        }

        let first = try await next(Self.authorize(request, with: tokens), body, baseURL)
        guard first.0.status.code == 401, body.isReplayable else { return first }
        try Task.checkCancellation()

        switch try await recover(rejected: tokens.accessToken) {
        case .tokens(let fresh):
            try Task.checkCancellation()
            let replay = try await next(Self.authorize(request, with: fresh), body, baseURL)
            guard replay.0.status.code == 401 else { return replay }
            await signOut(rejected: fresh.accessToken, reason: .rejectedAfterReplay)
            throw APIError.unauthorized
        case .signedOut:
            throw APIError.unauthorized
        case .failed(let error):
            throw error
        }
    }

    /// Logs, once per operation, that a request refused for want of a token resembles a public operation: the
    /// configuration most likely has a typo (`"Login"` for `login`).
    private func noteTypo(_ operationID: String, _ publicID: String) {
        guard typosNoted.insert(operationID).inserted else { return }
        logger.notice(
            "operation needs a token, but a public operation with a similar ID is configured: a typo? Use the generated id (Operations.<name>.id)",
            metadata: ["operation": "\(operationID)", "configured": "\(publicID)"])
    }

    /// `request` with `Authorization: Bearer <access token>` (replacing any it had).
    static func authorize(_ request: HTTPRequest, with tokens: AuthTokens) -> HTTPRequest {
        var authorized = request
        authorized.headerFields[.authorization] = "Bearer \(tokens.accessToken)"
        return authorized
    }

    /// Joins or starts the single-flight recovery for `rejected` and waits for its result.
    ///
    /// A cancelled caller stops waiting at once (`CancellationError`); the recovery itself runs in its own task and
    /// is never cancelled, so a rotated refresh token is always saved and later callers can still join it.
    func recover(rejected: String) async throws -> Recovery {
        let waiterID = recoveries.makeWaiterID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Runs on this actor before the first suspension: check, join or start without interleaving.
                guard !Task.isCancelled else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                // The first caller starts the flight, led by a task of its own; every caller follows it.
                if let flightID = recoveries.lead(rejected) {
                    Task {
                        let result = await self.performRecovery(rejected: rejected)
                        guard case .resume(let followers) = self.recoveries.finish(rejected, flightID: flightID, handOver: false)
                        else { return }
                        for follower in followers { follower.resume(returning: result) }
                    }
                }
                // A flight runs now (this caller's or an earlier one): following it always joins.
                _ = recoveries.follow(rejected, waiterID: waiterID, follower: continuation)
            }
        } onCancel: {
            Task { await self.leaveRecovery(rejected: rejected, waiterID: waiterID) }
        }
    }

    /// A waiter was cancelled: only it stops waiting; the recovery goes on.
    private func leaveRecovery(rejected: String, waiterID: UInt64) {
        recoveries.leave(rejected, waiterID: waiterID)?.resume(throwing: CancellationError())
    }

    /// Re-reads the store; refreshes only if it still holds the rejected token.
    private func performRecovery(rejected: String) async -> Recovery {
        let current: AuthTokens?
        do { current = try await store.loadTokens() } catch { return .failed(error) }
        guard let current else { return .signedOut }
        if current.accessToken != rejected { return .tokens(current) }

        let fresh: AuthTokens
        if let pending = unsaved, pending.rejected == rejected {
            fresh = pending.fresh
        } else {
            do {
                fresh = try await refresher.refresh(current)
            } catch {
                if let classified = error as? any RetryClassifiableError, classified.isRetryable {
                    logger.notice("token refresh failed transiently; keeping the session")
                    return .failed(error)
                }
                await signOut(rejected: rejected, reason: .refreshFailed)
                return .signedOut
            }
        }
        do {
            try await store.saveTokens(fresh)
            unsaved = nil
        } catch {
            // The refresh succeeded: losing its tokens could sign the user out (a rotated refresh token is spent).
            // Replay with them now and keep them for the next recovery; the store gets another chance then.
            unsaved = (rejected, fresh)
            logger.error("could not save the refreshed tokens; using them for this request", metadata: ["error": "\(error)"])
        }
        return .tokens(fresh)
    }

    /// Clears the store if it still holds `rejected`, then tells the observer; once per rejected token.
    ///
    /// When the store already holds other tokens (the user signed in again meanwhile) or none, there is nothing to
    /// sign out: the caller still gets `unauthorized`, but the new session is kept and the observer is not told.
    /// When the store cannot be read, it is cleared anyway: failing closed is the safe side.
    private func signOut(rejected: String, reason: SignOutReason) async {
        let fingerprint = rejected.hashValue
        guard lastSignOutFingerprint != fingerprint else { return }
        lastSignOutFingerprint = fingerprint  // before any suspension: concurrent callers stop above
        let holdsRejected: Bool
        do { holdsRejected = try await store.loadTokens()?.accessToken == rejected } catch { holdsRejected = true }
        guard holdsRejected else { return }
        do {
            try await store.clearTokens()
        } catch {
            logger.error("could not clear the stored tokens on sign-out", metadata: ["error": "\(error)"])
        }
        logger.notice("signed out", metadata: ["reason": "\(reason)"])
        await observer?.didSignOut(reason: reason)
    }
}
