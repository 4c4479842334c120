import CLibSecret
import Foundation
import ShopKitOpenSSL

/// The read and write paths, run on the store's libsecret thread.
extension KeyringStore {
    /// The schema of `kind`'s items: `dev.shopkit.Token`, or `dev.shopkit.ClientKey` for client keys. libsecret
    /// matches the schema name on every search and store, so items of one kind never answer for another.
    static func schema(_ kind: CredentialKind) -> UnsafePointer<SecretSchema> {
        kind == .clientKey ? shopkit_client_key_schema() : shopkit_token_schema()
    }

    /// The attributes that name `key`'s items: service and account, and for a client key `kind` = `client-key`
    /// (the type tag, beside the schema name).
    static func identifying(_ key: CredentialKey) -> [String: String] {
        var attributes = ["service": key.service, "account": key.account]
        if key.kind == .clientKey { attributes["kind"] = "client-key" }
        return attributes
    }

    static func read(
        _ key: CredentialKey, unlock: Bool, device: String?, session: LibSecretSession, cancellable: Cancellable
    ) throws(CredentialError) -> StoredCredential? {
        guard let (value, boundTo) = try loadSecret(key, unlock: unlock, device: device, session: session, cancellable: cancellable)
        else { return nil }
        var bytes = value.copyBytes()
        defer { zeroize(&bytes) }
        let body = try KeyringItemBody.decode(bytes)
        guard body.kind == KeyringItemBody.kindField(key.kind) else {
            throw .corrupt("the keyring item for \(key) holds another kind of secret; delete it and store it again")
        }
        let credential = try body.credential()
        if credential.policy.thisDeviceOnly {
            // Both the attribute and the body must name this machine.
            guard let device, boundTo == device, body.device == device else { throw .wrongDevice }
        }
        return credential
    }

    /// The secret of `key`'s item, and the device its attribute binds it to; `nil` when there is no item.
    static func loadSecret(
        _ key: CredentialKey, unlock: Bool, device: String?, session: LibSecretSession, cancellable: Cancellable
    ) throws(CredentialError) -> (value: SecretValueRef, boundTo: String?)? {
        let attributes = AttributeTable(identifying(key))
        let items = try session.search(attributes, kind: key.kind, unlock: unlock, cancellable)
        guard !items.isEmpty else {
            // libsecret cannot see into some locked collections: "absent" is only certain when unlocked.
            if let collection = try session.defaultCollection(cancellable),
                secret_collection_get_locked(collection.pointer.assumingMemoryBound(to: SecretCollection.self)) != 0
            {
                throw .locked(lockedAdvice(key, unlock: unlock))
            }
            return nil
        }
        // Prefer the item bound to this device, then an unbound one; one bound elsewhere is a wrong-device read.
        let candidates = items.map { item in
            (item, AttributeTable.of(item: item.pointer.assumingMemoryBound(to: SecretItem.self))["device"])
        }
        guard
            let (chosen, boundTo) = candidates.first(where: { $0.1 != nil && $0.1 == device })
                ?? candidates.first(where: { $0.1 == nil })
        else { throw .wrongDevice }
        let item = chosen.pointer.assumingMemoryBound(to: SecretItem.self)
        if secret_item_get_locked(item) != 0 { throw .locked(lockedAdvice(key, unlock: unlock)) }

        var error: UnsafeMutablePointer<GError>?
        if secret_item_load_secret_sync(item, cancellable.pointer, &error) == 0 || error != nil {
            throw session.fail(error, "cannot read the keyring item for \(key)")
        }
        guard let raw = secret_item_get_secret(item) else {
            throw .locked(lockedAdvice(key, unlock: unlock))
        }
        return (SecretValueRef(raw), boundTo)
    }

    static func write(
        _ body: KeyringItemBody, for key: CredentialKey, device: String?, unlock: Bool,
        session: LibSecretSession, cancellable: Cancellable
    ) throws(CredentialError) {
        var plain = try body.encoded()
        defer { zeroize(&plain) }
        try write(
            secret: SecureBytes(copying: plain), contentType: "application/json", for: key, device: device,
            unlock: unlock, session: session, cancellable: cancellable)
    }

