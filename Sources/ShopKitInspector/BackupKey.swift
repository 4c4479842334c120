import Foundation
import ShopKitOpenSSL
import ShopKitPinning

#if canImport(Glibc)
import Glibc
#endif

/// A new key pair for a host, not deployed yet, with a CSR for it: `pin-check backup-key`'s engine.
///
/// The private key goes straight from OpenSSL's secure memory into a new `0600` file and is never printed,
/// logged or kept; what is returned is public: the pin (the SPKI pin every certificate issued for the CSR will
/// carry) and the CSR.
package struct BackupKey: Sendable {
    /// Where the files went and what to pin.
    package struct Result: Sendable, Hashable {
        /// The private key file (PKCS#8 PEM, mode 0600).
        package let keyPath: String
        /// The CSR file (PEM, mode 0644).
        package let csrPath: String
        /// The SPKI pin of the new key.
        package let pin: SPKIPin
        /// e.g. `ECDSA P-256`.
        package let keyDescription: String
    }

    /// The host the CSR names (subject CN and subjectAltName): a DNS name, `*.` wildcard, or IP address.
    package let host: String
    /// The key type.
    package let type: OpenSSLKey.GeneratedType

    /// A backup key for `host`.
    ///
    /// - Throws: ``BackupKeyError/invalidHost(_:)`` unless `host` is a DNS name, a `*.` wildcard or an IP address.
    package init(host: String, type: OpenSSLKey.GeneratedType = .ecdsaP256) throws(BackupKeyError) {
        let pattern: HostPattern
        // The error names the host, escaped where it is not ASCII (a Kelvin sign is not `K`).
        do { pattern = try HostPattern(host) } catch { throw .invalidHost("\(error)") }
        guard pattern.kind != .anyLabels else {
            throw .invalidHost("\(host): a certificate cannot name **. patterns; use *. or a name")
        }
        self.host = pattern.pattern
        self.type = type
    }

    /// The file names in a directory: `HOST.key` and `HOST.csr` (`*` spelled `wildcard`).
    package var baseName: String { host.replacingOccurrences(of: "*", with: "wildcard") }

    /// Generates the key, writes `DIR/HOST.key` (0600) and `DIR/HOST.csr`, and returns the pin.
    ///
    /// `directory` is created (0700) if missing. Neither file is overwritten: both are created with `O_EXCL`
    /// before anything is written, and if either exists nothing is written.
    ///
    /// - Throws: ``BackupKeyError``: `.cannotCreate` for file problems, `.openSSL` when OpenSSL fails.
    package func generate(in directory: String) throws(BackupKeyError) -> Result {
        if !FileManager.default.fileExists(atPath: directory) {
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw .cannotCreate(directory, String(cString: strerror(errno)))
            }
        }
        let keyPath = (directory as NSString).appendingPathComponent(baseName + ".key")
        let csrPath = (directory as NSString).appendingPathComponent(baseName + ".csr")
        let keyFile = try Self.createExclusive(keyPath, mode: 0o600)
        let csrFile: Int32
        do { csrFile = try Self.createExclusive(csrPath, mode: 0o644) } catch {
            close(keyFile)
            unlink(keyPath)
            throw error
        }
        var done = false
        defer {
            close(keyFile)
            close(csrFile)
            if !done {
                unlink(keyPath)
                unlink(csrPath)
            }
        }
        let key: OpenSSLKey
        let request: OpenSSLCertificateRequest
        let pin: SPKIPin
        do {
            key = try OpenSSLKey.generate(type)
            pin = try key.spkiPin
            let san = (try? HostPattern(host))?.kind == .ipAddress ? "IP:\(host)" : "DNS:\(host)"
            request = try OpenSSLCertificateRequest(key: key, commonName: host, subjectAlternativeNames: [san])
        } catch {
            throw .openSSL("\(error)")
        }
        do {
            try key.withPrivateKeyPEM { bytes throws(BackupKeyError) in try Self.writeAll(bytes, to: keyFile, path: keyPath) }
        } catch let error as BackupKeyError {
            throw error
        } catch {
            throw .openSSL("\(error)")
        }
        let written = Array(request.pem.utf8).withUnsafeBytes { bytes in
            Swift.Result { () throws(BackupKeyError) in try Self.writeAll(bytes, to: csrFile, path: csrPath) }
        }
        try written.get()
        guard fsync(keyFile) == 0, fsync(csrFile) == 0 else { throw .cannotCreate(keyPath, String(cString: strerror(errno))) }
        done = true
        return Result(keyPath: keyPath, csrPath: csrPath, pin: pin, keyDescription: type.displayName)
    }

    /// Opens a new file with `O_CREAT|O_EXCL` and exactly `mode` (the umask cannot widen it; `fchmod` sets it).
    private static func createExclusive(_ path: String, mode: mode_t) throws(BackupKeyError) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else {
            let reason =
                errno == EEXIST ? "the file exists; pin-check never overwrites a key or CSR" : String(cString: strerror(errno))
            throw .cannotCreate(path, reason)
        }
        guard fchmod(descriptor, mode) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            unlink(path)
            throw .cannotCreate(path, reason)
        }
        return descriptor
    }

    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, path: String) throws(BackupKeyError) {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw .cannotCreate(path, String(cString: strerror(errno)))
            }
            offset += written
        }
    }
}

/// A backup key that could not be made; the message says what to fix.
package enum BackupKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host cannot be named in a certificate.
    case invalidHost(String)
    /// A file or directory cannot be created (it exists, or the directory is not writable).
    case cannotCreate(String, String)
    /// OpenSSL failed to generate the key or sign the CSR.
    case openSSL(String)

    package var description: String {
        switch self {
        case .invalidHost(let reason): return "--host \(reason)"
        case .cannotCreate(let path, let reason): return "cannot create \(path): \(reason)"
        case .openSSL(let reason): return "OpenSSL could not make the key or CSR: \(reason)"
        }
    }
}
