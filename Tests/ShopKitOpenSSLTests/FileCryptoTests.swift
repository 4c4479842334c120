import Testing
@testable import ShopKitOpenSSL

/// Hex helpers for the known-answer tests.
private func hex(_ string: String) -> [UInt8] {
    let clean = string.filter { !$0.isWhitespace }
    var out: [UInt8] = []
    var index = clean.startIndex
    while index < clean.endIndex {
        let next = clean.index(index, offsetBy: 2)
        out.append(UInt8(clean[index..<next], radix: 16)!)
        index = next
    }
    return out
}

private func bytes(_ secure: SecureBytes) -> [UInt8] { secure.withUnsafeBytes { Array($0) } }

@Suite(.timeLimit(.minutes(3))) struct AES256GCMTests {
    /// The GCM specification's AES-256 test cases 13, 14 and 16 (McGrew & Viega; NIST SP 800-38D test data).
    static let vectors: [(key: String, iv: String, aad: String, plaintext: String, ciphertext: String, tag: String)] = [
        ("0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "",
         "", "", "530f8afbc74536b9a963b4f1c4cb738b"),
        ("0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "",
         "00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "feedfacedeadbeeffeedfacedeadbeefabaddad2",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
         "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    @Test(arguments: 0..<3) func knownAnswer(index: Int) throws {
        let vector = Self.vectors[index]
        let key = SecureBytes(copying: hex(vector.key))
        let sealed = try hex(vector.plaintext).withUnsafeBytes { plain in
            try AES256GCM.seal(plain, key: key, nonce: hex(vector.iv), aad: hex(vector.aad))
        }
        #expect(sealed.ciphertext == hex(vector.ciphertext))
        #expect(sealed.tag == hex(vector.tag))
        let opened = try AES256GCM.open(sealed.ciphertext, tag: sealed.tag, key: key, nonce: hex(vector.iv),
                                        aad: hex(vector.aad))
        #expect(opened.map(bytes) == hex(vector.plaintext))
    }

    @Test func tamperedTagCiphertextOrAADDoesNotOpen() throws {
        let vector = Self.vectors[2]
        let key = SecureBytes(copying: hex(vector.key))
        let nonce = hex(vector.iv), aad = hex(vector.aad), ciphertext = hex(vector.ciphertext), tag = hex(vector.tag)
        var badTag = tag
        badTag[0] ^= 1
        var badCiphertext = ciphertext
        badCiphertext[5] ^= 0x80
        var badAAD = aad
        badAAD[19] ^= 1
        #expect(try AES256GCM.open(ciphertext, tag: badTag, key: key, nonce: nonce, aad: aad) == nil)
        #expect(try AES256GCM.open(badCiphertext, tag: tag, key: key, nonce: nonce, aad: aad) == nil)
        #expect(try AES256GCM.open(ciphertext, tag: tag, key: key, nonce: nonce, aad: badAAD) == nil)
        let otherKey = SecureBytes(copying: [UInt8](repeating: 7, count: 32))
        #expect(try AES256GCM.open(ciphertext, tag: tag, key: otherKey, nonce: nonce, aad: aad) == nil)
        // And the OpenSSL error queue is left empty by a failed authentication.
        #expect(OpenSSLError.drainQueue().isEmpty)
    }

    @Test func wrongSizesAreErrors() {
        let shortKey = SecureBytes(copying: [UInt8](repeating: 0, count: 16))
        #expect(throws: OpenSSLError.self) {
            try [UInt8]().withUnsafeBytes { try AES256GCM.seal($0, key: shortKey, nonce: [UInt8](repeating: 0, count: 12), aad: []) }
        }
        let key = SecureBytes(copying: [UInt8](repeating: 0, count: 32))
        #expect(throws: OpenSSLError.self) {
            try [UInt8]().withUnsafeBytes { try AES256GCM.seal($0, key: key, nonce: [0, 1, 2], aad: []) }
        }
    }
}