    /// Stores `secret` as `key`'s item, replacing the one with the same attributes and dropping those bound
    /// differently.
    static func write(
        secret: SecureBytes, contentType: String, for key: CredentialKey, device: String?, unlock: Bool,
        session: LibSecretSession, cancellable: Cancellable
    ) throws(CredentialError) {
        let service = try session.service(cancellable)
        guard let collection = try session.defaultCollection(cancellable) else {
            throw .unavailable("the Secret Service has no default collection; create one (log in to the desktop "
                + "session once, or run gnome-keyring-daemon --unlock) and retry")
        }
        let collectionPointer = collection.pointer.assumingMemoryBound(to: SecretCollection.self)
        if secret_collection_get_locked(collectionPointer) != 0 {
            guard unlock else { throw .locked(lockedAdvice(key, unlock: false)) }
            let list = g_list_append(nil, collection.pointer)
            defer { g_list_free(list) }
            var error: UnsafeMutablePointer<GError>?
            _ = secret_service_unlock_sync(service, list, cancellable.pointer, nil, &error)
            if let error { throw session.fail(error, "cannot unlock the default collection") }
            if secret_collection_get_locked(collectionPointer) != 0 { throw .locked(lockedAdvice(key, unlock: true)) }
        }

        // secret_value_new copies the bytes into libsecret's (zeroed-on-free) memory.
        let value = secret.withUnsafeBytes { raw in
            SecretValueRef(secret_value_new(raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count, contentType))
        }
        var attributes = identifying(key)
        if let device { attributes["device"] = device }
        let table = AttributeTable(attributes)
        var error: UnsafeMutablePointer<GError>?
        let label = key.kind == .clientKey ? "ShopKit \(key)" : "ShopKit token for \(key)"
        let stored = secret_service_store_sync(
            service, schema(key.kind), table.table, nil, label, value.pointer,
            cancellable.pointer, &error)
        if stored == 0 || error != nil { throw session.fail(error, "cannot store the keyring item for \(key)") }

        // Storing replaced the item with the same attributes; drop the ones bound differently (another device, or
        // bound vs unbound), so one key has one item.
        let others = try session.search(AttributeTable(identifying(key)), kind: key.kind, unlock: false, cancellable)
        for item in others {
            let pointer = item.pointer.assumingMemoryBound(to: SecretItem.self)
            guard AttributeTable.of(item: pointer)["device"] != device else { continue }
            var deleteError: UnsafeMutablePointer<GError>?
            _ = secret_item_delete_sync(pointer, cancellable.pointer, &deleteError)
            if let deleteError { throw session.fail(deleteError, "cannot remove an older keyring item for \(key)") }
        }
    }

    /// Deletes every item for `key`, or none: `.locked` when a match (or a locked collection that may hide one)
    /// stays locked.
    static func delete(_ key: CredentialKey, unlock: Bool, session: LibSecretSession, cancellable: Cancellable)
        throws(CredentialError)
    {
        // Not secret_service_clear_sync: it skips locked items and returns FALSE without an error when every match
        // is locked, which would report a delete that did not happen.
        let items = try session.search(AttributeTable(identifying(key)), kind: key.kind, unlock: unlock, cancellable)
        guard !items.isEmpty else {
            // As for a read: with nothing visible, a locked collection may still hold the item.
            if let collection = try session.defaultCollection(cancellable),
                secret_collection_get_locked(collection.pointer.assumingMemoryBound(to: SecretCollection.self)) != 0
            {
                throw .locked(lockedAdvice(key, unlock: unlock))
            }
            return
        }
        // All or nothing: refuse before deleting anything when one of them stays locked.
        if items.contains(where: { secret_item_get_locked($0.pointer.assumingMemoryBound(to: SecretItem.self)) != 0 }) {
            throw .locked(lockedAdvice(key, unlock: unlock))
        }
        for item in items {
            var error: UnsafeMutablePointer<GError>?
            let deleted = secret_item_delete_sync(
                item.pointer.assumingMemoryBound(to: SecretItem.self), cancellable.pointer, &error)
            if deleted == 0 || error != nil { throw session.fail(error, "cannot delete the keyring item for \(key)") }
        }
    }

    /// What a probe found, never throwing: the failure's kind decides between unavailable and failing.
    static func probe(session: LibSecretSession, cancellable: Cancellable) -> KeyringProbe {
        do throws(CredentialError) {
            let collection = try session.withReconnect { () throws(CredentialError) in
                try session.defaultCollection(cancellable)
            }
            guard let collection else { return .available(locked: false) }
            let locked = secret_collection_get_locked(collection.pointer.assumingMemoryBound(to: SecretCollection.self))
            return .available(locked: locked != 0)
        } catch {
            let why = error.reason ?? error.description
            return session.lastFailure == .noService ? .unavailable(why) : .failing(why)
        }
    }

    private static func lockedAdvice(_ key: CredentialKey, unlock: Bool) -> String {
        unlock
            ? "the keyring collection holding \(key) is locked and was not unlocked (the prompt was dismissed or "
                + "could not be shown); unlock it and retry"
            : "the keyring collection holding \(key) is locked and prompting is not allowed; unlock the keyring "
                + "(e.g. log in to the desktop session, or use allowUnlockPrompt) and retry"
    }
}
