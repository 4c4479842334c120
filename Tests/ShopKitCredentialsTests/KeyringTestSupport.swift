import NIOConcurrencyHelpers
import Foundation
import Testing

@testable import ShopKitCredentials
import TestSupport

/// Where the keyring tests may run: only inside scripts/with-keyring, which sets SHOPKIT_REAL_HOME and gives a
/// private session bus with a throwaway, unlocked gnome-keyring, so the developer's real keyring is never touched.
enum KeyringTestEnvironment {
    static var isPrivate: Bool { ProcessInfo.processInfo.environment["SHOPKIT_REAL_HOME"] != nil }
    static let skipReason: Comment = "keyring tests run only inside scripts/with-keyring (SHOPKIT_REAL_HOME is unset)"

    /// A key no other test uses.
    static func uniqueKey(_ name: String = #function) -> CredentialKey {
        CredentialKey(service: "dev.shopkit.tests.\(UUID().uuidString)", account: name)
    }
}

/// Runs `body` and returns its credential error, or nil when it succeeded.
func credentialError<T>(_ body: () async throws(CredentialError) -> T) async -> CredentialError? {
    do throws(CredentialError) {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
}

/// A second private D-Bus session bus (`dbus-daemon`) with its own unlocked gnome-keyring-daemon, both real child
/// processes of the test, so a test can lock the keyring or stop the daemons without touching anything else.
///
/// The bus has no service directories, so nothing is ever auto-started on it: after `killBus()` there is no bus,
/// and a stopped keyring stays stopped until `startKeyring()`.
final class PrivateKeyring: Sendable {
    let directory: URL
    /// The bus address, for a child's DBUS_SESSION_BUS_ADDRESS.
    let address: String
    let busPID: Int32
    private let bus: Process  // Sendable in corelibs Foundation
    /// The environment the keyring daemon runs in (the bus, and HOME/XDG dirs inside `directory`).
    private let keyringEnvironment: [String: String]
    private let keyring = NIOLockedValueBox<Process?>(nil)

    static let password = "shopkit-private-keyring"

    private init(directory: URL, address: String, bus: Process, keyringEnvironment: [String: String]) {
        self.directory = directory
        self.address = address
        self.bus = bus
        self.busPID = bus.processIdentifier
        self.keyringEnvironment = keyringEnvironment
    }

    /// The running keyring daemon's process id, if one runs.
    var keyringPID: Int32? { keyring.withLockedValue { $0?.processIdentifier } }

    /// Starts the bus, then the keyring daemon (login keyring created with a known password, unlocked), and waits
    /// until the keyring owns org.freedesktop.secrets on the bus.
    static func start() async throws -> PrivateKeyring {
        try await offPool("a private dbus-daemon and gnome-keyring-daemon to start", timeout: TestDeadline.child) { try startBlocking() }
    }

    private static func startBlocking() throws -> PrivateKeyring {
        var template = Array("/tmp/skk.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw FixtureError(description: "mkdtemp failed") }
        let directory = URL(fileURLWithPath: String(cString: made))
        for sub in ["home", "data", "run"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory.path)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configURL = directory.appendingPathComponent("bus.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)

        let bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        bus.arguments = ["--config-file=\(configURL.path)", "--nofork", "--print-address=1"]
        let busOut = Pipe()
        bus.standardOutput = busOut
        bus.standardError = FileHandle.nullDevice
        try bus.run()
        var line: [UInt8] = []
        let fd = busOut.fileHandleForReading.fileDescriptor
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        let address = String(decoding: line, as: UTF8.self)
        guard address.hasPrefix("unix:") else {
            kill(bus.processIdentifier, SIGKILL)
            throw FixtureError(description: "dbus-daemon printed no address")
        }

        var environment = [
            "DBUS_SESSION_BUS_ADDRESS": address,
            "HOME": directory.appendingPathComponent("home").path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "XDG_RUNTIME_DIR": directory.appendingPathComponent("run").path,
        ]
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        // scripts/with-keyring ends whatever carries its run's mark, should this test die before stopping it.
        environment["SHOPKIT_TEST_RUN"] = ProcessInfo.processInfo.environment["SHOPKIT_TEST_RUN"]
        let fixture = PrivateKeyring(directory: directory, address: address, bus: bus, keyringEnvironment: environment)
        do {
            try fixture.startKeyringBlocking()
        } catch {
            fixture.stopBlocking()
            throw error
        }
        return fixture
    }

    /// Starts a keyring daemon on the bus, which opens the login keyring in `directory` with the known password
    /// (creating it the first time) and so leaves it unlocked, and waits until it owns org.freedesktop.secrets.
    func startKeyring() async throws {
        try await offPool("gnome-keyring-daemon to start", timeout: TestDeadline.child) { try self.startKeyringBlocking() }
    }

    /// ``startKeyring()`` for callers already off the cooperative pool.
    func startKeyringBlocking() throws {
        let keyring = Process()
        keyring.executableURL = URL(fileURLWithPath: "/usr/bin/gnome-keyring-daemon")
        keyring.arguments = ["--foreground", "--unlock", "--components=secrets"]
        keyring.environment = keyringEnvironment
        let keyringIn = Pipe()
        keyring.standardInput = keyringIn
        keyring.standardOutput = FileHandle.nullDevice
        keyring.standardError = FileHandle.nullDevice
        try keyring.run()
        self.keyring.withLockedValue { $0 = keyring }
        keyringIn.fileHandleForWriting.write(Data(Self.password.utf8))
        try keyringIn.fileHandleForWriting.close()

        let wait = Process()
        wait.executableURL = URL(fileURLWithPath: "/usr/bin/gdbus")
        wait.arguments = ["wait", "--session", "--timeout", "60", "org.freedesktop.secrets"]
        wait.environment = keyringEnvironment
        try wait.run()
        wait.waitUntilExit()
        guard wait.terminationStatus == 0 else {
            throw FixtureError(description: "gnome-keyring-daemon did not appear on the private bus")
        }
    }

    /// Kills the keyring daemon (SIGKILL) while the bus lives on, and returns once the bus has noticed: nothing
    /// owns org.freedesktop.secrets any more (the bus answers NameHasOwner in order with what it has processed).
    func killKeyring() async throws {
        try await offPool("gnome-keyring-daemon to be killed and gone from the bus") { try self.killKeyringBlocking() }
    }

    /// ``killKeyring()`` for callers already off the cooperative pool.
    func killKeyringBlocking() throws {
        let keyring = self.keyring.withLockedValue { running -> Process? in
            defer { running = nil }
            return running
        }
        guard let keyring else { return }
        kill(keyring.processIdentifier, SIGKILL)
        keyring.waitUntilExit()
        // The daemon's socket is closed by now; each call below is a round trip through the bus, which handles
        // the hang-up before or after it, so a bounded number of calls sees the name go.
        for _ in 0..<1000 {
            let answer = try Self.run(
                "/usr/bin/gdbus",
                ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                 "--method", "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.secrets"],
                environment: keyringEnvironment)
            if answer.contains("false") { return }
        }
        throw FixtureError(description: "org.freedesktop.secrets kept an owner after the daemon was killed")
    }

    /// Kills the bus daemon (SIGKILL) and waits for it: every connection to it is closed.
    func killBus() async throws {
        let bus = self.bus
        kill(busPID, SIGKILL)
        try await offPool("the private dbus-daemon to exit") { bus.waitUntilExit() }
    }

    /// Locks the default collection through the Secret Service D-Bus API (`Lock` never prompts).
    func lockDefaultCollection() async throws {
        try await offPool("the keyring's default collection to lock") { try self.lockDefaultCollectionBlocking() }
    }

    /// ``lockDefaultCollection()`` for callers already off the cooperative pool.
    func lockDefaultCollectionBlocking() throws {
        let alias = try Self.gdbus(["ReadAlias", "default"], environment: keyringEnvironment)
        guard let start = alias.firstIndex(of: "'"), let end = alias[alias.index(after: start)...].firstIndex(of: "'")
        else { throw FixtureError(description: "no default collection: \(alias)") }
        let path = String(alias[alias.index(after: start)..<end])
        _ = try Self.gdbus(["Lock", "['\(path)']"], environment: keyringEnvironment)
    }

    /// Whether the keyring holds an item for `key`, locked or not, asked through the Secret Service D-Bus API
    /// (`SearchItems` lists locked items too, and never prompts).
    func holdsItem(_ key: CredentialKey) async throws -> Bool {
        try await offPool("the keyring to answer whether it holds an item") { try self.holdsItemBlocking(key) }
    }

    /// ``holdsItem(_:)`` for callers already off the cooperative pool.
    func holdsItemBlocking(_ key: CredentialKey) throws -> Bool {
        let found = try Self.gdbus(
            ["SearchItems", "{'service': '\(key.service)', 'account': '\(key.account)'}"], environment: keyringEnvironment)
        return found.contains("objectpath '/org/freedesktop/secrets/collection/")
    }

    private static func gdbus(_ call: [String], environment: [String: String]) throws -> String {
        try run(
            "/usr/bin/gdbus",
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.\(call[0])",
            ] + call.dropFirst(),
            environment: environment)
    }

    private static func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError(description: "\(executable) \(arguments.joined(separator: " ")) failed")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Freezes the keyring daemon (SIGSTOP): it stays on the bus but never answers.
    func pauseKeyring() {
        if let pid = keyringPID { kill(pid, SIGSTOP) }
    }

    /// Stops both daemons and removes the directory.
    func stop() async {
        _ = try? await offPool("the private keyring and bus to stop") { self.stopBlocking() }
    }

    private func stopBlocking() {
        let keyring = self.keyring.withLockedValue { $0 }
        if let keyring {
            kill(keyring.processIdentifier, SIGKILL)
            keyring.waitUntilExit()
        }
        kill(busPID, SIGKILL)
        bus.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The built `token-store` binary, run as a child process.
enum TokenStoreBinary {
    typealias Outcome = BuiltBinary.Outcome

    /// `.build/<config>/token-store`, beside the test bundle.
    static var binary: URL? { BuiltBinary(named: "token-store")?.url }

    /// Runs `token-store` (or `executable`) with `stdin` and the environment plus `overrides`.
    static func run(
        _ arguments: [String], stdin: String = "", environment overrides: [String: String] = [:],
        executable: URL? = nil
    ) async throws -> Outcome {
        guard let binary = executable.map(BuiltBinary.init(url:)) ?? BuiltBinary(named: "token-store") else {
            throw FixtureError(description: "token-store binary not found; run swift build --build-tests first")
        }
        return try await binary.run(arguments, stdin: stdin, environment: overrides)
    }
}
