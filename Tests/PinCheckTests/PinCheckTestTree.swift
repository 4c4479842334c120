import Foundation
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A temporary folder outside the checkout, to run a copy of a built binary away from its source tree.
struct TemporaryTree {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pin-check-tree-\(UUID())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    /// Puts the executable into `folder` (below the root) and returns its path there.
    func copyBinary(_ binary: BuiltBinary, into folder: String = ".") throws -> URL {
        let directory = root.appendingPathComponent(folder, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let copy = directory.appendingPathComponent(binary.url.lastPathComponent).standardizedFileURL
        // A hard link where the file system allows it: a copy is a file open for writing, and a child process
        // that another test forks meanwhile inherits that descriptor until it execs, so executing the copy can
        // fail with "Text file busy". A link is never open for writing; the binary still runs from this folder
        // (/proc/self/exe names the link it was started through).
        do {
            try FileManager.default.linkItem(at: binary.url, to: copy)
        } catch {
            try FileManager.default.copyItem(at: binary.url, to: copy)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
        }
        return copy
    }

    /// Copies the checkout's `TestCerts/` to `ROOT/TestCerts` and returns it.
    func copyTestCerts() throws -> URL {
        let copy = root.appendingPathComponent("TestCerts", isDirectory: true)
        try FileManager.default.copyItem(at: TestCertificates.directory, to: copy)
        return copy
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

/// Whether this machine has an IPv6 loopback (`::1` can be bound).
enum LoopbackIPv6 {
    static let isAvailable: Bool = {
        let descriptor = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        guard inet_pton(AF_INET6, "::1", &address.sin6_addr) == 1 else { return false }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }()
}
