import ArgumentParser
import Foundation
import ShopKitInspector
import ShopKitOpenSSL

/// `pin-check backup-key`: a new key pair for a host that is not deployed yet, its CSR, and its pin ready to add
/// beside the pins in use. Thin: ``BackupKey`` does the work.
struct BackupKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin-check backup-key",
        abstract: "Make a backup key pair and CSR for a host, and print the pin to add to the app now.",
        discussion: """
            Writes DIR/HOST.key (the private key, PKCS#8 PEM, mode 0600) and DIR/HOST.csr (subject CN and SAN HOST),
            never overwriting either, and prints the key's SPKI pin: the pin every certificate issued for the CSR
            will carry. Ship that pin in the app now, keep the key offline, and have the CSR signed when you rotate.
            The private key is never printed.

            Exit status:
              0   the key, CSR and pin were made
              64  usage error (bad --host, --key-type or --print-config)
              69  OpenSSL could not generate the key or sign the CSR
              73  a file cannot be created (it exists, or DIR is not writable)
            """)

    @Option(help: "The host the certificate will be for: a DNS name, *.DOMAIN or an IP address.")
    var host: String

    @Option(help: "The directory for HOST.key and HOST.csr (created 0700 if missing).")
    var out: String

    @Option(name: .customLong("key-type"), help: "ecdsa-p256 (default), rsa-2048 or ed25519.")
    var keyType: OpenSSLKey.GeneratedType = .ecdsaP256

    @Option(name: .customLong("print-config"), help: "Print the pin only as shopkit, okhttp, curl or android (default: all).")
    var printConfig: PinConfigFormat?

    func execute() throws(Failure) -> Int32 {
        let backup: BackupKey
        do { backup = try BackupKey(host: host, type: keyType) } catch { throw Failure(.usage, error.description) }
        let result: BackupKey.Result
        do { result = try backup.generate(in: out) } catch {
            switch error {
            case .invalidHost: throw Failure(.usage, error.description)
            case .cannotCreate: throw Failure(.cannotCreate, error.description)
            case .openSSL: throw Failure(.unavailable, error.description)
            }
        }
        print("""
            backup key for \(backup.host) (\(result.keyDescription)):
              private key  \(result.keyPath)  (mode 0600; keep it offline until the rotation, never in the app)
              CSR          \(result.csrPath)  (CN and SAN \(backup.host); have it signed when you rotate)
              backup pin   \(result.pin)
            """)
        let comment = "keep the pins in use now and add this backup pin; its key is not deployed yet"
        for format in printConfig.map({ [$0] }) ?? PinConfigFormat.allCases {
            let config = format.render(
                host: backup.host, pins: [result.pin.description], placeholder: "sha256/CURRENT… (the pins in use now)",
                comment: comment)
            print("\n\(format.rawValue) configuration:\n\(config)")
        }
        return 0
    }
}

extension OpenSSLKey.GeneratedType: ExpressibleByArgument {}
