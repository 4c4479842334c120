import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKit

/// A pretend shop backend: accepts only the token it last saw refreshed, can fail on demand.
actor StubBackend {
    private(set) var log: [String] = []
    private var validToken = "token-1"
    private var failures: [Int] = []

    /// The backend as a `ClientTransport` (the base of the decorator chain).
    nonisolated var transport: BackendTransport { BackendTransport(backend: self) }

    func revokeCurrentToken() {
        let number = Int(validToken.dropFirst("token-".count)) ?? 1
        validToken = "token-\(number + 1)"
    }

    func failNext(with status: Int) { failures.append(status) }

    /// The status and JSON body for a request with `authorization` to `path`.
    func answer(authorization: String?, path: String?) -> (status: Int, json: String?) {
        if !failures.isEmpty {
            let status = failures.removeFirst()
            log.append("\(status)")
            return (status, nil)
        }
        guard authorization == "Bearer \(validToken)" else {
            log.append("401")
            return (401, nil)
        }
        log.append("200")
        let id = path?.split(separator: "/").last.map(String.init) ?? "?"
        return (200, #"{"id":"\#(id)","name":"Trail shoe #\#(id)","price":59.5,"currency":"EUR"}"#)
    }
}

/// The stub backend as a `ClientTransport`: answers in process, no network.
struct BackendTransport: ClientTransport {
    let backend: StubBackend

    func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let answer = await backend.answer(authorization: request.headerFields[.authorization], path: request.path)
        var fields = HTTPFields()
        if answer.json != nil { fields[.contentType] = "application/json" }
        return (
            HTTPResponse(status: .init(code: answer.status), headerFields: fields),
            answer.json.map { HTTPBody(Data($0.utf8)) }
        )
    }
}

/// Tokens in memory, for the API client demo.
actor DemoTokenStore: TokenStore {
    private var tokens: AuthTokens?

    init(_ tokens: AuthTokens?) { self.tokens = tokens }

    func loadTokens() async throws -> AuthTokens? { tokens }
    func saveTokens(_ tokens: AuthTokens) async throws { self.tokens = tokens }
    func clearTokens() async throws { tokens = nil }
}
