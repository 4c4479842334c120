import Foundation
import ShopKitAPI
import ShopKitOpenSSL
import Testing
import TestSupport

@testable import ShopKitCredentials

/// A client key goes from the token file to OpenSSL's key object in wiped buffers only, never a Swift `String`
/// (issue 26, "client-certificate keys"): after the key is stored, loaded and the identity dropped, a scan of this
/// process's memory finds no copy of one of the key's PEM lines.
///
/// As in the review, the test holds the needle reversed, so the scan never counts the test's own copy. The key is
/// made for this test by the `openssl` command (another process) and read straight into a wiped buffer, so no
/// other test, and no `String` of the test's, holds it.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs the openssl command"), .timeLimit(.minutes(3)))
struct ClientKeyMemoryTests {
    /// Through the encrypted file, and through the keyring inside scripts/with-keyring.
    @Test(arguments: ["file", "keyring"])
    func noCopyOfTheKeyIsLeftInMemory(backend: String) async throws {
        if backend == "keyring" && !KeyringTestEnvironment.isPrivate { return }
        try await withTempDirectory { dir in
            let (keyPath, chainPEM, needle) = try await Self.makeKey(in: dir)
            let store: any CredentialBackend = backend == "file" ? makeStore(dir.storeURL) : KeyringStore(timeout: .seconds(60))
            let vault = CredentialVault(backend: store)
            let item = CredentialKey(service: "dev.shopkit.memory.\(UUID().uuidString)", account: "client")
            defer { Task { [vault] in try? await vault.deleteClientIdentity(keyItem: item) } }
            try await Self.store(keyPath, chainPEM: chainPEM, in: vault, as: item)
            do {
                let identity = try await vault.clientIdentity(certificateChainPEM: chainPEM, keyItem: item)
                #expect(identity != nil)
            }
            let copies = try MemoryScan.count(reversed: needle)
            #expect(copies == 0, "\(copies) copies of a line of the key are left in memory")
        }
    }

    /// `migrate` of a client key from the file to the keyring keeps it in wiped buffers too.
    @Test(.enabled(if: KeyringTestEnvironment.isPrivate, KeyringTestEnvironment.skipReason))
    func migratingAKeyLeavesNoCopy() async throws {
        try await withTempDirectory { dir in
            let (keyPath, chainPEM, needle) = try await Self.makeKey(in: dir)
            let file = makeStore(dir.storeURL)
            let keyring = KeyringStore(timeout: .seconds(60))
            let item = CredentialKey(service: "dev.shopkit.memory.\(UUID().uuidString)", account: "client")
            try await Self.store(keyPath, chainPEM: chainPEM, in: CredentialVault(backend: file), as: item)
            #expect(try await migrate(item.of(.clientKey), from: file, to: keyring))
            #expect(try await file.keys().isEmpty)
            let vault = CredentialVault(backend: keyring)
            do {
                let identity = try await vault.clientIdentity(certificateChainPEM: chainPEM, keyItem: item)
                #expect(identity != nil)
            }
            try await vault.deleteClientIdentity(keyItem: item)
            let copies = try MemoryScan.count(reversed: needle)
            #expect(copies == 0, "\(copies) copies of a line of the key are left in memory")
        }
    }

    /// A fresh key and self-signed client certificate made by the `openssl` command: the key's path, the
    /// certificate's PEM, and the key's first base64 line reversed.
    static func makeKey(in dir: TempDirectory) async throws -> (keyPath: String, chainPEM: String, needle: [UInt8]) {
        let keyPath = dir.url.appendingPathComponent("client.key").path
        let certificatePath = dir.url.appendingPathComponent("client.pem").path
        let openssl = try await BuiltBinary(url: URL(fileURLWithPath: "/usr/bin/openssl")).run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", keyPath,
            "-out", certificatePath, "-subj", "/CN=shopkit-memory-scan", "-days", "2",
            "-addext", "extendedKeyUsage=clientAuth",
        ])
        #expect(openssl.status == 0, "\(openssl.stderr)")
        try #require(openssl.status == 0)
        let needle = try #require(reversedSecondLine(keyPath), "cannot read the key")
        try #require(needle.count >= 40)
        return (keyPath, try String(contentsOfFile: certificatePath, encoding: .utf8), needle)
    }

    /// Stores the key file's contents through `vault`, with no copy of them left in the test.
    static func store(_ keyPath: String, chainPEM: String, in vault: CredentialVault, as item: CredentialKey)
        async throws
    {
        var keyPEM = try #require(SecureBytes.contentsOfFile(keyPath)).withUnsafeBytes { Array($0) }
        defer { SecureBytes.wipe(&keyPEM) }
        try await vault.storeClientIdentity(
            certificateChainPEM: chainPEM, privateKeyPEM: keyPEM, as: item, policy: .afterFirstUnlock)
    }

    /// The key file's second line (the first line of base64), reversed, read without a forward copy.
    static func reversedSecondLine(_ path: String) -> [UInt8]? {
        guard let key = SecureBytes.contentsOfFile(path) else { return nil }
        return key.withUnsafeBytes { bytes -> [UInt8]? in
            guard let first = bytes.firstIndex(of: 0x0A),
                let second = bytes[(first + 1)...].firstIndex(of: 0x0A)
            else { return nil }
            var reversed: [UInt8] = []
            reversed.reserveCapacity(second - first)
            var index = second - 1
            while index > first {
                reversed.append(bytes[index])
                index -= 1
            }
            return reversed
        }
    }
}

/// Counts the occurrences of a byte string in this process's readable memory (`/proc/self/maps`, read through
/// `/proc/self/mem`), given reversed so that the caller's copy is never one.
enum MemoryScan {
    static func count(reversed needle: [UInt8]) throws -> Int {
        let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        let fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FixtureError(description: "cannot open /proc/self/mem") }
        defer { close(fd) }
        let chunk = 1 << 20
        var buffer = [UInt8](repeating: 0, count: chunk + needle.count)
        defer { SecureBytes.wipe(&buffer) }
        var found = 0
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[1].hasPrefix("r"), !line.hasSuffix("[vvar]"), !line.hasSuffix("[vsyscall]"),
                let dash = fields[0].firstIndex(of: "-"),
                let start = UInt64(fields[0][..<dash], radix: 16),
                let end = UInt64(fields[0][fields[0].index(after: dash)...], radix: 16)
            else { continue }
            var offset = start
            while offset < end {
                let want = Int(min(UInt64(chunk + needle.count - 1), end - offset))
                let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(Int64(bitPattern: offset))) }
                guard got > 0 else { break }
                found += occurrences(of: needle, in: buffer, count: got)
                offset += UInt64(chunk)
            }
        }
        return found
    }

    /// Occurrences of the reverse of `needle` starting in the first `count` bytes of `haystack` (those that fit).
    private static func occurrences(of needle: [UInt8], in haystack: [UInt8], count: Int) -> Int {
        guard count >= needle.count, let firstByte = needle.last else { return 0 }
        var found = 0
        haystack.withUnsafeBytes { raw in
            let base = raw.baseAddress!
            var index = 0
            let last = min(count - needle.count, (1 << 20) - 1)
            while index <= last {
                guard let hit = memchr(base + index, Int32(firstByte), last - index + 1) else { break }
                let position = base.distance(to: UnsafeRawPointer(hit))
                var matches = true
                for offset in 1..<needle.count where raw[position + offset] != needle[needle.count - 1 - offset] {
                    matches = false
                    break
                }
                if matches { found += 1 }
                index = position + 1
            }
        }
        return found
    }
}
