import Foundation

/// The POSIX side of the file store: permission checks, the advisory lock, and the atomic replace.
///
/// Everything here blocks; it runs only on the store's serial dispatch queue, never on the cooperative pool.
enum TokenFileIO {
    /// Creates `directory` (and missing parents) with mode 0700, then checks it.
    static func ensureDirectory(_ directory: String) throws(CredentialError) {
        var missing: [String] = []
        var current = directory
        while !current.isEmpty, current != "/", !exists(current) {
            missing.append(current)
            current = (current as NSString).deletingLastPathComponent
        }
        for path in missing.reversed() where mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .io("cannot create directory \(path): \(errorText()); create it with mode 0700")
        }
        _ = try checkDirectory(directory)
    }

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
        guard info.st_uid == geteuid() else {
            throw .insecurePermissions("directory \(directory) belongs to another user; run: chown \(geteuid()) \(directory)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .insecurePermissions(
                "directory \(directory) is accessible by group or others; run: chmod 700 \(directory)")
        }
        return true
    }

    /// Reads the store file, or `nil` when there is none. Refuses symlinks, other owners and modes beyond 0600.
    static func read(_ path: String) throws(CredentialError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw .io("\(path) is a symbolic link; the token file must be a regular file") }
            throw .io("cannot open \(path): \(errorText())")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io("cannot stat \(path): \(errorText())") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .io("\(path) is not a regular file") }
        guard info.st_uid == geteuid() else {
            throw .insecurePermissions("\(path) belongs to another user; run: chown \(geteuid()) \(path)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .insecurePermissions("\(path) is readable or writable by group or others; run: chmod 600 \(path)")
        }
        guard Int(info.st_size) <= TokenFile.maximumSize else { throw .corrupt("file is larger than 16 MiB") }
        var bytes = [UInt8]()
        bytes.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io("cannot read \(path): \(errorText())")
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            guard bytes.count <= TokenFile.maximumSize else { throw .corrupt("file is larger than 16 MiB") }
        }
        return bytes
    }

    /// Runs `body` holding an exclusive `flock` on `lockPath` (created 0600 beside the store).
    ///
    /// `flock` locks belong to the open file description, so two stores in one process exclude each other too;
    /// the kernel releases the lock when a holder dies, so a killed writer never wedges the store.
    static func withExclusiveLock<T>(_ lockPath: String, _ body: () throws(CredentialError) -> T)
        throws(CredentialError) -> T
    {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .io("cannot open lock file \(lockPath): \(errorText())") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .io("cannot lock \(lockPath): \(errorText())") }
        }
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }

    /// Replaces `path` atomically: write a 0600 temp file in the same directory, fsync it, rename it over `path`,
    /// fsync the directory. A crash at any point leaves either the old or the new file (plus maybe a stale temp
    /// file, removed by the next write).
    static func atomicReplace(_ path: String, with bytes: [UInt8]) throws(CredentialError) {
        let directory = (path as NSString).deletingLastPathComponent
        let suffix = (0..<8).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        let temp = path + tempMarker + "\(getpid())-\(suffix)"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .io("cannot create \(temp): \(errorText())") }
        var renamed = false
        defer { if !renamed { unlink(temp) } }
        do {
            defer { close(fd) }
            guard fchmod(fd, 0o600) == 0 else { throw CredentialError.io("cannot chmod \(temp): \(errorText())") }
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { buffer in
                    write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw CredentialError.io("cannot write \(temp): \(errorText())")
                }
                offset += written
            }
            guard fsync(fd) == 0 else { throw CredentialError.io("cannot fsync \(temp): \(errorText())") }
        } catch let error as CredentialError {
            throw error
        } catch {
            throw .io("\(error)")
        }
        guard rename(temp, path) == 0 else { throw .io("cannot rename \(temp) to \(path): \(errorText())") }
        renamed = true
        try syncDirectory(directory)
    }

    /// Removes temp files left by writers that died mid-write. Call only while holding the lock.
    static func removeStaleTempFiles(for path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + tempMarker
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasPrefix(prefix) {
            unlink((directory as NSString).appendingPathComponent(name))
        }
    }

    /// Deletes the store file (and syncs the directory); a missing file is fine.
    static func remove(_ path: String) throws(CredentialError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw .io("cannot delete \(path): \(errorText())") }
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    static let tempMarker = ".tmp-"

    private static func syncDirectory(_ directory: String) throws(CredentialError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open directory \(directory): \(errorText())") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .io("cannot fsync directory \(directory): \(errorText())") }
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }
}
