import Foundation
import ShopKit
import ShopKitDemoSupport

extension Demo {
    /// Pinned HTTPS against an in-process OpenSSL server on 127.0.0.1 presenting the TestCerts chain.
    static func pinnedTLSDemo(_ certificates: DemoCertificates) async throws {
        let server = try await LoopbackTLSServer.start(
            chain: ["leaf-localhost-ecdsa", "intermediate-2", "intermediate-1"], key: "leaf-localhost-ecdsa",
            certificates: certificates)
        let url = URL(string: "https://localhost:\(server.port)")!
        try await fetch(url, certificates, pins: ["leaf-localhost-ecdsa", "backup-intermediate"], label: "leaf pin")
        try await fetch(
            url, certificates, pins: ["intermediate-2", "backup-intermediate"], label: "backup intermediate pin")
        try await fetch(url, certificates, pins: ["other-root", "other-intermediate"], label: "unrelated pins")
        try await server.shutdown()
    }

    private static func fetch(
        _ url: URL, _ certificates: DemoCertificates, pins: [String], label: String
    ) async throws {
        var pinList: [SPKIPin] = []
        for name in pins { pinList.append(try certificates.pin(name)) }
        let tls = TLSClientConfiguration(
            trustRoots: .pem(try certificates.certificate("root"), addingToSystem: false),
            pinning: PinningPolicy(pinSets: [try PinSet(hostPattern: HostPattern("localhost"), pins: pinList)]))
        let transport = try HTTPSTransport(configuration: HTTPSTransport.Configuration(tls: tls))
        do {
            let (response, _) = try await transport.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), body: nil, baseURL: url,
                operationID: "demo")
            print("TLS: \(label): \(response.status.code) OK, chain verified by OpenSSL and pinned")
        } catch let error as TLSError {
            print("TLS: \(label): refused, as it should be:")
            print(String(describing: error).split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        }
        await transport.shutdown()
    }

    /// A token stored and read back through the default store: the keyring when a Secret Service answers.
    static func tokenStoreDemo() async throws {
        let backend = try await BackendSelection.defaultStore(
            passphrase: { () throws(CredentialError) -> Passphrase in
                throw .unavailable("the demo runs with a keyring; no file passphrase is asked")
            })
        let vault = CredentialVault(backend: backend)
        let key = CredentialKey(service: "dev.shopkit.demo", account: "demo-user")
        try await vault.write(AuthTokens(accessToken: "demo-access-token", refreshToken: "demo-refresh"), for: key)
        let read = try await vault.read(key)
        print("Token store: stored and read back through the \(backend.name) backend: \(read.map { "\($0)" } ?? "nothing")")
        try await vault.delete(key)
    }
}
