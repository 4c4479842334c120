import Foundation

/// The file that records that a keyring held the tokens of a token-file location, so `.auto` never falls back to
/// that file when the keyring stops answering (``BackendSelection``). Blocking: call through `TerminalIO.offPool`.
enum KeyringMarker {
    /// What the marker says to whoever finds it.
    static let text = """
        ShopKit keeps the tokens for this location in the Secret Service keyring. While this file exists, the
        `auto` backend reports the keyring as unavailable instead of falling back to the token file beside it.
        Delete this file only if you stopped using the keyring for good.

        """

    /// Whether the marker exists (a dangling symlink counts: it was put there on purpose).
    static func exists(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0
    }

    /// Creates the marker (0600, in a 0700 directory created if missing) unless it exists.
    static func record(_ url: URL) throws(CredentialError) {
        guard !exists(url) else { return }
        try TokenFileIO.ensureDirectory(url.deletingLastPathComponent().path)
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
    }
}

extension BackendSelection {
    /// The keyring marker for the token file at `fileURL` when it exists (a keyring was used for these tokens),
    /// for ``decide(_:probe:unlockPromptAllowed:keyringMarker:)``; checked off the cooperative pool.
    public static func existingKeyringMarker(for fileURL: URL) async -> URL? {
        let marker = keyringMarkerURL(for: fileURL)
        let found = try? await TerminalIO.offPool { () throws(CredentialError) in KeyringMarker.exists(marker) }
        return found == true ? marker : nil
    }
}
