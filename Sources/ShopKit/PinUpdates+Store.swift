import Foundation
import ShopKitCredentials
import ShopKitPinning

extension PinUpdates {
    /// Where the rollback floor (the highest version ever applied, in decimal) is kept: next to the stored
    /// document, in a file of its own, so losing the document does not lose the floor.
    var floorPath: String { storePath + ".floor" }

    /// The rollback floor's file, under the store's lock.
    var rollbackFloor: RollbackFloor { RollbackFloor(path: floorPath, lockPath: storePath + ".lock") }

    /// Stores `text` atomically (0600), under the store's lock; the error, if it failed.
    func store(_ text: String, version: Int) async -> CredentialError? {
        let path = storePath
        let verifier = self.verifier
        let result = await onIO { () throws(CredentialError) in
            try TokenFileIO.ensureDirectory((path as NSString).deletingLastPathComponent)
            try TokenFileIO.withExclusiveLock(path + ".lock") { () throws(CredentialError) in
                // A concurrent update may have stored a newer document first: never replace it with an older one.
                if let stored = try TokenFileIO.read(path),
                    let document = try? verifier.signedDocument(String(decoding: stored, as: UTF8.self)),
                    document.version > version
                {
                    return
                }
                try TokenFileIO.atomicReplace(path, with: Array((text + "\n").utf8))
            }
        }
        if case .failure(let error) = result { return error }
        return nil
    }
}
