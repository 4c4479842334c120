import ArgumentParser
import Foundation
import ShopKitCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// The token of `set`.
enum StandardInput {
    /// The token from standard input: all of it from a pipe or file (in blocks, at most the token store's limit of
    /// 16 MiB, refused beyond), one line without echo from a terminal. One trailing line ending is dropped; an
    /// empty token, a second line or bytes that are not UTF-8 are usage errors.
    static func readOneLine() async throws -> String {
        let result = try await Exit.map { () throws(CredentialError) in
            try await TokenInput.read(fromFileDescriptor: STDIN_FILENO) { bytes -> Result<String, ValidationError> in
                if bytes.contains(0x0A) {
                    return .failure(ValidationError("standard input holds more than one line; give the token on one line"))
                }
                guard let text = String(validating: bytes, as: UTF8.self),
                    !text.trimmingCharacters(in: .whitespaces).isEmpty
                else { return .failure(ValidationError("standard input holds no token (empty line or not UTF-8)")) }
                return .success(text)
            }
        }
        return try result.get()
    }
}

/// The token file's passphrase: from `--passphrase-fd N`, or from the controlling terminal without echo
/// (both read by ShopKitCredentials, off the cooperative pool). For a new file that `set` is about to create, the
/// terminal asks twice and a passphrase under 8 bytes is refused before anything is written.
enum PassphraseInput {
    static func read(fd: Int32?, request: PassphraseRequest, creating: Bool) async throws(CredentialError)
        -> Passphrase
    {
        var newFile = false
        if creating, case .newFile = request { newFile = true }
        let passphrase: Passphrase
        if let fd {
            passphrase = try await Passphrase.read(fromFileDescriptor: fd)
        } else {
            do {
                passphrase = newFile
                    ? try await Passphrase.promptNew("Passphrase for the new token file: ")
                    : try await Passphrase.prompt("Passphrase for the token file: ")
            } catch where error.code == .io {
                throw .io("\(error.reason ?? error.description); no terminal to ask for the token file's passphrase: pass --passphrase-fd N")
            }
        }
        if newFile { try passphrase.checkForNewFile() }
        return passphrase
    }
}
