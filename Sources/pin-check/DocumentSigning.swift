import ArgumentParser
import Foundation
import ShopKitOpenSSL
import ShopKitPinning
import ShopKitTLS

/// What `sign-pins` and `sign-log-list` share: their options, the document's bytes, the rules every app applies to
/// a document's dates, checked before anything is signed, and the signing key, read into wiped memory; and what
/// `verify-pins` and `verify-log-list` share: their options and the line that says a document is valid.

/// `--pubkey`, `--current-version`, `--audience` and the document.
struct VerifyingOptions: ParsableArguments {
    @Option(name: .customLong("pubkey"), help: "A trusted Ed25519 public key, KID=FILE or FILE (PEM). Repeatable.")
    var publicKeys: [String] = []

    @Option(name: .customLong("current-version"), help: "Refuse a document not above this version (default 0).")
    var currentVersion: Int = 0

    @Option(help: "The app's identifier, as its PinSetVerifier(audience:) names it: the document's audience must be this.")
    var audience: String

    @Argument(help: "The signed document (compact JWS).")
    var document: String

    /// "DOC: valid, version N, signed by "kid", issued …, expires …, for "app"", for the verified JWS `text`.
    func validLine(
        _ text: String, kind: CompactJWS.Kind, version: Int, issuedAt: Date, expiresAt: Date, audience: String?
    ) -> String {
        let kid = (try? CompactJWS(parsing: text, kind: kind).keyID) ?? "?"
        return "\(document): valid, version \(version), signed by \(String(reflecting: kid)), issued "
            + "\(PinSetDocument.timestamp(issuedAt)), expires \(PinSetDocument.timestamp(expiresAt)), "
            + "for \(String(reflecting: audience ?? ""))"
    }
}

/// `--key`, `--kid`, `--in` and `--out`.
struct SigningOptions: ParsableArguments {
    @Option(help: "The Ed25519 private key (PEM, unencrypted). Read into wiped memory, never printed.")
    var key: String

    @Option(help: "The key id for the JWS header (default: the key file's name without extension).")
    var kid: String?

    @Option(name: .customLong("in"), help: "The document to sign (JSON).")
    var input: String

    @Option(help: "Where to write the JWS.")
    var out: String

    /// The bytes of `--in`, a `kind` (`pin-set document`): the file's own bytes are what is checked and signed, so
    /// text that is not UTF-8 is refused rather than decoded with replacement characters (which would sign other
    /// bytes than the reviewed ones).
    func document(kind: String) throws(Failure) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: input) else {
            throw Failure(.usage, "--in \(input): cannot read the file (check the path and permissions)")
        }
        let json = Array(data)
        guard String(validating: json, as: UTF8.self) != nil else {
            throw Failure(.refused, "--in \(input): not UTF-8 text; a \(kind) is UTF-8 JSON")
        }
        return json
    }

    /// Signs `json` as a compact JWS of `kind` with `--key`, writes it to `--out`, and returns the key id in its
    /// header. `command` (`sign-pins`) is named in the advice.
    func sign(_ json: [UInt8], kind: CompactJWS.Kind, command: String) throws(Failure) -> String {
        let (privateKey, keyID) = try signingKey(key, kid: kid, command: command)
        let jws: String
        do {
            jws = try CompactJWS.serialize(payload: json, keyID: keyID, kind: kind) { try privateKey.signEd25519($0) }
        } catch {
            throw Failure(.unavailable, "OpenSSL could not sign: \(error)")
        }
        try writeOutput(jws + "\n", to: out, inputs: [("--key", key), ("--in", input)])
        return keyID
    }
}

/// Refuses to sign a document every app would refuse for its audience or its dates (`PinSetVerifier`'s default
/// limits): no audience, expired, valid for longer than apps accept, or issued in the future. `maker` is the command
/// that writes such documents (`pins-document`), named in the advice.
func checkSignable(audience: String?, issuedAt: Date, expiresAt: Date, input: String, maker: String) throws(Failure) {
    guard audience != nil else {
        throw Failure(
            .refused, "--in \(input): no \"audience\": add the identifier of the app the document is for, as its "
                + "PinSetVerifier(audience:) names it (pin-check \(maker) --audience)")
    }
    let now = Date()
    guard now < expiresAt else {
        throw Failure(
            .refused, "--in \(input): the document expired at \(PinSetDocument.timestamp(expiresAt)); "
                + "give it a later expiresAt (pin-check \(maker) --valid-days) before signing")
    }
    let validity = expiresAt.timeIntervalSince(issuedAt)
    let maximum = Double(PinSetVerifier.defaultMaximumValidity.components.seconds)
    guard validity <= maximum else {
        throw Failure(
            .refused, "--in \(input): valid for \(Int((validity / 86_400).rounded(.up))) days, but apps accept at most "
                + "\(Int(maximum / 86_400)) by default; give it an earlier expiresAt (pin-check \(maker) --valid-days)")
    }
    guard issuedAt <= now.addingTimeInterval(PinSetDocument.clockSkew) else {
        throw Failure(
            .refused, "--in \(input): issued at \(PinSetDocument.timestamp(issuedAt)), in the future; apps "
                + "refuse it until then: give it the time of signing")
    }
}

