import Foundation

/// What the file store accepts on disk, and the advice its refusals give.
///
/// The advice never tells anyone to change something that is not theirs alone: a shared directory (`/`, a sticky
/// or world-writable one such as `/tmp`, or one owned by another user) is never to be `chmod`ed, and a file owned
/// by another user is never to be `chown`ed (as root that would take the file from its owner). The fix offered
/// for those is a private subdirectory or a path of the user's own.
extension TokenFileIO {
    /// Whether `directory` exists; throws when it is not a directory we own with mode 0700 or stricter.
    static func checkDirectory(_ directory: String) throws(CredentialError) -> Bool {
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            if errno == ENOENT { return false }
            throw .io("cannot stat \(directory): \(errorText())")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw .io("\(directory) is not a directory; remove it or configure another store path")
        }
        if let problem = directoryProblem(directory, mode: info.st_mode, owner: info.st_uid, user: geteuid()) {
            throw .insecurePermissions(problem)
        }
        return true
    }

    /// Why a directory with this mode and owner cannot hold the store, with advice that is safe to follow; `nil`
    /// when it is private to `user`.
    ///
    /// The example path offered instead: in a sticky directory such as `/tmp`, a subdirectory of the user's own
    /// (`shopkit-<uid>`, which no one else can rename or remove there); anywhere else (`/`, a world-writable
    /// directory without the sticky bit, another user's directory) `fallback`, the default store location,
    /// unless that is the very directory refused.
    static func directoryProblem(
        _ directory: String, mode: mode_t, owner: uid_t, user: uid_t,
        fallback: String = EncryptedFileStore.defaultURL().path
    ) -> String? {
        let open = mode & 0o077 != 0
        guard owner != user || open else { return nil }
        var shared: String?
        if directory == "/" {
            shared = "the root directory"
        } else if mode & S_ISVTX != 0 {
            shared = "a shared directory (sticky bit set)"
        } else if mode & 0o002 != 0 {
            shared = "writable by everyone"
        } else if owner != user {
            shared = "owned by another user (uid \(owner))"
        }
        guard let shared else {
            return "directory \(directory) is accessible by group or others; run: chmod 700 \(directory)"
        }
        let example: String?
        if directory != "/" && mode & S_ISVTX != 0 {
            example = "\(directory)/shopkit-\(user)/tokens.skt"
        } else {
            example = (fallback as NSString).deletingLastPathComponent == directory ? nil : fallback
        }
        return "directory \(directory) is \(shared) and must not hold the token file; do not change its "
            + "permissions: keep the store in a private directory of your own instead"
            + (example.map { ", e.g. configure the path \($0)" } ?? "")
            + " (a missing directory is created with mode 0700)"
    }

    /// Checks the opened store file: a regular file with one name, ours, mode 0600 or stricter.
    static func checkStoreFile(_ path: String, _ info: stat) throws(CredentialError) {
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .unsafeFile("\(path) is \(fileKind(info.st_mode)), not a regular file; remove it or configure "
                + "another store path")
        }
        // A second name is a second lock file (`<name>.lock`) and a rename that splits the two names apart:
        // writers through different names would not exclude each other, and updates would be lost.
        guard info.st_nlink == 1 else {
            throw .unsafeFile("\(path) has \(info.st_nlink) names (hard links); remove the other names (find them "
                + "with: find / -xdev -samefile \(path)) so the store has exactly one")
        }
        guard info.st_uid == geteuid() else {
            throw .insecurePermissions("\(path) belongs to another user (uid \(info.st_uid)); do not take it over: "
                + "configure a store path of your own, or use the account that owns it")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .insecurePermissions("\(path) is readable or writable by group or others; run: chmod 600 \(path)")
        }
    }

    /// Turns `O_NONBLOCK` (used only to open safely) back off for the reads and locks that follow.
    static func clearNonBlocking(_ fd: Int32, _ path: String) throws(CredentialError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
            throw .io("cannot configure \(path): \(errorText())")
        }
    }

    /// "a FIFO (named pipe)", "a directory", … for messages.
    static func fileKind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "a FIFO (named pipe)"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        default: return "a special file"
        }
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
