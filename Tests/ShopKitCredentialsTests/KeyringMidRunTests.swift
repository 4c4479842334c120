import Foundation
import ShopKitAPI
import Testing
import TestSupport

@testable import ShopKitCredentials

/// One `KeyringStore` whose Secret Service goes away between two calls, in a child process of the test (libsecret
/// only talks to the process's session bus, and disturbing the shared one would end every other test).
///
/// The parent starts a private bus + keyring, runs this test binary again with only one ``KeyringChildScenario``
/// test enabled and DBUS_SESSION_BUS_ADDRESS pointing at the private bus, and acts on the child's reports (kills
/// the bus or the keyring daemon, starts the daemon again), telling the child to go on after each step.
@Suite(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason), .timeLimit(.minutes(3)))
struct KeyringMidRunTests {
    @Test func busKilledMidRunMakesTheSameStoreUnavailable() async throws {
        let reports = try await Self.withPrivateKeyring { keyring in
            try Self.runChild("readAcrossABusDeath", busAddress: keyring.address) { _ in
                // The child holds an open store: kill its bus, then let it read again.
                kill(keyring.busPID, SIGKILL)
            }
        }
        #expect(reports == ["read found", "waiting", "read unavailable", "probe unavailable", "alive"])
    }

    /// The daemon dies while the bus lives (the store's cached proxy still names the dead daemon): the next calls
    /// are unavailable with a reason, and once a daemon owns the name again the same store finds the item, with
    /// no call hanging (each would otherwise end in the store's timeout, reported as "unavailable").
    @Test func keyringDaemonKilledMidRunIsUnavailableThenRecovers() async throws {
        let reports = try await Self.withPrivateKeyring { keyring in
            try Self.runChild("readAcrossADaemonRestart", busAddress: keyring.address) { step in
                if step == 1 { try keyring.killKeyringBlocking() } else { try keyring.startKeyringBlocking() }
            }
        }
        #expect(reports == [
            "read found", "waiting", "read unavailable", "probe unavailable", "waiting", "read found",
            "probe available", "alive",
        ])
    }

    /// Sign-out while the keyring is locked (the screen locked after the store was opened): the delete must fail
    /// as locked, not report success while the tokens stay; after an unlock the item is still there.
    @Test func signOutInALockedKeyringIsLockedAndKeepsTheItem() async throws {
        let key = CredentialKey(service: KeyringChildScenario.lockedDeleteService, account: "a")
        let reports = try await Self.withPrivateKeyring { keyring in
            try Self.runChild("signOutWhileLocked", busAddress: keyring.address) { step in
                if step == 1 {
                    try keyring.lockDefaultCollectionBlocking()
                } else {
                    guard try keyring.holdsItemBlocking(key) else {
                        throw FixtureError(description: "the item is gone from the locked keyring")
                    }
                    // Unlock for real: a new daemon opens the login keyring with its password.
                    try keyring.killKeyringBlocking()
                    try keyring.startKeyringBlocking()
                }
            }
        }
        #expect(reports == [
            "written", "waiting", "sign-out locked", "waiting", "read found", "sign-out ok", "read absent", "alive",
        ])
    }

    private static func withPrivateKeyring(_ body: @escaping @Sendable (PrivateKeyring) throws -> [String])
        async throws -> [String]
    {
        let keyring = try await PrivateKeyring.start()
        let reports: [String]
        do {
            reports = try await offPool("the keyring child scenario to end", timeout: TestDeadline.child) { try body(keyring) }
        } catch {
            await keyring.stop()
            throw error
        }
        await keyring.stop()
        return reports
    }

    /// Runs the child scenario `test`, collecting its reports; each time the child reports "waiting", runs `act`
    /// with the step number (1, 2, …) and then tells the child to go on.
    private static func runChild(_ test: String, busAddress: String, act: (Int) throws -> Void) throws -> [String] {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["--testing-library", "swift-testing", "--filter", "KeyringChildScenario/\(test)"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        environment[KeyringChildScenario.variable] = "1"
        child.environment = environment
        let input = Pipe(), output = Pipe()
        child.standardInput = input
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        defer { child.waitUntilExit() }
        let reader = LineReader(fd: output.fileHandleForReading.fileDescriptor)
        var reports: [String] = []
        var steps = 0
        do {
            while let line = reader.next() {
                guard line.hasPrefix(KeyringChildScenario.prefix) else { continue }
                let report = String(line.dropFirst(KeyringChildScenario.prefix.count))
                reports.append(report)
                guard report == "waiting" else { continue }
                steps += 1
                try act(steps)
                input.fileHandleForWriting.write(Data("go\n".utf8))
            }
        } catch {
            kill(child.processIdentifier, SIGKILL)
            throw error
        }
        return reports
    }
}

