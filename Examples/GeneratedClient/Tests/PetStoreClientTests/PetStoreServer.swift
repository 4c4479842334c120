import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitAPI
import ShopKitHTTPS
import ShopKitPinning

/// What the pet store saw of one request.
struct Seen: Sendable, Equatable, Decodable {
    let method: String
    let path: String
    let authorization: String?
}

/// The repository's `TestCerts/` folder (every key there is public, for tests only).
enum TestCerts {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // PetStoreClientTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // GeneratedClient
        .deletingLastPathComponent()  // Examples
        .deletingLastPathComponent()  // repository root
        .appendingPathComponent("TestCerts", isDirectory: true)

    static func text(_ file: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
    }

    /// The pin `TestCerts/generate.sh` computed with the openssl CLI for `name` (a line `NAME sha256/…` in pins.txt).
    static func pin(_ name: String) throws -> SPKIPin {
        for line in try text("pins.txt").split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, fields[0] == name { return try SPKIPin(String(fields[1])) }
        }
        throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no pin for \(name) in pins.txt"])
    }
}

/// `pet_store_server.py` in a child process: started on a free port, stopped by ``stop()`` or, should the test
/// process die first, by the end of its standard input.
///
/// Unchecked Sendable: `Process` and `Pipe` are not Sendable, but after `init` the process is only waited for and
/// the pipe only closed, once, by ``stop()``; `port` is a constant.
final class PetStoreServer: @unchecked Sendable {
    let port: Int
    private let process: Process
    private let stdin: Pipe

    init() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("pet_store_server.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, TestCerts.directory.path]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        let line = String(decoding: stdout.fileHandleForReading.readLine(), as: UTF8.self)
        guard let port = Int(line) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "pet store did not start: \(line)"])
        }
        self.port = port
        self.process = process
        self.stdin = stdin
    }

    var url: URL { URL(string: "https://127.0.0.1:\(port)")! }

    /// What the server saw so far, asked over `https` (which must trust and pin it).
    func seen(through https: HTTPSTransport) async throws -> [Seen] {
        let (response, body) = try await https.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/_seen"), body: nil, baseURL: url,
            operationID: "seen")
        guard response.status == .ok, let body else { throw ClientTransportFailure(status: response.status) }
        return try JSONDecoder().decode([Seen].self, from: Data(try await Data(collecting: body, upTo: 1 << 20)))
    }

    func stop() {
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    struct ClientTransportFailure: Error {
        let status: HTTPResponse.Status
    }
}

extension FileHandle {
    /// The bytes up to the first newline (without it), read one at a time so nothing after it is consumed.
    fileprivate func readLine() -> [UInt8] {
        var line: [UInt8] = []
        while let byte = try? read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        return line
    }
}

/// A refresher that counts its calls.
actor CountingRefresher: TokenRefresher {
    private(set) var count = 0
    private let answer: @Sendable (AuthTokens) throws -> AuthTokens

    init(answer: @escaping @Sendable (AuthTokens) throws -> AuthTokens) { self.answer = answer }

    func refresh(_ tokens: AuthTokens) async throws -> AuthTokens {
        count += 1
        return try answer(tokens)
    }
}

/// The innermost middleware: counts the attempts that reach the transport.
actor AttemptCounter: ClientMiddleware {
    private(set) var attempts = 0

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        attempts += 1
        return try await next(request, body, baseURL)
    }
}
