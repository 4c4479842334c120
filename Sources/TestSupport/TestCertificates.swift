import Foundation
import ShopKitPinning

/// The committed test certificates in `TestCerts/` (see `TestCerts/README.md` for what each one is for).
///
/// Test-only: every key here is public.
public enum TestCertificates {
    /// The `TestCerts` folder, found from this source file's location.
    public static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // TestSupport
        .deletingLastPathComponent()  // Sources
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("TestCerts", isDirectory: true)

    /// The PEM text of `NAME.pem`, e.g. `certificate("leaf-localhost-ecdsa")`.
    public static func certificate(_ name: String) -> String { read("\(name).pem") }

    /// The PEM private key `NAME.key`.
    public static func privateKey(_ name: String) -> String { read("\(name).key") }

    /// Several certificates concatenated in the given order (a chain as a server sends it, leaf first).
    public static func chain(_ names: [String]) -> String { names.map(certificate).joined() }

    /// The pin the generator computed with the openssl CLI for `NAME` (from `pins.txt`).
    public static func pin(_ name: String) -> SPKIPin {
        for line in read("pins.txt").split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == name[...] {
                guard let pin = try? SPKIPin(String(parts[1])) else { fatalError("bad pin for \(name) in pins.txt") }
                return pin
            }
        }
        fatalError("no pin for \(name) in TestCerts/pins.txt; run TestCerts/generate.sh")
    }

    /// The standard chain for a leaf under `intermediate-2`: leaf, intermediate-2, intermediate-1.
    public static func standardChain(leaf: String = "leaf-localhost-ecdsa") -> String {
        chain([leaf, "intermediate-2", "intermediate-1"])
    }

    private static func read(_ file: String) -> String {
        let url = directory.appendingPathComponent(file)
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            fatalError("missing test fixture \(url.path); run TestCerts/generate.sh")
        }
        return text
    }
}
