import Foundation

/// What the file store accepts on disk, and the advice its refusals give.
///
/// The advice never tells anyone to change something that is not theirs alone: a shared directory (`/`, a sticky
/// or world-writable one such as `/tmp`, or one owned by another user) is never to be `chmod`ed, and a file owned
/// by another user is never to be `chown`ed (as root that would take the file from its owner). The fix offered
/// for those is a private subdirectory or a path of the user's own. Nor is a directory ShopKit cannot call its
/// own, such as `/etc` for root (``directoryProblem(_:mode:owner:user:home:dataHome:fallback:)``).
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
    /// `chmod 700` is advised only for a directory of the user's own that is not shared and that ShopKit may call
    /// its own (``isShopKitsToChange(_:home:dataHome:)``); anything else (`/etc` as root, `/`, `/tmp`, another
    /// user's directory, the home directory itself) is never to be changed. The example path offered instead
    /// (``exampleStorePath(refusing:mode:owner:user:shared:fallback:accountHome:)``) is a private subdirectory
    /// where one is safe, else `fallback`, the default store location, else the default location under the user's
    /// home from the password database (`accountHome`, for root running with another user's `HOME`): never a path
    /// inside the directory just refused, unless it is such a subdirectory, and never `/var/tmp`, where anyone can
    /// create the directory first and cleaners empty it. With no such place, no path is offered.
    static func directoryProblem(
        _ directory: String, mode: mode_t, owner: uid_t, user: uid_t,
        home: String = homeDirectory(), dataHome: String = dataDirectory(),
        fallback: String = EncryptedFileStore.defaultURL().path,
        accountHome: (uid_t) -> String? = KeyringMarker.passwordDatabaseHome
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
        if shared == nil, isShopKitsToChange(directory, home: home, dataHome: dataHome) {
            return "directory \(directory) is accessible by group or others; run: chmod 700 \(directory)"
        }
        let example = exampleStorePath(
            refusing: directory, mode: mode, owner: owner, user: user, shared: shared != nil, fallback: fallback,
            accountHome: accountHome)
        let instead: String
        if let shared {
            instead = "directory \(directory) is \(shared) and must not hold the token file; do not change its "
                + "permissions: keep the store in a private directory of your own instead"
        } else {
            let place = example.map { $0.hasPrefix(directory + "/") } == true
                ? "a private subdirectory of it" : "a private directory of your own"
            instead = "directory \(directory) is accessible by group or others and is not ShopKit's to change "
                + "(it lies outside your home and data directories, or is one of them); do not change its "
                + "permissions: keep the store in \(place) instead"
        }
        return instead
            + (example.map { ", e.g. configure the path \($0)" }
                ?? ", under a home directory of your own (not in /tmp or /var/tmp, where another user can create the "
                + "directory first and cleaners empty it)")
            + " (a missing directory is created with mode 0700)"
    }

    /// Whether ShopKit may advise `chmod 700` on a directory of the user's own: one named as ShopKit names its
    /// directories (`shopkit`, `shopkit-<uid>`), or one strictly inside the user's home or data directory that
    /// is neither of those nor a directory on the way to the data directory (`~/.local`), which other programs
    /// share. Whether ShopKit made a directory cannot be told from the directory itself; these are the ones it
    /// makes or the user keeps for their own files.
    static func isShopKitsToChange(_ directory: String, home: String, dataHome: String) -> Bool {
        let name = (directory as NSString).lastPathComponent
        if name == "shopkit" || name.hasPrefix("shopkit-") { return true }
        let bases = [home, dataHome].map(withoutTrailingSlash).filter { !$0.isEmpty && $0 != "/" }
        guard bases.contains(where: { directory.hasPrefix($0 + "/") }) else { return false }
        return !bases.contains { $0 == directory || $0.hasPrefix(directory + "/") }
    }

    /// The store path to offer instead of one in the refused `directory`: in a sticky directory (`/tmp`) a
    /// subdirectory of the user's own (`shopkit-<uid>`, which no one else can rename or remove there); in a
    /// directory of the user's own that no one else can write to, a `shopkit` subdirectory; else `fallback`;
    /// else `<home>/.local/share/shopkit/tokens.skt`, `<home>` being the user's entry in the password database
    /// (`accountHome`; not `$HOME`, which may be another user's, as for `sudo` keeping it); else nil. Apart from
    /// those subdirectories, a path inside the refused directory (as the default location is for a user whose home
    /// belongs to root) is never offered.
    static func exampleStorePath(
        refusing directory: String, mode: mode_t, owner: uid_t, user: uid_t, shared: Bool, fallback: String,
        accountHome: (uid_t) -> String? = KeyringMarker.passwordDatabaseHome
    ) -> String? {
        if directory != "/" && mode & S_ISVTX != 0 { return "\(directory)/shopkit-\(user)/tokens.skt" }
        if !shared, owner == user, mode & 0o022 == 0, directory != "/" { return "\(directory)/shopkit/tokens.skt" }
        let inside = { (path: String) -> Bool in
            let parent = (path as NSString).deletingLastPathComponent
            return directory != "/" && (parent == directory || parent.hasPrefix(directory + "/"))
        }
        let own = accountHome(user).flatMap { home in
            home.hasPrefix("/") && home != "/" ? withoutTrailingSlash(home) + "/.local/share/shopkit/tokens.skt" : nil
        }
        return ([fallback] + (own.map { [$0] } ?? [])).first { !inside($0) }
    }

    /// The user's home directory as the default store location finds it (`$HOME`).
    static func homeDirectory(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        withoutTrailingSlash(environment["HOME"] ?? NSHomeDirectory())
    }

    /// The data directory the default store lives in (`$XDG_DATA_HOME`, or `~/.local/share`).
    static func dataDirectory(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        EncryptedFileStore.defaultURL(environment: environment).deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    private static func withoutTrailingSlash(_ path: String) -> String {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
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