@Suite(.timeLimit(.minutes(3))) struct ScryptTests {
    /// RFC 7914 section 12, the two small vectors.
    @Test func rfc7914EmptyPasswordVector() throws {
        let key = try Scrypt.deriveKey(password: UnsafeRawBufferPointer(start: nil, count: 0), salt: [],
                                       logN: 4, r: 1, p: 1, length: 64)
        #expect(bytes(key) == hex("""
            77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442
            fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906
            """))
    }

    @Test func rfc7914PasswordNaClVector() throws {
        let key = try Array("password".utf8).withUnsafeBytes { password in
            try Scrypt.deriveKey(password: password, salt: Array("NaCl".utf8), logN: 10, r: 8, p: 16, length: 64)
        }
        #expect(bytes(key) == hex("""
            fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162
            2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640
            """))
    }

    /// RFC 7914's bounds are checked before OpenSSL runs: N < 2^(16·r) and p ≤ (2^32−1)·32/(128·r).
    @Test func rfc7914BoundsAreCheckedUpFront() throws {
        #expect(Scrypt.parameterProblem(logN: 15, r: 1, p: 1) == nil)
        #expect(Scrypt.parameterProblem(logN: 17, r: 8, p: 1) == nil)
        #expect(Scrypt.parameterProblem(logN: 31, r: 2, p: 1) == nil)
        #expect(Scrypt.parameterProblem(logN: 16, r: 1, p: 1)?.contains("N < 2^(16·r)") == true)
        #expect(Scrypt.parameterProblem(logN: 20, r: 1, p: 1)?.contains("N < 2^(16·r)") == true)
        #expect(Scrypt.parameterProblem(logN: 32, r: 2, p: 1)?.contains("N < 2^(16·r)") == true)
        #expect(Scrypt.parameterProblem(logN: 10, r: 1, p: 1 << 30)?.contains("p ≤") == true)
        #expect(Scrypt.parameterProblem(logN: 10, r: 0, p: 1) != nil)
        #expect(Scrypt.parameterProblem(logN: 60, r: .max, p: .max)?.contains("p ≤") == true)
        #expect(Scrypt.parameterProblem(logN: 0, r: 8, p: 1) != nil)
        // deriveKey refuses them with that reason, not with OpenSSL's "memory limit exceeded".
        let error = #expect(throws: OpenSSLError.self) {
            try Array("password".utf8).withUnsafeBytes { password in
                try Scrypt.deriveKey(password: password, salt: [1], logN: 20, r: 1, p: 1, length: 32)
            }
        }
        #expect(error?.queue.first?.contains("RFC 7914 requires N < 2^(16·r)") == true, "\(String(describing: error))")
    }

    @Test func memoryRequirement() {
        // ShopKit's default, N=2^17 r=8 p=1: 128·8·(2^17+2) + 128·8 bytes, just over 128 MiB.
        let expected: UInt64 = 128 * 8 * (131_072 + 2) + 128 * 8
        #expect(Scrypt.memoryRequired(logN: 17, r: 8, p: 1) == expected)
        #expect(Scrypt.memoryRequired(logN: 62, r: UInt32.max, p: UInt32.max) == nil)
        #expect(Scrypt.memoryRequired(logN: 10, r: 0, p: 1) == nil)
    }
}

@Suite(.timeLimit(.minutes(3))) struct SecureRandomTests {
    @Test func bytesDifferAndHaveTheRequestedLength() throws {
        let first = try SecureRandom.bytes(count: 32), second = try SecureRandom.bytes(count: 32)
        #expect(first.count == 32)
        #expect(first != second)
        let key = try SecureRandom.key(count: 32)
        #expect(key.count == 32)
        #expect("\(key)".contains("redacted"))
    }

    @Test func constantTimeEquals() {
        let a = SecureBytes(copying: [1, 2, 3]), b = SecureBytes(copying: [1, 2, 3]), c = SecureBytes(copying: [1, 2, 4])
        #expect(a.constantTimeEquals(b))
        #expect(!a.constantTimeEquals(c))
        #expect(!a.constantTimeEquals(SecureBytes(copying: [1, 2])))
    }
}
