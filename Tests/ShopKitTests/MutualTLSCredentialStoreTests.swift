import Foundation
import ShopKit
import TestSupport
import Testing

/// Client keys kept in ShopKit's credential layer (the keyring inside scripts/with-keyring, and the encrypted file),
/// loaded through the vault's presence policy, used against a real nginx with `ssl_verify_client on`.
@Suite(.timeLimit(.minutes(3))) struct MutualTLSCredentialStoreTests {
    static let insidePrivateKeyring = AuthWithRealStoresTests.insidePrivateKeyring
    static let keyringOnly = AuthWithRealStoresTests.keyringOnly
    static let chainPEM = TestCertificates.chain(["client-ecdsa", "client-intermediate"])
    static let keyPEM = Array(TestCertificates.privateKey("client-ecdsa").utf8)

    static func path(_ file: String) -> String { TestCertificates.directory.appendingPathComponent(file).path }

    /// nginx asking for a certificate from `client-ca`; `GET /client` answers nginx's verdict and the subject.
    static func clientEndpoint(identity: ClientIdentity) async throws -> String {
        let chain = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-chain-\(UUID()).pem")
        try TestCertificates.standardChain().write(to: chain, atomically: true, encoding: .utf8)
        let nginx = try NginxServer(
            configuration: .init(
                certificateChainPath: chain.path, privateKeyPath: path("leaf-localhost-ecdsa.key"),
                clientVerification: .init(caPath: path("client-ca.pem"))))
        defer { nginx.stop() }
        let tls = TLSClientConfiguration(
            trustRoots: .pem(TestCertificates.certificate("root"), addingToSystem: false), clientIdentity: identity)
        let transport = try HTTPSTransport(configuration: .init(tls: tls, timeouts: .wide()))
        let (response, body) = try await transport.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/client"), body: nil,
            baseURL: URL(string: "https://localhost:\(nginx.port)")!, operationID: "mtls")
        let text = try await String(collecting: #require(body), upTo: 4096)
        await transport.shutdown()
        return "\(response.status.code) \(text)"
    }

    static func storedIdentityReachesNginx(backend: any CredentialBackend) async throws {
        // Client keys are stored under userPresence by default (issue 26): a verifier that says yes.
        let vault = CredentialVault(backend: backend, presenceVerifier: ClosurePresenceVerifier { _ in true })
        let item = CredentialKey(service: "dev.shopkit.mtls-test", account: "client-key-\(UUID())")
        let stored = try await vault.storeClientIdentity(certificateChainPEM: chainPEM, privateKeyPEM: keyPEM, as: item)
        let identity = try #require(try await vault.clientIdentity(certificateChainPEM: chainPEM, keyItem: item))
        let direct = try ClientIdentity.pem(certificateChain: chainPEM, privateKey: keyPEM)
        #expect(identity == stored && identity == direct)
        #expect(try await clientEndpoint(identity: identity) == "200 SUCCESS O=ShopKit Test,CN=shopkit-client-ecdsa")
        try await vault.deleteClientIdentity(keyItem: item)  // the key is its own kind (issue 26): not delete(item)
        #expect(try await vault.clientIdentity(certificateChainPEM: chainPEM, keyItem: item) == nil)
    }

    @Test(.enabled(if: insidePrivateKeyring, keyringOnly))
    func anIdentityWhoseKeyIsInTheKeyringReachesNginx() async throws {
        try await Self.storedIdentityReachesNginx(backend: KeyringStore(timeout: .seconds(60)))
    }

    @Test func anIdentityWhoseKeyIsInTheEncryptedFileReachesNginx() async throws {
        try await withTemporaryFileBackend("mtls") { try await Self.storedIdentityReachesNginx(backend: $0) }
    }

    /// The key is read through the vault: a `userPresence` item needs a proof, exactly as tokens do.
    @Test func loadingAPresenceProtectedKeyAsksForPresence() async throws {
        try await withTemporaryFileBackend("mtls") { backend in
            let answers = PresenceAnswers([false, true])
            let vault = CredentialVault(
                backend: backend, presenceVerifier: ClosurePresenceVerifier { _ in await answers.next() })
            let item = CredentialKey(service: "dev.shopkit.mtls-test", account: "presence-\(UUID())")
            try await vault.storeClientIdentity(
                certificateChainPEM: Self.chainPEM, privateKeyPEM: Self.keyPEM, as: item,
                policy: .init(access: .userPresence(reuseSeconds: 0)))

            await #expect(throws: CredentialError.self) {
                _ = try await vault.clientIdentity(certificateChainPEM: Self.chainPEM, keyItem: item)
            }
            let identity = try await vault.clientIdentity(certificateChainPEM: Self.chainPEM, keyItem: item)
            #expect(identity?.subject == "O=ShopKit Test,CN=shopkit-client-ecdsa")
            #expect(await answers.asked == 2)
        }
    }

    /// Only a key that loads and belongs to the certificate is stored: encrypted keys, garbage and another
    /// certificate's key are input errors, and nothing is written.
    @Test func onlyAnUnencryptedMatchingKeyIsStored() async throws {
        try await withTemporaryFileBackend("mtls") { backend in
            let vault = CredentialVault(backend: backend)
            let item = CredentialKey(service: "dev.shopkit.mtls-test", account: "refused")
            let encrypted = try Array(Data(contentsOf: URL(fileURLWithPath: Self.path("client-ecdsa-encrypted.key"))))
            let otherKey = Array(TestCertificates.privateKey("client-rsa").utf8)
            for refused in [encrypted, Array("not a key".utf8), otherKey] {
                await #expect(throws: TLSContextError.self) {
                    try await vault.storeClientIdentity(certificateChainPEM: Self.chainPEM, privateKeyPEM: refused, as: item)
                }
            }
            #expect(try await vault.read(item) == nil)
        }
    }

    /// An item holding something else (here: a token) is an input error when loaded as a key, never a crash.
    @Test func anItemThatIsNotAKeyIsAnInputError() async throws {
        try await withTemporaryFileBackend("mtls") { backend in
            let vault = CredentialVault(backend: backend)
            let item = CredentialKey(service: "dev.shopkit.mtls-test", account: "token")
            try await vault.write(AuthTokens(accessToken: "a-bearer-token"), for: item)
            await #expect {
                _ = try await vault.clientIdentity(certificateChainPEM: Self.chainPEM, keyItem: item)
            } throws: { error in
                error is TLSContextError && !"\(error)".contains("a-bearer-token")
            }
        }
    }
}

/// Presence answers handed out in order, counted.
actor PresenceAnswers {
    private var answers: [Bool]
    private(set) var asked = 0
    init(_ answers: [Bool]) { self.answers = answers }
    func next() -> Bool {
        asked += 1
        return answers.isEmpty ? false : answers.removeFirst()
    }
}
