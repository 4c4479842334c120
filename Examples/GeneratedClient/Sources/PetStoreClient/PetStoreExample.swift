// README-BEGIN (this block is the README's "Generated OpenAPI clients" example, verbatim; a test checks they match)
import Foundation
import OpenAPIRuntime
import ShopKitAPI  // the middlewares, ShopKitConfiguration, TokenStore: no keyring, no libsecret
import ShopKitHTTPS  // HTTPSTransport
import ShopKitTLS  // TLSError

/// A client generated from `openapi.yaml` over the pinned HTTPS transport, with ShopKit's middlewares in their
/// order, outermost first: retry, auth, dedup. `login` and `refresh` are public (named by the generated
/// operation ids, so a typo does not compile); `getPet` needs a token.
func makePetStoreClient(
    serverURL: URL, https: HTTPSTransport, store: any TokenStore, refresher: any TokenRefresher
) -> Client {
    let configuration = ShopKitConfiguration(
        auth: .init(
            tokenStore: store, tokenRefresher: refresher,
            requirement: .publicOperations([Operations.login.id, Operations.refresh.id])))
    return Client(
        serverURL: serverURL, transport: https, middlewares: ShopKitFactory.makeMiddlewares(configuration))
}

/// Refreshes through the backend's `refresh` operation on a client of its own, with no middlewares: the auth
/// middleware calls this refresher, so a refresh that went through it again could recurse. ShopKit calls it once
/// per rejected token (on a 401, not ahead of `expiresAt`), saves what it returns, and replays the request.
struct PetStoreRefresher: TokenRefresher {
    let client: Client

    init(serverURL: URL, https: HTTPSTransport) {
        client = Client(serverURL: serverURL, transport: https)
    }

    func refresh(_ tokens: AuthTokens) async throws -> AuthTokens {
        guard let refreshToken = tokens.refreshToken else { throw APIError.unauthorized }
        switch try await client.refresh(body: .json(.init(refreshToken: refreshToken))) {
        case .ok(let ok):
            let fresh = try ok.body.json
            return AuthTokens(accessToken: fresh.accessToken, refreshToken: fresh.refreshToken)
        case .unauthorized, .undocumented:
            // Not transient: the auth middleware signs the user out. (A transport error thrown above that says
            // it is retryable, such as a timeout, keeps the session instead.)
            throw APIError.unauthorized
        }
    }
}

/// Signs in (no token needed) and keeps the tokens in `store`; `false` for a wrong user name or password.
func signIn(_ client: Client, username: String, password: String, store: any TokenStore) async throws -> Bool {
    switch try await client.login(body: .json(.init(username: username, password: password))) {
    case .ok(let ok):
        let tokens = try ok.body.json
        try await store.saveTokens(AuthTokens(accessToken: tokens.accessToken, refreshToken: tokens.refreshToken))
        return true
    case .unauthorized, .undocumented:
        return false
    }
}

/// The pet's name, or what went wrong. The auth middleware attaches the token, and on a 401 refreshes it once
/// and replays the call.
func petName(_ client: Client, id: String) async -> String {
    do {
        switch try await client.getPet(path: .init(id: id)) {
        case .ok(let ok): return try ok.body.json.name
        case .notFound: return "No such pet."
        case .undocumented(let status, _): return "Unexpected status \(status)."
        }
    } catch let error as ClientError {
        // A generated client wraps what a middleware or the transport threw; the cause is `underlyingError`.
        switch error.underlyingError {
        case APIError.unauthorized: return "Please sign in again."
        case let tls as TLSError where tls.code == .pinMismatch: return "This is not the pet store's server."
        case let tls as TLSError: return "No secure connection: \(tls)"
        default: return "The pet store is unavailable: \(error.underlyingError)"
        }
    } catch {
        return "Something went wrong: \(error)"
    }
}
// README-END
