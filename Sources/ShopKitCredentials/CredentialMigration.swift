import Logging
import ShopKitOpenSSL

/// Moves the item for `key` from `source` to `destination`, keeping its policy; returns `false` when `source`
/// has no such item. Moving is always this explicit call, never a side effect of a read or of backend selection.
///
/// The destination is written and read back before the source item is deleted, so a failure leaves the item in
/// the source. A `thisDeviceOnly` item is refused (`.policyUnsupported`) by a destination that cannot bind.
///
/// A client key item moves between the keyring and the encrypted file in wiped buffers only, as the vault loads it.
///
/// - Warning: This reads the backends directly and so does not ask for presence; callers moving `userPresence`
///   items should read them through a ``CredentialVault`` first if the move itself must be confirmed.
@discardableResult
public func migrate(
    _ key: CredentialKey, from source: any CredentialBackend, to destination: any CredentialBackend,
    logger: Logger = Logger(label: "ShopKitCredentials")
) async throws(CredentialError) -> Bool {
    if key.kind == .clientKey, let from = source as? any ClientKeyStore, let to = destination as? any ClientKeyStore {
        return try await migrateClientKey(key, from: from, to: to, logger: logger)
    }
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

/// ``migrate(_:from:to:logger:)`` for a client key item between stores that keep it in wiped buffers.
private func migrateClientKey(
    _ key: CredentialKey, from source: any ClientKeyStore, to destination: any ClientKeyStore, logger: Logger
) async throws(CredentialError) -> Bool {
    guard let (pem, policy) = try await source.readClientKey(key) else {
        logger.info("nothing to migrate", metadata: ["key": "\(key)", "from": "\(source.name)"])
        return false
    }
    if policy.thisDeviceOnly && !destination.canBindToDevice {
        throw .policyUnsupported("the \(destination.name) store cannot bind \(key) to this device")
    }
    try await destination.writeClientKey(pem, policy: policy, for: key)
    guard let back = try await destination.readClientKey(key), back.policy == policy, back.pem.constantTimeEquals(pem)
    else { throw .io("\(key) did not read back from the \(destination.name) store; the source item was kept") }
    try await source.delete(key)
    logger.info("credential migrated", metadata: ["key": "\(key)", "from": "\(source.name)", "to": "\(destination.name)"])
    return true
}
