import Foundation
import ShopKitAPI
import Testing
@testable import ShopKitCredentials

/// What the file store finds on disk that it must refuse or leave alone (issue 16, items 3, 8, 13).
@Suite(.timeLimit(.minutes(3))) struct FileStoreSafetyTests {
    /// A FIFO at the store path is refused with `.unsafeFile` by get, set and delete, at once. Opening a FIFO for
    /// reading without `O_NONBLOCK` waits for a writer, forever (and `set` would wait holding the lock); if that
    /// comes back, the bounded wait below opens the FIFO's write end so the test ends instead of hanging.
    @Test(arguments: ["get", "set", "delete"])
    func fifoAtTheStorePathIsRefusedWithoutHanging(operation: String) async throws {
        try await withTempDirectory { dir in
            let url = dir.storeURL
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try #require(mkfifo(url.path, 0o600) == 0)
            let store = makeStore(url)
            let outcome = await finishesWithoutHanging(fifo: url.path) { () async -> CredentialError? in
                await caughtError { () async throws(CredentialError) in
                    switch operation {
                    case "get": _ = try await store.read(aliceKey)
                    case "set":
                        try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
                    default: try await store.delete(aliceKey)
                    }
                }
            }
            #expect(!outcome.hung, "\(operation) blocked opening the FIFO")
            guard let why = failureReason(of: outcome.error, ifIs: .unsafeFile) else {
                Issue.record("\(operation): expected unsafeFile, got \(String(describing: outcome.error))")
                return
            }
            #expect(why.contains("FIFO") && why.contains("not a regular file"), "\(why)")
            // The store is usable again once the FIFO is gone (a hung `set` would still hold the lock).
            unlink(url.path)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            #expect(try await store.read(aliceKey)?.tokens == aliceTokens)
        }
    }

    /// A special file at the lock path is refused too, before the store locks it.
    @Test func fifoAtTheLockPathIsRefused() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let lock = dir.storeURL.path + ".lock"
            unlink(lock)
            try #require(mkfifo(lock, 0o600) == 0)
            let outcome = await finishesWithoutHanging(fifo: lock) { () async -> CredentialError? in
                await caughtError { () async throws(CredentialError) in
                    try await store.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: bobKey)
                }
            }
            #expect(!outcome.hung)
            guard let why = failureReason(of: outcome.error, ifIs: .unsafeFile) else {
                Issue.record("expected unsafeFile, got \(String(describing: outcome.error))")
                return
            }
            #expect(why.contains("lock file") && why.contains("FIFO"), "\(why)")
            #expect(try await store.read(bobKey) == nil)
        }
    }

    /// A store file with a second name is refused: the other name has its own lock file, so writers through the
    /// two names would not exclude each other and updates would be lost.
    @Test func hardLinkedStoreFileIsRefused() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let second = dir.storeURL.deletingLastPathComponent().appendingPathComponent("second.skt")
            try #require(link(dir.storeURL.path, second.path) == 0)
            let before = try fileBytes(dir.storeURL)
            for name in [dir.storeURL, second] {
                let other = makeStore(name)
                guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in
                    try await other.read(aliceKey)
                }), ifIs: .unsafeFile) else { Issue.record("a hard-linked file must be refused"); continue }
                #expect(why.contains("2 names (hard links)"), "\(why)")
                guard failureCode(of: await caughtError({ () async throws(CredentialError) in
                    try await other.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: bobKey)
                })) == .unsafeFile else { Issue.record("a write through a hard link must be refused"); continue }
            }
            #expect(try fileBytes(dir.storeURL) == before)
            unlink(second.path)
            #expect(try await store.read(aliceKey)?.tokens == aliceTokens)
        }
    }

    /// Every directory the store creates is made durable by an fsync of its parent, right after its mkdir;
    /// directories that already exist are left alone.
    @Test func createdDirectoriesAreSyncedInTheirParents() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let base = dir.url.path
        var synced: [String] = []
        try TokenFileIO.ensureDirectory("\(base)/a/b/c") { path in synced.append(path) }
        #expect(synced == [base, "\(base)/a", "\(base)/a/b"])
        synced = []
        try TokenFileIO.ensureDirectory("\(base)/a/b/d") { path in synced.append(path) }
        #expect(synced == ["\(base)/a/b"])
        // The default is the real fsync of each parent.
        try TokenFileIO.ensureDirectory("\(base)/x/y")
        #expect(mode("\(base)/x/y") == 0o700)
    }

    /// Stale-temp cleanup removes only what the writer makes: `<store>.tmp-` plus 16 characters of its alphabet,
    /// regular files only. Another store whose name starts the same way, its lock, and a symlink or directory with
    /// a matching name all survive.
    @Test func staleTempCleanupRemovesOnlyTheWritersOwnTempFiles() async throws {
        try await withTempDirectory { dir in
            let folder = dir.url.appendingPathComponent("private")
            let url = folder.appendingPathComponent("t.skt")
            let store = makeStore(url)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)

            // Another store named t.skt.tmp-backup, with its lock file.
            let backup = makeStore(folder.appendingPathComponent("t.skt.tmp-backup"))
            try await backup.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: bobKey)
            let outside = dir.url.appendingPathComponent("outside.txt")
            try writeBytes([1, 2, 3], to: outside)
            let stale = folder.appendingPathComponent("t.skt.tmp-0123456789abcdef")
            try writeBytes([9], to: stale)
            try FileManager.default.createSymbolicLink(
                at: folder.appendingPathComponent("t.skt.tmp-aaaaaaaaaaaaaaaa"), withDestinationURL: outside)
            try FileManager.default.createDirectory(
                at: folder.appendingPathComponent("t.skt.tmp-bbbbbbbbbbbbbbbb"), withIntermediateDirectories: false)
            for name in ["t.skt.tmp-0123456789ABCDEF", "t.skt.tmp-0123456789abcdef0", "t.skt.tmp-0123456789abcde",
                         "t.skt.tmp-123-0123456789abcdef"] {
                try writeBytes([7], to: folder.appendingPathComponent(name))
            }

            try await store.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: bobKey)
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            #expect(names == [
                "t.skt", "t.skt.lock", "t.skt.tmp-0123456789ABCDEF", "t.skt.tmp-0123456789abcde",
                "t.skt.tmp-0123456789abcdef0", "t.skt.tmp-123-0123456789abcdef", "t.skt.tmp-aaaaaaaaaaaaaaaa",
                "t.skt.tmp-backup", "t.skt.tmp-backup.lock", "t.skt.tmp-bbbbbbbbbbbbbbbb",
            ])
            #expect(try await makeStore(folder.appendingPathComponent("t.skt.tmp-backup")).read(bobKey)?.tokens == bobTokens)
            #expect(try fileBytes(outside) == [1, 2, 3])
        }
    }

    @Test func tempNamesMatchOnlyTheWritersPattern() {
        let prefix = "tokens.skt.tmp-"
        #expect(TokenFileIO.isTempName(prefix + "0123456789abcdef", prefix: prefix))
        #expect(!TokenFileIO.isTempName(prefix + "backup", prefix: prefix))
        #expect(!TokenFileIO.isTempName(prefix + "backup.lock", prefix: prefix))
        #expect(!TokenFileIO.isTempName(prefix + "0123456789abcdeg", prefix: prefix))
        #expect(!TokenFileIO.isTempName("other.skt.tmp-0123456789abcdef", prefix: prefix))
        // Byte-wise: a canonically equivalent spelling of the store's name is another store's temp file.
        #expect(!TokenFileIO.isTempName("caf\u{E9}.tmp-0123456789abcdef", prefix: "cafe\u{301}.tmp-"))
    }
}

/// The outcome of ``finishesWithoutHanging(fifo:within:_:)``.
struct BoundedOutcome: Sendable {
    var error: CredentialError?
    var hung: Bool
}

/// Runs `body`, waiting for it at most `limit`. If it has not finished by then (blocked opening the FIFO at
/// `path` for reading), opens the FIFO's write end once and closes it, which lets the reader's open return and
/// the operation end; `hung` is then true. The wait is for the operation's completion, the limit only a bound.
func finishesWithoutHanging(
    fifo path: String, within limit: Duration = .seconds(30),
    _ body: @escaping @Sendable () async -> CredentialError?
) async -> BoundedOutcome {
    enum Event: Sendable {
        case finished(CredentialError?)
        case limitReached
    }
    return await withTaskGroup(of: Event.self) { group in
        group.addTask { .finished(await body()) }
        group.addTask {
            try? await Task.sleep(for: limit)
            return .limitReached
        }
        var hung = false
        while let event = await group.next() {
            switch event {
            case .finished(let error):
                group.cancelAll()
                return BoundedOutcome(error: error, hung: hung)
            case .limitReached:
                hung = true
                let fd = open(path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 { close(fd) }
            }
        }
        return BoundedOutcome(error: nil, hung: true)
    }
}
