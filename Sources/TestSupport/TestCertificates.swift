import Foundation
import ShopKitDemoSupport
import ShopKitPinning

/// The committed test certificates in `TestCerts/` (see `TestCerts/README.md` for what each one is for), read
/// through ``DemoCertificates`` from this source file's checkout.
///
/// Test-only: every key here is public. A missing fixture stops the test run with a message.
package enum TestCertificates {
    /// The `TestCerts` folder, found from this source file's location.
    package static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // TestSupport
        .deletingLastPathComponent()  // Sources
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("TestCerts", isDirectory: true)

    /// The folder as ``DemoCertificates``, for APIs that take one.
    package static let store = DemoCertificates(directory: directory)

    /// The PEM text of `NAME.pem`, e.g. `certificate("leaf-localhost-ecdsa")`.
    package static func certificate(_ name: String) -> String { required { try store.certificate(name) } }

    /// The PEM private key `NAME.key`.
    package static func privateKey(_ name: String) -> String { required { try store.privateKey(name) } }

    /// Several certificates concatenated in the given order (a chain as a server sends it, leaf first).
    package static func chain(_ names: [String]) -> String { required { try store.chain(names) } }

    /// The pin the generator computed with the openssl CLI for `NAME` (from `pins.txt`).
    package static func pin(_ name: String) -> SPKIPin { required { try store.pin(name) } }

    /// The standard chain for a leaf under `intermediate-2`: leaf, intermediate-2, intermediate-1.
    package static func standardChain(leaf: String = "leaf-localhost-ecdsa") -> String {
        chain([leaf, "intermediate-2", "intermediate-1"])
    }

    /// The Certificate Transparency fixtures in `TestCerts/ct/` (made by `TestCerts/ct/generate.py`; see
    /// `TestCerts/README.md`): the test logs, leaves with embedded SCTs, serverinfo files and a stapled OCSP response.
    package static let ctDirectory: URL = directory.appendingPathComponent("ct", isDirectory: true)

    /// The CT fixture folder as ``DemoCertificates``.
    package static let ctStore = DemoCertificates(directory: ctDirectory)

    /// The file `TestCerts/ct/NAME` (the name with its extension), e.g. the path in `OpenSSLSServer`'s arguments
    /// `["-serverinfo", TestCertificates.ctFile("leaf-localhost-ecdsa.scts.serverinfo").path]`.
    package static func ctFile(_ name: String) -> URL { ctDirectory.appendingPathComponent(name) }

    /// The bytes of `TestCerts/ct/NAME`, e.g. `ctData("test-log-list.json")`.
    package static func ctData(_ name: String) -> Data {
        guard let data = FileManager.default.contents(atPath: ctFile(name).path) else {
            fatalError("test fixture: cannot read \(ctFile(name).path); run TestCerts/ct/generate.py")
        }
        return data
    }

    /// The PEM text of `TestCerts/ct/NAME.pem`, e.g. `ctCertificate("leaf-ct-compliant")`.
    package static func ctCertificate(_ name: String) -> String { required { try ctStore.certificate(name) } }

    /// The standard chain for a CT leaf: `TestCerts/ct/LEAF.pem`, intermediate-2, intermediate-1.
    package static func ctStandardChain(leaf: String) -> String {
        ctCertificate(leaf) + chain(["intermediate-2", "intermediate-1"])
    }

    /// `TestCerts/ct/NAME.pem` and `NAME.key` as `OpenSSLSServer.start(leafFiles:)` takes them.
    package static func ctLeafFiles(_ name: String) -> (certificate: String, key: String) {
        (ctFile("\(name).pem").path, ctFile("\(name).key").path)
    }

    private static func required<T>(_ body: () throws -> T) -> T {
        do { return try body() } catch { fatalError("test fixture: \(error)") }
    }
}
