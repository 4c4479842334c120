import Foundation
import ShopKitOpenSSL
import ShopKitPinning

/// PEM and DER loading through the OpenSSL wrappers, and what ShopKit then reads out of a parsed certificate
/// (pin, names, subjectAltNames, dates, key description).
enum OpenSSLTargets {
    /// Input: PEM text, as `pin-check --pem` or a configured CA file would hand it over.
    static func pem(_ bytes: [UInt8]) {
        load(String(fuzzInput: bytes), der: nil)
    }

    /// Input: a label selector byte, then DER bytes. The DER goes into one PEM block (`CERTIFICATE`,
    /// `PUBLIC KEY` or `PRIVATE KEY`), so the fuzzer mutates the DER itself rather than its Base64.
    static func der(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let labels = ["CERTIFICATE", "PUBLIC KEY", "PRIVATE KEY"]
        let label = labels[Int(selector) % labels.count]
        let der = Array(bytes.dropFirst())
        load(pem(label: label, der: der), der: label == "CERTIFICATE" ? der : nil)
    }

    /// `der` in one PEM block labelled `label`, Base64 in lines of 64.
    private static func pem(label: String, der: [UInt8]) -> String {
        var text = "-----BEGIN \(label)-----\n"
        let base64 = Data(der).base64EncodedString()
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            text += base64[index..<end] + "\n"
            index = end
        }
        return text + "-----END \(label)-----\n"
    }

    /// Runs `text` through every loader. `der` is the certificate's DER when `text` wraps exactly one.
    private static func load(_ text: String, der: [UInt8]?) {
        if let certificates = try? OpenSSLCertificate.parsePEM(text) {
            FuzzCheck.require(!certificates.isEmpty, "parsePEM returned no certificate without throwing")
            for certificate in certificates {
                let encoded = certificate.derBytes
                FuzzCheck.require(!encoded.isEmpty, "a parsed certificate has no DER encoding")
                if der != nil, certificates.count == 1 {
                    // OpenSSL re-encodes what it parsed: input that is BER rather than DER (a found case: a
                    // signature BIT STRING's padding) comes back in DER, so the bytes may differ from the
                    // input's. The encoding must be a fixed point: parsed again, it encodes to itself.
                    let again = try? OpenSSLCertificate.parsePEM(pem(label: "CERTIFICATE", der: encoded))
                    FuzzCheck.require(
                        again?.count == 1 && again?.first?.derBytes == encoded, "the DER encoding does not parse back to itself")
                }
                if let info = try? certificate.info {
                    FuzzCheck.require(info.spkiPin.description.hasPrefix("sha256/"), "pin without its prefix")
                    _ = info.subject + info.issuer + info.keyDescription + info.signatureAlgorithm
                    _ = info.subjectAlternativeNames.joined()
                }
            }
        }
        if let keys = try? OpenSSLKey.publicKeys(pem: text) {
            for key in keys {
                _ = try? key.spkiPin
                _ = key.keyDescription
            }
        }
        if let key = try? OpenSSLKey.privateKey(pem: text) {
            _ = key.keyDescription
        }
        do {
            let entries = try PEMPins.pins(pem: text)
            FuzzCheck.require(!entries.isEmpty, "PEMPins found nothing without throwing")
        } catch {
            _ = error.description
        }
    }
}
