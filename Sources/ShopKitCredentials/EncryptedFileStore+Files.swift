import Foundation

/// The POSIX side of the file store: reading, the advisory lock, and the atomic replace (the checks are in
/// `EncryptedFileStore+Checks.swift`).
///
/// Everything here blocks; it runs only on the store's serial dispatch queue, never on the cooperative pool.
package enum TokenFileIO {
    /// Creates `directory` (and missing parents) with mode 0700, then checks it.
    ///
    /// Each directory it creates is made durable: `syncParent` (an `fsync` of the parent directory; injectable for
    /// tests) runs after its `mkdir`, so a crash cannot lose the new directory and with it the file renamed into it.
    package static func ensureDirectory(
        _ directory: String,
        syncParent: (String) throws(CredentialError) -> Void = { (path) throws(CredentialError) in
            try syncDirectory(path)
        }
    ) throws(CredentialError) {
        var missing: [String] = []
        var current = directory
        while !current.isEmpty, current != "/", !exists(current) {
            missing.append(current)
            current = (current as NSString).deletingLastPathComponent
        }
        for path in missing.reversed() {
            if mkdir(path, 0o700) != 0 {
                guard errno == EEXIST else {
                    throw .io("cannot create directory \(path): \(errorText()); create it with mode 0700")
                }
                continue  // another process created it (and syncs its parent)
            }
            try syncParent((path as NSString).deletingLastPathComponent)
        }
        _ = try checkDirectory(directory)
    }

    /// Reads the store file, or `nil` when there is none. Refuses symlinks, special files (a FIFO must not hang
    /// the store), hard-linked files, other owners and modes beyond 0600.
    package static func read(_ path: String) throws(CredentialError) -> [UInt8]? {
        try readWithStatus(path)?.bytes
    }

    /// ``read(_:)``, with the `fstat` of the very file read (taken before its first byte is read), so a caller
    /// that watches the file for changes compares against what it read, never against a file swapped in since.
    package static func readWithStatus(_ path: String) throws(CredentialError) -> (bytes: [UInt8], status: stat)? {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before the type check runs.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP {
                throw .unsafeFile("\(path) is a symbolic link; the token file must be a regular file (replace the link "
                    + "with the file, or configure the file's own path)")
            }
            throw .io("cannot open \(path): \(errorText())")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io("cannot stat \(path): \(errorText())") }
        try checkStoreFile(path, info)
        try clearNonBlocking(fd, path)
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
        return (bytes, info)
    }

    /// Runs `body` holding an exclusive `flock` on `lockPath` (created 0600 beside the store).
    ///
    /// `flock` locks belong to the open file description, so two stores in one process exclude each other too;
    /// the kernel releases the lock when a holder dies, so a killed writer never wedges the store.
    package static func withExclusiveLock<T>(_ lockPath: String, _ body: () throws(CredentialError) -> T)
        throws(CredentialError) -> T
    {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { throw .io("cannot open lock file \(lockPath): \(errorText())") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io("cannot stat \(lockPath): \(errorText())") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .unsafeFile("the lock file \(lockPath) is \(fileKind(info.st_mode)), not a regular file; remove it")
        }
        try clearNonBlocking(fd, lockPath)
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .io("cannot lock \(lockPath): \(errorText())") }
        }
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }

    /// Replaces `path` atomically: write a 0600 temp file in the same directory, fsync it, rename it over `path`,
    /// fsync the directory. A crash at any point leaves either the old or the new file (plus maybe a stale temp
    /// file, removed by the next write).
    package static func atomicReplace(_ path: String, with bytes: [UInt8]) throws(CredentialError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temp = path + tempMarker + String((0..<tempSuffixLength).map { _ in tempAlphabet.randomElement()! })
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
    ///
    /// Only names the writer makes (the store's name, `.tmp-`, then exactly ``tempSuffixLength`` characters of
    /// ``tempAlphabet``, compared byte for byte) and only regular files: never another store whose name merely
    /// starts the same way (`tokens.skt.tmp-backup`), its lock, a symlink or a directory.
    static func removeStaleTempFiles(for path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + tempMarker
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where isTempName(name, prefix: prefix) {
            let candidate = (directory as NSString).appendingPathComponent(name)
            var info = stat()
            guard lstat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            unlink(candidate)
        }
    }

    /// Whether `name` is `prefix` followed by a temp suffix the writer could have made.
    static func isTempName(_ name: String, prefix: String) -> Bool {
        let name = Array(name.utf8), prefix = Array(prefix.utf8)
        guard name.count == prefix.count + tempSuffixLength, name.starts(with: prefix) else { return false }
        return name[prefix.count...].allSatisfy { tempAlphabetBytes.contains($0) }
    }

    /// Deletes the store file (and syncs the directory); a missing file is fine.
    static func remove(_ path: String) throws(CredentialError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw .io("cannot delete \(path): \(errorText())") }
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    static let tempMarker = ".tmp-"
    /// Temp names end in this many random characters from ``tempAlphabet``.
    static let tempSuffixLength = 16
    static let tempAlphabet = Array("0123456789abcdef")
    private static let tempAlphabetBytes = Set("0123456789abcdef".utf8)

    static func syncDirectory(_ directory: String) throws(CredentialError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open directory \(directory): \(errorText())") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .io("cannot fsync directory \(directory): \(errorText())") }
    }

    static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }
}
