import Foundation

/// One of the package's built executables (`pin-check`, `token-store`, …), run as a real child process.
package struct BuiltBinary: Sendable {
    /// What a run ended in.
    package struct Outcome: Sendable {
        /// The exit status.
        package var status: Int32
        /// Everything written to standard output.
        package var stdout: String
        /// Everything written to standard error.
        package var stderr: String
    }

    /// The executable's location.
    package let url: URL

    /// Any executable, e.g. a system tool run with the same plumbing.
    package init(url: URL) {
        self.url = url
    }

    /// The executable `name` in `.build/<config>/`, beside the test bundle; nil if it was not built.
    package init?(named name: String) {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug"),
        ]
        guard
            let url = candidates.map({ $0.appendingPathComponent(name).standardizedFileURL })
                .first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
        else { return nil }
        self.url = url
    }

    /// Runs the executable with `arguments`, `stdin` written to its standard input (then closed) and the
    /// test's environment plus `overrides`, and waits for it on a thread of its own, never on the
    /// cooperative pool.
    package func run(
        _ arguments: [String], stdin: String = "", environment overrides: [String: String] = [:]
    ) async throws -> Outcome {
        let url = self.url
        let result: Result<Outcome, any Error> = await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(
                    returning: Result {
                        let process = Process()
                        process.executableURL = url
                        process.arguments = arguments
                        var environment = ProcessInfo.processInfo.environment
                        for (name, value) in overrides { environment[name] = value }
                        process.environment = environment
                        let input = Pipe(), output = Pipe(), errors = Pipe()
                        process.standardInput = input
                        process.standardOutput = output
                        process.standardError = errors
                        try process.run()
                        input.fileHandleForWriting.write(Data(stdin.utf8))
                        try input.fileHandleForWriting.close()
                        // Read standard error on its own thread so neither pipe can fill up and stall the child.
                        let errorData = ErrorCollector(errors.fileHandleForReading)
                        let out = output.fileHandleForReading.readDataToEndOfFile()
                        let err = errorData.wait()
                        process.waitUntilExit()
                        return Outcome(
                            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
                            stderr: String(decoding: err, as: UTF8.self))
                    })
            }.start()
        }
        return try result.get()
    }
}

/// Reads a pipe to its end on a thread of its own.
private final class ErrorCollector: Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written once by the reading thread before `done` is signalled, read only after `wait()` returns: the
    // semaphore orders the two accesses, so there is no concurrent access.
    nonisolated(unsafe) private var data = Data()

    init(_ handle: FileHandle) {
        Thread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }.start()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
