import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing
import TestSupport

@testable import ShopKitAPI

/// Per-operation auth for generated clients: public operations go out without a token, even signed out.
@Suite(.timeLimit(.minutes(3))) struct AuthenticationRequirementTests {
    static func request(_ method: HTTPRequest.Method = .get, path: String) -> HTTPRequest {
        HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: [:])
    }

    /// Sends `request` as operation `operationID` through `middleware` to `stub`.
    static func send(
        _ middleware: AuthenticationMiddleware, _ request: HTTPRequest, operationID: String, to stub: StubTransport
    ) async throws -> Int {
        try await middleware.intercept(request, body: nil, baseURL: baseURL, operationID: operationID) {
            try await stub.send($0, body: $1, baseURL: $2, operationID: operationID)
        }.0.status.code
    }

    /// A public ID that differs from the operation's only in case or separators is most likely a typo: the refusal
    /// for want of a token is logged once per operation, naming both IDs, and nothing is sent.
    @Test func aPublicOperationTypoIsLoggedOnceWhenItsRequestIsRefused() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let capture = LogCapture()
        let auth = AuthenticationMiddleware(
            store: InMemoryTokenStore(), refresher: CountingRefresher(returning: newTokens),
            requirement: .publicOperations(["Login", "get_catalog"]), logger: capture.logger())
        for _ in 0..<3 {
            await #expect(throws: APIError.unauthorized) {
                try await Self.send(auth, Self.request(.post, path: "/login"), operationID: "login", to: stub)
            }
        }
        await #expect(throws: APIError.unauthorized) {
            try await Self.send(auth, Self.request(path: "/pets/1"), operationID: "getPet", to: stub)
        }
        #expect(await stub.requests.isEmpty)
        let hints = capture.records.filter { $0.message.contains("a typo?") }
        #expect(hints.count == 1, "once per operation, and not for an unrelated one")
        #expect(hints.first?.metadata["operation"] == "login")
        #expect(hints.first?.metadata["configured"] == "Login")
        #expect(AuthenticationRequirement.publicOperations(["get_catalog"]).publicOperation(resembling: "getCatalog") == "get_catalog")
        #expect(AuthenticationRequirement.publicOperations(["login"]).publicOperation(resembling: "login") == nil)
    }

    @Test func everyOperationIsTheDefault() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let signedOut = AuthenticationMiddleware(
            store: InMemoryTokenStore(), refresher: CountingRefresher(returning: newTokens))
        await #expect(throws: APIError.unauthorized) {
            try await Self.send(signedOut, Self.request(.post, path: "/login"), operationID: "login", to: stub)
        }
        #expect(await stub.requests.isEmpty)
        #expect(AuthenticationRequirement.everyOperation.requiresAuthentication(
            operationID: "anything", request: Self.request(path: "/")))
    }

    @Test func publicOperationsGoOutWithoutTokenEvenSignedOut() async throws {
        let stub = StubTransport(replies: [.status(401)])
        let refresher = CountingRefresher(returning: newTokens)
        let auth = AuthenticationMiddleware(
            store: InMemoryTokenStore(), refresher: refresher, requirement: .publicOperations(["login"]))
        // The public operation reaches the server, and its 401 (wrong password) comes back as is: no refresh.
        #expect(try await Self.send(auth, Self.request(.post, path: "/login"), operationID: "login", to: stub) == 401)
        #expect(await stub.requests.first?.authorization == nil)
        #expect(await refresher.count == 0)
        // Every other operation still needs the token.
        await #expect(throws: APIError.unauthorized) {
            try await Self.send(auth, Self.request(path: "/pets/1"), operationID: "getPet", to: stub)
        }
        await #expect(throws: APIError.unauthorized) {  // the match is exact
            try await Self.send(auth, Self.request(.post, path: "/login"), operationID: "Login", to: stub)
        }
        #expect(await stub.requests.count == 1)
    }

    @Test func authenticatedOperationsStillCarryTheToken() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let auth = AuthenticationMiddleware(
            store: InMemoryTokenStore(oldTokens), refresher: CountingRefresher(returning: newTokens),
            requirement: .publicOperations(["login"]))
        #expect(try await Self.send(auth, Self.request(path: "/pets/1"), operationID: "getPet", to: stub) == 200)
        #expect(try await Self.send(auth, Self.request(.post, path: "/login"), operationID: "login", to: stub) == 200)
        #expect(await stub.requests.map(\.authorization) == ["Bearer old-access", nil])
    }

    @Test func customRuleSeesOperationAndRequest() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let rule = AuthenticationRequirement.custom { operationID, request in
            !(request.path?.hasPrefix("/public/") ?? false) && operationID != "health"
        }
        let auth = AuthenticationMiddleware(
            store: InMemoryTokenStore(oldTokens), refresher: CountingRefresher(returning: newTokens), requirement: rule)
        _ = try await Self.send(auth, Self.request(path: "/public/catalog"), operationID: "catalog", to: stub)
        _ = try await Self.send(auth, Self.request(path: "/health"), operationID: "health", to: stub)
        _ = try await Self.send(auth, Self.request(path: "/orders"), operationID: "orders", to: stub)
        #expect(await stub.requests.map(\.authorization) == [nil, nil, "Bearer old-access"])
    }

    /// The transport form takes the same option.
    @Test func transportTakesTheRequirementToo() async throws {
        let stub = StubTransport(replies: [.status(200)])
        let auth = authenticating(stub, store: InMemoryTokenStore(), refresher: CountingRefresher(returning: newTokens),
            requirement: .publicOperations(["login"]))
        let (response, _) = try await auth.send(
            Self.request(.post, path: "/login"), body: nil, baseURL: baseURL, operationID: "login")
        #expect(response.status.code == 200)
        #expect(await stub.requests.first?.authorization == nil)
    }
}