/// The Ed25519 signing key at `path` (a file only its owner can read, or a pipe read to its end) and its key id
/// (`kid`, or the file's name without extension). `command` (`sign-pins`) is named in the advice.
func signingKey(_ path: String, kid: String?, command: String) throws(Failure) -> (key: OpenSSLKey, keyID: String) {
    // A key from standard input or a pipe has no name an app's PinSetVerifier knows ("stdin" is none): --kid.
    guard kid != nil || !SignPinsCommand.isStreamed(path) else {
        var status = stat()
        let kind: String
        if SignPinsCommand.isStandardInput(path) {
            kind = "standard input"
        } else if stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFIFO {
            kind = "a pipe"
        } else {
            kind = "not a regular file (a device, a socket or a directory)"
        }
        throw Failure(
            .usage, "--key \(path) is \(kind), which names no key: give --kid, the id the app's "
                + "PinSetVerifier(publicKeys:) gives this key's public half")
    }
    let keyID = kid ?? ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    guard !keyID.isEmpty, keyID.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
        throw Failure(
            .usage, "--kid: the key id must be printable ASCII without spaces, as the app's PinSetVerifier names "
                + "its keys (got \(keyID.utf8.count) bytes that are not)")
    }
    // The checks are made on the descriptor read (no stat of the path before its open), and a pipe is read to
    // its end: `--key /dev/stdin` takes a key decrypted on the fly.
    let secret: SecureBytes
    do { secret = try SecureBytes.readSecret(path, limit: 64 * 1024, privateToUser: true) } catch {
        if case .readableByOthers(let mode) = error, SignPinsCommand.isStandardInput(path) {
            // chmod on /dev/stdin changes nothing that matters: the file redirected into it is what others read.
            throw Failure(
                .usage, "--key \(path): the file redirected to it has mode \(mode), which lets other users read the "
                    + "signing key; chmod 600 that file (and keep it offline), or pipe the key in from the command "
                    + "that decrypts it (decrypt … | pin-check \(command) --key /dev/stdin --kid ID …), then sign again")
        }
        if case .readableByOthers(let mode) = error {
            throw Failure(
                .usage, "--key \(path): mode \(mode) lets other users read the signing key; chmod 600 \(path) (and "
                    + "keep it offline), then sign again")
        }
        throw Failure(.usage, "--key \(path): \(error)")
    }
    guard secret.count > 0 else {
        throw Failure(.usage, "--key \(path): empty: the pipe closed before a key came, or the file is empty")
    }
    // One key, one signer: OpenSSL would take the first of several blocks and ignore the rest, so a file of two
    // keys (or a key and a certificate) signs with whichever came first.
    let blocks = secret.withUnsafeBytes { bytes in
        let marker = Array("-----BEGIN ".utf8)
        guard bytes.count >= marker.count else { return 0 }
        return (0...(bytes.count - marker.count)).count(where: { start in
            marker.indices.allSatisfy { bytes[start + $0] == marker[$0] }
        })
    }
    guard blocks <= 1 else {
        throw Failure(
            .usage, "--key \(path): \(blocks) PEM blocks; give a file holding the one signing key (the key that signs "
                + "must be the one meant)")
    }
    let key: OpenSSLKey
    do { key = try OpenSSLKey.privateKey(pem: secret) } catch {
        throw Failure(.usage, "--key \(path): not an unencrypted PEM private key (\(error))")
    }
    guard key.isEd25519 else {
        throw Failure(.usage, "--key \(path): a \(key.keyDescription) key; sign with an Ed25519 key")
    }
    return (key, keyID)
}

/// Writes `text` to the file `out` (the `--out` option) atomically: a new file beside it, renamed over it, so a
/// reader never sees half a document. Refused, with nothing written: an `out` that exists and is not a regular file
/// (a directory, a pipe, a device, which a rename would replace), and an `out` that is one of the command's
/// `inputs` (`--key`, `--in`, `--list`, …: a signing key or the reviewed document must never be overwritten).
func writeOutput(_ text: String, to out: String, inputs: [(option: String, path: String)]) throws(Failure) {
    var target = stat()
    if stat(out, &target) == 0 {
        guard (target.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(
                .cannotCreate, "--out \(out): not a regular file (a directory, a pipe or a device); give the path of "
                    + "a file to create or replace")
        }
        for input in inputs {
            var other = stat()
            if stat(input.path, &other) == 0, other.st_dev == target.st_dev, other.st_ino == target.st_ino {
                throw Failure(
                    .usage, "--out \(out) is the file \(input.option) reads (\(input.path)): nothing was written; give "
                        + "another output path")
            }
        }
    }
    let directory = (out as NSString).deletingLastPathComponent
    // A new name beside the output (so the rename stays on one file system), created exclusively, with the mode a
    // new file gets under the umask: an output document is public.
    let temporary = (directory.isEmpty ? "." : directory) + "/.pin-check-out-\(UUID().uuidString)"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666)
    guard descriptor >= 0 else {
        throw Failure(.cannotCreate, "--out \(out): cannot create a file in its directory (\(String(cString: strerror(errno))))")
    }
    let bytes = Array(text.utf8)
    var written = 0
    var failure: Int32 = 0
    while failure == 0, written < bytes.count {
        let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            failure = errno
        } else {
            written += count
        }
    }
    if failure == 0, fsync(descriptor) != 0 { failure = errno }
    if close(descriptor) != 0, failure == 0 { failure = errno }
    if failure == 0, rename(temporary, out) != 0 { failure = errno }
    guard failure == 0 else {
        unlink(temporary)
        throw Failure(.cannotCreate, "--out \(out): \(String(cString: strerror(failure)))")
    }
}
