import Foundation
import Logging
import Testing
import TestSupport

@testable import ShopKit

/// `ShopKitConfiguration.logger`, the client's one logging knob: it reaches the client, the middlewares, and the
/// transport's HTTP and TLS layers; a layer's own logger wins for that layer; nothing is logged by default.
@Suite(.timeLimit(.minutes(3))) struct OneLoggerTests {
    static let tokens = AuthTokens(accessToken: "access-secret-1", refreshToken: "refresh-secret-1")
    static let pins = [TestCertificates.pin("leaf-localhost-ecdsa").description, TestCertificates.pin("backup-intermediate").description]

    struct Me: APIRequest {
        typealias Response = NoContent
        var path: String { "/me" }
    }

    /// A server that answers every request 401: the client logs the request, TLS the pin, the pool the
    /// connection, and auth the sign-out its rejected refresh causes.
    static func startServer() async throws -> LoopbackTLSServer {
        try await LoopbackTLSServer.start(
            certificateChainPEM: TestCertificates.standardChain(),
            privateKeyPEM: TestCertificates.privateKey("leaf-localhost-ecdsa"),
            responder: { _, _ in .init(status: .unauthorized, body: []) })
    }

    static func https(tlsLogger: Logger? = nil) throws -> HTTPSTransport.Configuration {
        HTTPSTransport.Configuration(
            tls: TLSClientConfiguration(
                trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false),
                pinning: try PinningPolicy(["localhost": pins]), logger: tlsLogger),
            timeouts: .wide())
    }

    static func configuration(logger: Logger?) -> ShopKitConfiguration {
        ShopKitConfiguration(
            auth: .init(
                tokenStore: InMemoryTokenStore(tokens), tokenRefresher: ClosureTokenRefresher { _ in throw APIError.unauthorized }),
            logger: logger)
    }

    @Test func oneLoggerReachesEveryLayer() async throws {
        let capture = LogCapture()
        let configuration = Self.configuration(logger: capture.logger(label: "app"))
        let server = try await Self.startServer()
        let (client, transport) = try ShopKitFactory.makeAPIClient(
            baseURL: URL(string: "https://localhost:\(server.port)")!, configuration: configuration, https: Self.https())
        await #expect(throws: APIError.unauthorized) { try await client.send(Me()) }
        await transport.shutdown()
        try await server.shutdown()

        let messages = Set(capture.records.map(\.message))
        #expect(messages.contains("request"))  // APIClient
        #expect(messages.contains("signed out"))  // the auth middleware
        #expect(messages.contains("opening connection"))  // the transport's pool
        #expect(messages.contains("pin matched"))  // TLS
        let middlewares = ShopKitFactory.makeMiddlewares(configuration)
        #expect((middlewares.first as? RetryMiddleware)?.logger.label == "app")
        #expect((middlewares.last as? DeduplicationMiddleware)?.logger.label == "app")
        // Never a token.
        let text = capture.records.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!text.contains("secret"))
    }

    @Test func aLayersOwnLoggerWinsForThatLayer() async throws {
        let app = LogCapture()
        let tls = LogCapture()
        let server = try await Self.startServer()
        let (client, transport) = try ShopKitFactory.makeAPIClient(
            baseURL: URL(string: "https://localhost:\(server.port)")!,
            configuration: Self.configuration(logger: app.logger()), https: Self.https(tlsLogger: tls.logger()))
        await #expect(throws: APIError.unauthorized) { try await client.send(Me()) }
        await transport.shutdown()
        try await server.shutdown()

        let appMessages = Set(app.records.map(\.message))
        let tlsMessages = Set(tls.records.map(\.message))
        #expect(appMessages.contains("request") && appMessages.contains("signed out"))
        #expect(tlsMessages.contains("pin matched") && tlsMessages.contains("opening connection"))  // HTTP follows TLS
        #expect(!appMessages.contains("pin matched") && !appMessages.contains("opening connection"))
        #expect(!tlsMessages.contains("request"))
    }

    @Test func silentByDefault() throws {
        let configuration = Self.configuration(logger: nil)
        #expect(configuration.logger.handler is SwiftLogNoOpLogHandler)
        for middleware in ShopKitFactory.makeMiddlewares(configuration) {
            if let retry = middleware as? RetryMiddleware { #expect(retry.logger.handler is SwiftLogNoOpLogHandler) }
            if let dedup = middleware as? DeduplicationMiddleware { #expect(dedup.logger.handler is SwiftLogNoOpLogHandler) }
        }
        let (client, transport) = try ShopKitFactory.makeAPIClient(
            baseURL: URL(string: "https://localhost:1")!, configuration: configuration, https: Self.https())
        #expect(client.logger.handler is SwiftLogNoOpLogHandler)
        #expect(transport.configuration.tls.logger.handler is SwiftLogNoOpLogHandler)
        #expect(transport.configuration.logger == nil)  // HTTP events follow the (silent) TLS logger
        let short = try HTTPSTransport(pinning: ["localhost": Self.pins])
        #expect(short.configuration.tls.logger.handler is SwiftLogNoOpLogHandler)
        #expect(ShopKitConfiguration().logger.handler is SwiftLogNoOpLogHandler)
    }

    /// The short form's `logger` reaches TLS and HTTP; the factory's `pinning:` passes the client's logger to it.
    @Test func theShortFormsLoggerReachesTLSAndHTTP() throws {
        let capture = LogCapture()
        let (client, transport) = try ShopKitFactory.makeAPIClient(
            baseURL: URL(string: "https://localhost:1")!, configuration: Self.configuration(logger: capture.logger(label: "app")),
            pinning: ["localhost": Self.pins])
        #expect(client.logger.label == "app")
        #expect(transport.configuration.tls.logger.label == "app")
        #expect(transport.configuration.tls.hasLogger)
    }
}