/// Reads lines from a descriptor, one byte at a time (no read-ahead past a line).
final class LineReader {
    private let fd: Int32
    init(fd: Int32) { self.fd = fd }

    func next() -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(fd, &byte, 1)
            if count <= 0 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }
}

/// The child half of ``KeyringMidRunTests``: runs only when started by it.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["SHOPKIT_KEYRING_MID_RUN_CHILD"] != nil,
    "runs only as the child process of KeyringMidRunTests"), .timeLimit(.minutes(3)))
struct KeyringChildScenario {
    static let variable = "SHOPKIT_KEYRING_MID_RUN_CHILD"
    static let prefix = "SHOPKIT-CHILD: "

    static func report(_ line: String) {
        FileHandle.standardOutput.write(Data((prefix + line + "\n").utf8))
    }

    /// Reports "waiting" and blocks (off the pool) until the parent has acted and says go.
    static func waitForGo() async throws {
        report("waiting")
        _ = try await offPool("the parent's go line on stdin") { LineReader(fd: STDIN_FILENO).next() }
    }

    static func kind(_ error: CredentialError?) -> String {
        guard let error else { return "found" }
        switch error.code {
        case .unavailable: return error.reason?.isEmpty == false ? "unavailable" : "unavailable without a reason"
        case .locked: return "locked"
        default: return "other"
        }
    }

    static func kind(_ probe: KeyringProbe) -> String {
        switch probe {
        case .available: return "available"
        case .unavailable(let why): return why.isEmpty ? "unavailable without a reason" : "unavailable"
        case .failing: return "failing"
        }
    }

    static func readKind(_ store: KeyringStore, _ key: CredentialKey) async -> String {
        kind(await credentialError { () throws(CredentialError) in
            guard try await store.read(key) != nil else { throw .io("absent") }
        })
    }

    static let lockedDeleteService = "locked-sign-out"

    @Test func signOutWhileLocked() async throws {
        let key = CredentialKey(service: Self.lockedDeleteService, account: "a")
        let store = KeyringStore(timeout: .seconds(20))
        let tokens: any TokenStore = VaultTokenStore(vault: CredentialVault(backend: store), key: key)
        try await tokens.saveTokens(AuthTokens(accessToken: "t"))
        Self.report("written")
        try await Self.waitForGo()  // the parent locks the keyring
        do {
            try await tokens.clearTokens()
            Self.report("sign-out ok")
        } catch let error as CredentialError {
            Self.report("sign-out " + Self.kind(error))
        }
        try await Self.waitForGo()  // the parent checks the item is there and unlocks the keyring
        Self.report("read " + (await Self.readKind(store, key)))
        try await tokens.clearTokens()
        Self.report("sign-out ok")
        Self.report(try await tokens.loadTokens() == nil ? "read absent" : "read found")
        Self.report("alive")
    }

    @Test func readAcrossABusDeath() async throws {
        let store = KeyringStore(timeout: .seconds(20))
        let key = CredentialKey(service: "mid-run", account: "a")
        try await store.write(StoredCredential(tokens: .init(accessToken: "t"), policy: .afterFirstUnlock), for: key)
        Self.report("read " + (await Self.readKind(store, key)))
        try await Self.waitForGo()  // the parent kills the bus
        Self.report("read " + (await Self.readKind(store, key)))
        Self.report("probe " + Self.kind(await store.probe()))
        Self.report("alive")
    }

    @Test func readAcrossADaemonRestart() async throws {
        let store = KeyringStore(timeout: .seconds(20))
        let key = CredentialKey(service: "mid-run-daemon", account: "a")
        try await store.write(StoredCredential(tokens: .init(accessToken: "t"), policy: .afterFirstUnlock), for: key)
        Self.report("read " + (await Self.readKind(store, key)))
        try await Self.waitForGo()  // the parent kills the keyring daemon; the bus stays
        Self.report("read " + (await Self.readKind(store, key)))
        Self.report("probe " + Self.kind(await store.probe()))
        try await Self.waitForGo()  // the parent starts a new daemon on the same keyring files
        Self.report("read " + (await Self.readKind(store, key)))
        Self.report("probe " + Self.kind(await store.probe()))
        Self.report("alive")
    }
}
