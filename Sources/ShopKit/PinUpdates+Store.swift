import Foundation
import ShopKitCredentials
import ShopKitPinning

extension PinUpdates {
    /// Where the rollback floor (the highest version ever applied, in decimal) is kept: next to the stored
    /// document, in a file of its own, so losing the document does not lose the floor.
    var floorPath: String { storePath + ".floor" }

    /// The rollback floor's file, under the store's lock.
    var rollbackFloor: RollbackFloor { RollbackFloor(path: floorPath, lockPath: storePath + ".lock") }
}
