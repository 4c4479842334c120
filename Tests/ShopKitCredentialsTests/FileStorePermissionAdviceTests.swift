import Foundation
import ShopKitAPI
import Testing
@testable import ShopKitCredentials

/// Permission refusals give advice that is safe to follow (issue 16, item 9): never change a shared directory
/// (`/`, sticky, world-writable, another user's), never take over another user's file.
@Suite(.timeLimit(.minutes(3))) struct FileStorePermissionAdviceTests {
    /// `(directory, mode, owner, user)`; none of these may be told to chmod or chown.
    @Test(arguments: [
        ("/tmp", mode_t(0o41777), uid_t(0), uid_t(1000)),  // /tmp, as a user
        ("/tmp", 0o41777, 0, 0),  // /tmp, as root (owner matches, but it is shared)
        ("/", 0o40755, 0, 0),  // the root directory, as root
        ("/srv/drop", 0o40777, 1000, 1000),  // world-writable, even if ours
        ("/srv/box", 0o41770, 1000, 1000),  // sticky
        ("/home/other/.local/share/shopkit", 0o40700, 1001, 1000),  // another user's, private to them
        ("/home/other", 0o40755, 1001, 0),  // another user's, as root
    ])
    func sharedDirectoriesAreNeverToBeChanged(directory: String, mode: mode_t, owner: uid_t, user: uid_t) throws {
        let fallback = "/home/u/.local/share/shopkit/tokens.skt"
        let problem = try #require(
            TokenFileIO.directoryProblem(directory, mode: mode, owner: owner, user: user, fallback: fallback))
        #expect(!problem.contains("chmod") && !problem.contains("chown"), "\(problem)")
        #expect(problem.contains("private directory of your own"), "\(problem)")
        // A subdirectory only where no one else can rename it away (sticky); else the default location.
        let suggested = directory != "/" && mode & S_ISVTX != 0 ? "\(directory)/shopkit-\(user)/tokens.skt" : fallback
        #expect(problem.contains("e.g. configure the path \(suggested) "), "\(problem)")
    }

    /// When the refused directory is the default location's own, the default location is not offered (it would
    /// be the same directory); another place is (issue 26, item 1; no example at all was offered before).
    /// Issue 39, item 6: the other place is the user's own home from the password database, never `/var/tmp`
    /// (anyone can create `/var/tmp/shopkit-<uid>` first, and tmp cleaners empty it).
    @Test func theRefusedDefaultDirectoryIsNotOfferedAsTheFix() throws {
        let problem = try #require(TokenFileIO.directoryProblem(
            "/home/u/.local/share/shopkit", mode: 0o40700, owner: 0, user: 1000,
            fallback: "/home/u/.local/share/shopkit/tokens.skt", accountHome: { _ in "/srv/u-home" }))
        #expect(!problem.contains("/home/u/.local/share/shopkit/tokens.skt") && !problem.contains("chown"), "\(problem)")
        #expect(problem.contains("e.g. configure the path /srv/u-home/.local/share/shopkit/tokens.skt "), "\(problem)")
        #expect(!problem.contains("/var/tmp"), "\(problem)")
    }

    /// Issue 39, item 6: root running with another user's `HOME` is offered root's own home (the password
    /// database's), never `/var/tmp/shopkit-0`.
    @Test func rootWithAnotherUsersHomeIsOfferedItsOwnHome() throws {
        let problem = try #require(TokenFileIO.directoryProblem(
            "/home/alice/.local/share/shopkit", mode: 0o40700, owner: 1000, user: 0, home: "/home/alice",
            dataHome: "/home/alice/.local/share", fallback: "/home/alice/.local/share/shopkit/tokens.skt",
            accountHome: { $0 == 0 ? "/root" : nil }))
        #expect(problem.contains("e.g. configure the path /root/.local/share/shopkit/tokens.skt "), "\(problem)")
        #expect(!problem.contains("/var/tmp") && !problem.contains("chmod") && !problem.contains("chown"), "\(problem)")
        #expect(problem.contains("owned by another user (uid 1000)"), "\(problem)")
    }

    /// Without a home of its own outside the refused directory, no path is offered, and `/tmp` is warned off.
    @Test func noSafePlaceMeansNoExamplePath() throws {
        let problem = try #require(TokenFileIO.directoryProblem(
            "/home/u", mode: 0o40755, owner: 0, user: 1000, home: "/home/u", dataHome: "/home/u/.local/share",
            fallback: "/home/u/.local/share/shopkit/tokens.skt", accountHome: { _ in "/home/u" }))
        #expect(!problem.contains("e.g. configure the path"), "\(problem)")
        #expect(problem.contains("not in /tmp or /var/tmp"), "\(problem)")
    }

    /// The error opens with what it is about: an ownership problem is not "permissions are too open".
    @Test func theErrorDoesNotCallOwnershipTooOpen() {
        let error = CredentialError.insecurePermissions("directory /x is owned by another user (uid 0) …")
        #expect(!error.description.contains("too open"), "\(error.description)")
        #expect(error.description.hasPrefix("token file location is not private: "), "\(error.description)")
    }

    /// A directory of the user's own that is merely open to group or others keeps its chmod advice; a private
    /// one is fine.
    @Test func ownDirectoryKeepsItsChmodAdvice() {
        #expect(TokenFileIO.directoryProblem("/home/u/s", mode: 0o40755, owner: 1000, user: 1000, home: "/home/u")
            == "directory /home/u/s is accessible by group or others; run: chmod 700 /home/u/s")
        // ShopKit's own directory, wherever it is.
        #expect(TokenFileIO.directoryProblem("/srv/shopkit", mode: 0o40755, owner: 1000, user: 1000, home: "/home/u")
            == "directory /srv/shopkit is accessible by group or others; run: chmod 700 /srv/shopkit")
        #expect(TokenFileIO.directoryProblem("/home/u/s", mode: 0o40700, owner: 1000, user: 1000) == nil)
        #expect(TokenFileIO.directoryProblem("/tmp/mine", mode: 0o41700, owner: 1000, user: 1000) == nil)
    }

    /// Root is never told to `chmod` a system directory it happens to own (issue 26, item 1): a directory outside
    /// the user's home and data directories is not ShopKit's to change. A private subdirectory is offered instead.
    @Test(arguments: ["/etc", "/var/lib", "/usr/local", "/srv/app"])
    func aDirectoryOutsideHomeIsNeverToBeChanged(directory: String) throws {
        let problem = try #require(TokenFileIO.directoryProblem(
            directory, mode: 0o40755, owner: 0, user: 0, home: "/root", dataHome: "/root/.local/share",
            fallback: "/root/.local/share/shopkit/tokens.skt"))
        #expect(!problem.contains("chmod") && !problem.contains("chown"), "\(problem)")
        #expect(problem.contains("private subdirectory"), "\(problem)")
        #expect(problem.contains("e.g. configure the path \(directory)/shopkit/tokens.skt "), "\(problem)")
    }

    /// The home and data directories themselves, and those on the way to the data directory, are shared with
    /// other programs and were not made by ShopKit: no `chmod` for them either.
    @Test(arguments: ["/home/u", "/home/u/.local", "/home/u/.local/share"])
    func homeAndDataDirectoriesAreNeverToBeChanged(directory: String) throws {
        let problem = try #require(TokenFileIO.directoryProblem(
            directory, mode: 0o40755, owner: 1000, user: 1000, home: "/home/u", dataHome: "/home/u/.local/share",
            fallback: "/home/u/.local/share/shopkit/tokens.skt"))
        #expect(!problem.contains("chmod"), "\(problem)")
    }

    /// A group-writable directory of one's own outside home: a subdirectory there could be renamed away by the
    /// group, so the default location is offered.
    @Test func aGroupWritableDirectoryGetsTheDefaultLocation() throws {
        let problem = try #require(TokenFileIO.directoryProblem(
            "/srv/team", mode: 0o40775, owner: 1000, user: 1000, home: "/home/u", dataHome: "/home/u/.local/share",
            fallback: "/home/u/.local/share/shopkit/tokens.skt"))
        #expect(!problem.contains("chmod"), "\(problem)")
        #expect(problem.contains("e.g. configure the path /home/u/.local/share/shopkit/tokens.skt "), "\(problem)")
    }

    /// A user whose `HOME` belongs to root: the default location lies inside the refused directory, so another
    /// place is offered: the user's home from the password database (issue 39, item 6: no longer `/var/tmp`).
    @Test func aSuggestionInsideTheRefusedDirectoryIsReplaced() throws {
        let problem = try #require(TokenFileIO.directoryProblem(
            "/home/u", mode: 0o40755, owner: 0, user: 1000, home: "/home/u", dataHome: "/home/u/.local/share",
            fallback: "/home/u/.local/share/shopkit/tokens.skt", accountHome: { _ in "/srv/u-home" }))
        #expect(!problem.contains("/home/u/.local") && !problem.contains("chmod"), "\(problem)")
        #expect(problem.contains("e.g. configure the path /srv/u-home/.local/share/shopkit/tokens.skt "), "\(problem)")
        #expect(!problem.contains("/var/tmp"), "\(problem)")
    }

    /// A real store directly in `/tmp` and directly in `/`: refused before anything is created, with the
    /// subdirectory advice.
    @Test(arguments: ["/tmp", "/"])
    func storeInASharedSystemDirectoryIsToldToUseASubdirectory(directory: String) async throws {
        let name = "shopkit-advice-\(UUID().uuidString).skt"
        let url = URL(fileURLWithPath: directory).appendingPathComponent(name)
        let store = makeStore(url)
        for error in [
            await caughtError { () async throws(CredentialError) in try await store.read(aliceKey) },
            await caughtError { () async throws(CredentialError) in
                try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            },
        ] {
            guard let why = failureReason(of: error, ifIs: .insecurePermissions) else {
                Issue.record("expected insecurePermissions, got \(String(describing: error))")
                continue
            }
            #expect(!why.contains("chmod") && !why.contains("chown"), "\(why)")
            #expect(why.contains("private directory of your own"), "\(why)")
        }
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(!FileManager.default.fileExists(atPath: url.path + ".lock"))
    }

    /// Run as root: a store file (or its directory) owned by another user is refused without telling root to
    /// chown it (which would take it from its owner).
    @Test(.enabled(if: geteuid() == 0, "needs root to give files to another user"))
    func anotherUsersFileIsNeverToBeTakenOver() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let nobody: uid_t = 65534
            try #require(chown(dir.storeURL.path, nobody, gid_t(nobody)) == 0)
            guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in
                try await store.read(aliceKey)
            }), ifIs: .insecurePermissions) else { Issue.record("another user's file must be refused"); return }
            #expect(!why.contains("chown") && why.contains("uid 65534"), "\(why)")

            let directory = dir.storeURL.deletingLastPathComponent().path
            try #require(chown(directory, nobody, gid_t(nobody)) == 0)
            guard let reason = failureReason(of: await caughtError({ () async throws(CredentialError) in
                try await store.read(aliceKey)
            }), ifIs: .insecurePermissions) else { Issue.record("another user's directory must be refused"); return }
            #expect(!reason.contains("chown") && !reason.contains("chmod"), "\(reason)")
            #expect(reason.contains("owned by another user (uid 65534)"), "\(reason)")
        }
    }
}
