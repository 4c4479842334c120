import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Runs swift-openapi-runtime middlewares over a transport the way a generated client does: the first middleware
/// is the outermost, each one's `next` is the rest of the chain, and the last one's `next` is the transport.
///
/// This is how ``APIClient`` runs ShopKit's decorators, so retry, auth and dedup have one form, the
/// `ClientMiddleware`, whichever client sends: a generated `Client` or ``APIClient``.
package struct MiddlewareChain: ClientTransport {
    /// What carries the request once every middleware has passed it on.
    package let transport: any ClientTransport
    /// The middlewares, outermost first.
    package let middlewares: [any ClientMiddleware]

    /// The chain `middlewares` (outermost first) over `transport`.
    package init(_ transport: any ClientTransport, _ middlewares: [any ClientMiddleware]) {
        self.transport = transport
        self.middlewares = middlewares
    }

    /// Sends `request` through every middleware, then the transport.
    package func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        try await send(from: middlewares.startIndex, request, body, baseURL, operationID)
    }

    private func send(
        from index: Int, _ request: HTTPRequest, _ body: HTTPBody?, _ baseURL: URL, _ operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard index < middlewares.endIndex else {
            return try await transport.send(request, body: body, baseURL: baseURL, operationID: operationID)
        }
        return try await middlewares[index].intercept(request, body: body, baseURL: baseURL, operationID: operationID) {
            try await send(from: index + 1, $0, $1, $2, operationID)
        }
    }
}
