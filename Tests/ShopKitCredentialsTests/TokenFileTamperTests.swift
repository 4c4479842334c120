import Foundation
import ShopKitAPI
import ShopKitOpenSSL
import Testing
@testable import ShopKitCredentials

/// Damage, tampering and hostile headers: always an error, never an empty store.
@Suite(.timeLimit(.minutes(3))) struct TokenFileTamperTests {
    /// A store file with two items (one device-bound), its bytes, and the directory holding it.
    private func sampleFile(_ dir: TempDirectory) async throws -> [UInt8] {
        let store = makeStore(dir.storeURL)
        try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
        try await store.write(
            StoredCredential(tokens: bobTokens, policy: AccessPolicy(access: .afterFirstUnlock, thisDeviceOnly: true)),
            for: bobKey)
        return try fileBytes(dir.storeURL)
    }

    /// Every byte of the file, flipped one at a time, is reported as `.corrupt`: the header checksum covers the
    /// header (including the wrapped key and its tag), and GCM covers the payload. `.wrongPassphrase` is kept
    /// for an intact header whose key wrap does not open.
    @Test func everyFlippedByteIsCorrupt() async throws {
        try await withTempDirectory { dir in
            let original = try await sampleFile(dir)
            let store = makeStore(dir.storeURL)
            var failures: [Int] = []
            for offset in original.indices {
                var damaged = original
                damaged[offset] ^= offset % 2 == 0 ? 0x01 : 0x80
                try writeBytes(damaged, to: dir.storeURL)
                let error = await caughtError { () async throws(CredentialError) in try await store.read(aliceKey) }
                guard failureCode(of: error) == .corrupt else { failures.append(offset); continue }
            }
            #expect(failures.isEmpty, "offsets not reported as corrupt: \(failures)")
            // The derivation ran at most once (for the intact header), never per damaged copy.
            #expect(await store.derivationCount <= 1)
        }
    }

    @Test func truncatedOrExtendedFileIsCorrupt() async throws {
        try await withTempDirectory { dir in
            let original = try await sampleFile(dir)
            let store = makeStore(dir.storeURL)
            for length in 0..<original.count {
                try writeBytes(Array(original[0..<length]), to: dir.storeURL)
                let error = await caughtError { () async throws(CredentialError) in try await store.read(aliceKey) }
                guard failureCode(of: error) == .corrupt else {
                    Issue.record("length \(length) gave \(String(describing: error))")
                    continue
                }
            }
            try writeBytes(original + [0], to: dir.storeURL)
            guard failureCode(of: await caughtError({ () async throws(CredentialError) in try await store.read(aliceKey) })) == .corrupt
            else { Issue.record("an extended file must be corrupt"); return }
            // A write refuses to replace a corrupt file (that would silently drop every item).
            try writeBytes(Array(original[0..<100]), to: dir.storeURL)
            guard failureCode(of: await caughtError({ () async throws(CredentialError) in
                try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            })) == .corrupt else { Issue.record("a write over a corrupt file must fail"); return }
            #expect(try fileBytes(dir.storeURL) == Array(original[0..<100]))
        }
    }

    /// A header with a valid checksum but absurd scrypt cost is refused before any derivation.
    @Test(arguments: [
        (UInt8(30), UInt32(8), UInt32(1)), (20, 32, 1), (9, 8, 1), (10, 0, 1), (10, 8, 0), (10, 8, 17),
        (20, 8, 16), (255, 255, 255), (18, 16, 1),
        // RFC 7914's N < 2^(16·r): within every range above, refused by OpenSSL only after derivation began.
        (20, 1, 1), (16, 1, 1), (17, 1, 2),
    ])
    func hostileKDFParametersAreCorruptWithoutDeriving(logN: UInt8, r: UInt32, p: UInt32) async throws {
        try await withTempDirectory { dir in
            var file = try TokenFile.parse(try await sampleFile(dir))
            file.kdf = .init(logN: logN, r: r, p: p)
            try writeBytes(try file.serialized(), to: dir.storeURL)
            let store = makeStore(dir.storeURL)
            guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in try await store.read(aliceKey) }), ifIs: .corrupt)
            else { Issue.record("expected corrupt"); return }
            #expect(why.contains("KDF parameters"))
            #expect(await store.derivationCount == 0)
        }
    }

    /// The largest N that RFC 7914 allows for r = 1 (2^15 < 2^16) is accepted, in a file and in a configuration.
    @Test func rfcBoundaryParametersOpen() async throws {
        try await withTempDirectory { dir in
            let kdf = EncryptedFileStore.ScryptParameters(logN: 15, r: 1, p: 1)
            #expect(kdf.problem == nil)
            try await makeStore(dir.storeURL, kdf: kdf).write(
                StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            #expect(try TokenFile.parse(try fileBytes(dir.storeURL)).kdf == kdf)
            #expect(try await makeStore(dir.storeURL).read(aliceKey)?.tokens == aliceTokens)
        }
    }

    /// The same parameters through the configuration API: a typed invalid-configuration error before any
    /// derivation, not OpenSSL's "memory limit exceeded" as an I/O failure.
    @Test(arguments: [(UInt8(20), UInt32(1), UInt32(1)), (16, 1, 1)])
    func configurationOutsideRFC7914IsInvalid(logN: UInt8, r: UInt32, p: UInt32) async throws {
        try await withTempDirectory { dir in
            let kdf = EncryptedFileStore.ScryptParameters(logN: logN, r: r, p: p)
            #expect(kdf.problem?.contains("N < 2^(16·r)") == true)
            let store = makeStore(dir.storeURL, kdf: kdf)
            guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in
                try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            }), ifIs: .invalidConfiguration) else { Issue.record("expected invalidConfiguration"); return }
            #expect(why.contains("RFC 7914") && why.contains("Configuration.kdf"), "\(why)")
            #expect(await store.derivationCount == 0)
            #expect(!FileManager.default.fileExists(atPath: dir.storeURL.path))
        }
    }

    /// Someone who edits the wrapped key or its tag *and* recomputes the unkeyed header checksum gets
    /// `.wrongPassphrase` (the checksum only classifies accidental damage; GCM is what refuses the file).
    @Test func forgedWrapWithRecomputedChecksumReadsAsWrongPassphrase() async throws {
        try await withTempDirectory { dir in
            var file = try TokenFile.parse(try await sampleFile(dir))
            file.wrapTag[0] ^= 1
            try writeBytes(try file.serialized(), to: dir.storeURL)
            let store = makeStore(dir.storeURL)
            #expect(await caughtError { () async throws(CredentialError) in try await store.read(aliceKey) } == .wrongPassphrase)
        }
    }

    @Test func otherHeaderFieldsAreChecked() async throws {
        try await withTempDirectory { dir in
            let original = try await sampleFile(dir)
            let store = makeStore(dir.storeURL)
            func reason(_ bytes: [UInt8]) async throws -> String? {
                try writeBytes(bytes, to: dir.storeURL)
                guard let why = failureReason(of: await caughtError({ () async throws(CredentialError) in try await store.read(aliceKey) }), ifIs: .corrupt)
                else { return nil }
                return why
            }
            var notOurs = original
            notOurs[0] = UInt8(ascii: "X")
            #expect(try await reason(notOurs)?.contains("bad magic") == true)
            var future = original
            future[4] = 3  // 2 is the current version (issue 26); 3 is the future
            #expect(try await reason(future)?.contains("unsupported format version 3") == true)
            #expect(try await reason(Array("SKTF".utf8) + [UInt8](repeating: 0, count: 10))?.contains("truncated") == true)
            #expect(try await reason([UInt8](repeating: 0, count: 17 * 1024 * 1024))?.contains("16 MiB") == true)
        }
    }

    /// A valid file whose payload is swapped in from another file with the same key: the header is the payload's
    /// AAD, so the generation or length cannot be replayed independently of the payload.
    @Test func payloadFromAnotherGenerationDoesNotOpen() async throws {
        try await withTempDirectory { dir in
            let store = makeStore(dir.storeURL)
            try await store.write(StoredCredential(tokens: aliceTokens, policy: .afterFirstUnlock), for: aliceKey)
            let first = try TokenFile.parse(try fileBytes(dir.storeURL))
            try await store.write(StoredCredential(tokens: bobTokens, policy: .afterFirstUnlock), for: aliceKey)
            var second = try TokenFile.parse(try fileBytes(dir.storeURL))
            second.generation = first.generation  // roll the counter back, checksum recomputed
            try writeBytes(try second.serialized(), to: dir.storeURL)
            guard failureCode(of: await caughtError({ () async throws(CredentialError) in try await store.read(aliceKey) })) == .corrupt
            else { Issue.record("a rolled-back generation must not open"); return }
        }
    }
}
