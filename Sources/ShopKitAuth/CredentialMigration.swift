import Logging

/// Moves the item for `key` from `source` to `destination`, keeping its policy; returns `false` when `source`
/// has no such item. Moving is always this explicit call, never a side effect of a read or of backend selection.
///
/// The destination is written and read back before the source item is deleted, so a failure leaves the item in
/// the source. A `thisDeviceOnly` item is refused (`.policyUnsupported`) by a destination that cannot bind.
///
/// - Warning: This reads the backends directly and so does not ask for presence; callers moving `userPresence`
///   items should read them through a ``CredentialVault`` first if the move itself must be confirmed.
@discardableResult
public func migrate(
    _ key: CredentialKey, from source: any CredentialBackend, to destination: any CredentialBackend,
    logger: Logger = Logger(label: "ShopKitAuth")
) async throws(CredentialError) -> Bool {
    guard let credential = try await source.read(key) else {
        logger.info("nothing to migrate", metadata: ["key": "\(key)", "from": "\(source.name)"])
        return false
    }
    if credential.policy.thisDeviceOnly && !destination.canBindToDevice {
        throw .policyUnsupported("the \(destination.name) store cannot bind \(key) to this device")
    }
    try await destination.write(credential, for: key)
    guard try await destination.read(key) == credential else {
        throw .io("\(key) did not read back from the \(destination.name) store; the source item was kept")
    }
    try await source.delete(key)
    logger.info("credential migrated", metadata: ["key": "\(key)", "from": "\(source.name)", "to": "\(destination.name)"])
    return true
}
