import Foundation

/// The files that record that a keyring held the user's tokens, so `.auto` never falls back to a token file when
/// the keyring stops answering (``BackendSelection``). Blocking: call through `TerminalIO.offPool`.
///
/// There are two, and either one stops the fallback:
/// - the **user's marker** (``userMarkerURL(environment:user:)``), keyed to the user and not to one environment:
///   in the home directory the password database gives for the effective user, so a session, cron, a systemd unit
///   and `sudo -u` all find the same one whatever their `HOME` and `XDG_DATA_HOME`;
/// - the marker **beside the token file** (`<file>.keyring`), which earlier versions wrote alone and which is still
///   written and read, so a marker they left keeps working.
enum KeyringMarker {
    /// The variable that moves the user's marker to another directory (an absolute path). For homes that cannot be
    /// written (containers) and for tests; set it for every process of the user or for none, or those without it
    /// will not see the marker.
    static let directoryVariable = "SHOPKIT_KEYRING_MARKER_DIR"

    /// What the marker says to whoever finds it.
    static let text = """
        ShopKit keeps this user's tokens in the Secret Service keyring. While this file exists, the `auto` backend
        reports the keyring as unavailable instead of falling back to a token file.
        Delete this file (and any tokens.skt.keyring) only if you stopped using the keyring for good.

        """

    /// The user's marker: `keyring-uid-<uid>` in `$SHOPKIT_KEYRING_MARKER_DIR` when that is set to an absolute
    /// path, else in `<home>/.local/share/shopkit`, `<home>` being the user's entry in the password database
    /// (never `$HOME`); `nil` when the user has no such entry or its home is not an absolute path other than `/`.
    static func userMarkerURL(
        environment: [String: String] = ProcessInfo.processInfo.environment, user: uid_t = geteuid()
    ) -> URL? {
        let name = "keyring-uid-\(user)"
        if let directory = environment[directoryVariable], directory.hasPrefix("/") {
            return URL(fileURLWithPath: directory).appendingPathComponent(name)
        }
        guard let home = passwordDatabaseHome(user), home.hasPrefix("/"), home != "/" else { return nil }
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/shopkit").appendingPathComponent(name)
    }

    /// The home directory of `user` in the password database (`getpwuid_r`).
    static func passwordDatabaseHome(_ user: uid_t) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        guard getpwuid_r(user, &entry, &buffer, buffer.count, &found) == 0, found != nil, let home = entry.pw_dir
        else { return nil }
        return String(cString: home)
    }

    /// The first of `markers` that exists (a dangling symlink counts: it was put there on purpose).
    static func existing(_ markers: [URL]) -> URL? {
        markers.first { url in
            var info = stat()
            return lstat(url.path, &info) == 0
        }
    }

    /// Creates the marker unless it exists: 0600, in a 0700 directory created if missing, the file and the
    /// directory holding its name `fsync`ed, so a crash right after the first keyring use cannot lose it.
    static func record(_ url: URL) throws(CredentialError) {
        guard existing([url]) == nil else { return }
        let directory = url.deletingLastPathComponent().path
        try TokenFileIO.ensureDirectory(directory)
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { return }
            throw .io("cannot create \(url.path): \(TokenFileIO.errorText())")
        }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            throw .io("cannot write \(url.path): \(TokenFileIO.errorText())")
        }
        guard fsync(fd) == 0 else { throw .io("cannot fsync \(url.path): \(TokenFileIO.errorText())") }
        try TokenFileIO.syncDirectory(directory)
    }
}

extension BackendSelection {
    /// The user's keyring marker file: in the home directory the password database gives for the
    /// effective user (`~/.local/share/shopkit/keyring-uid-<uid>`), or in `$SHOPKIT_KEYRING_MARKER_DIR`. Package
    /// access: selection finds it by itself; tests and `token-store` name it.
    package static func userKeyringMarkerURL() -> URL? {
        KeyringMarker.userMarkerURL()
    }

    /// The keyring marker that exists for the token file at `fileURL`, the user's or the one beside the file, if
    /// any (a keyring was used for these tokens), for ``decide(_:probe:unlockPromptAllowed:keyringMarker:)``;
    /// checked off the cooperative pool.
    package static func existingKeyringMarker(
        for fileURL: URL, userMarker: URL? = userKeyringMarkerURL()
    ) async -> URL? {
        let markers = [userMarker, keyringMarkerURL(for: fileURL)].compactMap { $0 }
        let found = try? await TerminalIO.offPool { () throws(CredentialError) in KeyringMarker.existing(markers) }
        return found ?? nil
    }
}
