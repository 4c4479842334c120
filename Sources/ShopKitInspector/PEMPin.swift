import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// The pin of one certificate or public key of a PEM text, offline: what `pin-check --pem` prints.
///
/// Nothing is verified: a pin read this way says which key a file holds, not that anyone trusts it.
package struct PEMPin: Sendable, Hashable {
    /// The SPKI pin.
    package let pin: SPKIPin
    /// The certificate's subject (RFC 2253), or `public key` for a bare `PUBLIC KEY` block.
    package let subject: String
    /// Key type and size, e.g. `ECDSA P-256`, `Ed25519`.
    package let key: String

    /// The pins of every `CERTIFICATE` block of `pem`, or, when it has none, of every `PUBLIC KEY` block.
    ///
    /// - Throws: ``PEMPinError`` when no block is found or one does not parse.
    package static func read(pem: String) throws(PEMPinError) -> [PEMPin] {
        do {
            return try PEMPins.pins(pem: pem).map { PEMPin(pin: $0.pin, subject: $0.subject, key: $0.keyDescription) }
        } catch {
            throw PEMPinError(message: "no certificate or public key could be read: \(error)")
        }
    }
}

/// A PEM text without a readable certificate or public key.
package struct PEMPinError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, with OpenSSL's reason.
    package let message: String

    package var description: String { message }
}
