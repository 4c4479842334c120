import Foundation
import ShopKitTLS

/// The client-certificate fixtures (TestCerts' `client-ca` and its clients) and the nginx that asks for them: the
/// library's mutual TLS tests and `pin-check`'s use the same ones.
package enum MutualTLSFixtures {
    /// The accepted-issuer name nginx sends in its certificate request.
    package static let clientCA = "O=ShopKit Test,CN=ShopKit Test Client CA"
    /// The passphrase of `client-ecdsa-encrypted.key` and `client-ecdsa.p12` (TestCerts/generate-client.sh).
    package static let passphrase = Array("shopkit-test-passphrase".utf8)

    /// A file in TestCerts.
    package static func path(_ file: String) -> String { TestCertificates.directory.appendingPathComponent(file).path }

    /// An nginx asking for client certificates from `client-ca`, serving the standard localhost chain.
    package static func startNginx() throws -> NginxServer {
        let chain = FileManager.default.temporaryDirectory.appendingPathComponent("shopkit-chain-\(UUID()).pem")
        try TestCertificates.standardChain().write(to: chain, atomically: true, encoding: .utf8)
        return try NginxServer(
            configuration: .init(
                certificateChainPath: chain.path, privateKeyPath: path("leaf-localhost-ecdsa.key"),
                clientVerification: .init(caPath: path("client-ca.pem"))))
    }

    /// The PEM identity `name` (`client-ecdsa`, `client-rsa`, …): `<name>-chain.pem` and `<name>.key`.
    package static func pemIdentity(_ name: String) throws -> ClientIdentity {
        try ClientIdentity.pemFiles(certificateChain: path("\(name)-chain.pem"), privateKey: path("\(name).key"))
    }
}
