import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import Testing
import TestSupport
@testable import ShopKitHTTPS

// README-BEGIN (the README's caller-on-the-loop example, verbatim; a test checks they match)
/// Fetches `paths` one after another, the caller running on the transport's event loop.
func fetchAll(_ paths: [String], from baseURL: URL, with transport: HTTPSTransport) async throws -> [HTTPResponse] {
    try await withTaskExecutorPreference(transport.executor) {
        var responses: [HTTPResponse] = []
        for path in paths {
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
            let (response, body) = try await transport.send(request, body: nil, baseURL: baseURL, operationID: "get")
            if let body {
                // Runs on the event loop: never block here.
                _ = try await [UInt8](collecting: body, upTo: 1 << 20)
            }
            responses.append(response)
        }
        return responses
    }
}
// README-END

/// A caller that prefers `transport.executor` runs on the connection's event loop: the request starts there and
/// the caller resumes there, with the response head and with every body chunk.
@Suite(.timeLimit(.minutes(3))) struct CallerOnLoopTests {
    @Test func aRequestUnderTheExecutorPreferenceRunsOnTheConnectionsLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let body = pattern(200_000)
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok(body) }
        let transport = HTTPSTransport(configuration: .init(timeouts: .wide(), eventLoopGroup: group), security: realSecurity())
        let executor = try #require(transport.executor as? EventLoopTaskExecutor)
        let loop = executor.loop
        #expect(loop === transport.pool.loops[0])

        try await withTaskExecutorPreference(transport.executor) {
            // A new connection, then the kept-alive one.
            for _ in 0..<3 {
                let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
                let (response, responseBody) = try await transport.send(
                    request, body: nil, baseURL: server.baseURL, operationID: "test")
                #expect(loop.inEventLoop)
                #expect(response.status == .ok)
                var received: [UInt8] = []
                for try await chunk in try #require(responseBody) {
                    #expect(loop.inEventLoop)
                    received += chunk
                }
                #expect(received == body)
            }
        }
        // The one connection was opened on that loop.
        #expect(server.counts.accepted == 1)
        let lease = try await transport.pool.lease(
            try RequestTarget(baseURL: server.baseURL), deadline: .now() + .seconds(120))
        #expect(lease.reused)
        #expect(lease.connection.channel.eventLoop === loop)
        transport.pool.release(lease, reusable: true)

        await transport.shutdown()
        await server.stop()
        try await group.shutdownGracefully()
    }

    @Test func theReadmeExampleRunsAndIsShownVerbatim() async throws {
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = HTTPSTransport(configuration: .init(timeouts: .wide()), security: realSecurity())
        let responses = try await fetchAll(["/a", "/b"], from: server.baseURL, with: transport)
        #expect(responses.map(\.status) == [.ok, .ok])
        #expect(server.counts.accepted == 1)
        await transport.shutdown()
        await server.stop()
        let example = try #require(try READMESnippets.example(inFile: #filePath))
        let article = "Sources/ShopKitHTTPS/ShopKitHTTPS.docc/TransportGuarantees.md"
        #expect(try READMESnippets.documentShows(example, in: article), "\(article)'s caller-on-the-loop example differs from this file")
    }

    @Test func withoutThePreferenceTheCallerStaysOffTheLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await LoopbackHTTPServer.startTLS { _ in .ok() }
        let transport = HTTPSTransport(configuration: .init(timeouts: .wide(), eventLoopGroup: group), security: realSecurity())
        let loop = try #require(transport.executor as? EventLoopTaskExecutor).loop
        let (response, bytes) = try await transport.fetch(baseURL: server.baseURL)
        #expect(response.status == .ok)
        #expect(bytes == Array("ok".utf8))
        #expect(!loop.inEventLoop)
        await transport.shutdown()
        await server.stop()
        try await group.shutdownGracefully()
    }
}
