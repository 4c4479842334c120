import CLibSecret
import Foundation

/// The libsecret state of the process: confined to the ``LibSecretThread``, never shared with another thread.
///
/// Holds ShopKit's own `SecretService` proxy (`secret_service_open_sync`, not libsecret's shared default one, which
/// other code in the process may use from other threads) between calls; a D-Bus failure drops it so the next call
/// reconnects.
final class LibSecretSession {
    private var service: GObjectRef?

    init() {}

    /// The connected service proxy, opened on first use, never prompting.
    func service(_ cancellable: Cancellable) throws(CredentialError) -> UnsafeMutablePointer<SecretService> {
        if let service { return service.pointer.assumingMemoryBound(to: SecretService.self) }
        var error: UnsafeMutablePointer<GError>?
        // libsecret uses GLib's shared session-bus connection, which by default kills the whole process when
        // the bus goes away; a credential store must report "unavailable" instead.
        guard let bus = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellable.pointer, &error) else {
            throw fail(error, "cannot connect to the D-Bus session bus")
        }
        g_dbus_connection_set_exit_on_close(bus, 0)
        g_object_unref(UnsafeMutableRawPointer(bus))
        guard
            let opened = secret_service_open_sync(
                secret_service_get_type(), nil, SECRET_SERVICE_NONE, cancellable.pointer, &error)
        else { throw fail(error, "cannot reach the Secret Service") }
        service = GObjectRef(UnsafeMutableRawPointer(opened))
        return opened
    }

    /// Turns a GError into a typed error, frees it, and forgets the connection when it was a D-Bus failure.
    func fail(_ error: UnsafeMutablePointer<GError>?, _ what: String) -> CredentialError {
        guard let error else {
            reset()
            return .unavailable("\(what): libsecret gave no reason")
        }
        defer { g_error_free(error) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "no message"
        let domain = error.pointee.domain
        let code = error.pointee.code
        if domain == secret_error_get_quark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue) {
            return .locked("\(what): \(message); unlock the keyring (e.g. log in to the desktop session) and retry")
        }
        reset()
        if domain == g_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue) {
            return .unavailable("\(what): the D-Bus call timed out and was cancelled; check that the Secret Service "
                + "(gnome-keyring-daemon) is running and responsive")
        }
        return .unavailable("\(what): \(message)")
    }

    /// Drops the service proxy, so that the next call reconnects.
    func reset() {
        service = nil
    }

    /// The default collection, or nil when the service has none.
    func defaultCollection(_ cancellable: Cancellable) throws(CredentialError) -> GObjectRef? {
        let service = try service(cancellable)
        var error: UnsafeMutablePointer<GError>?
        let collection = secret_collection_for_alias_sync(
            service, "default", SECRET_COLLECTION_NONE, cancellable.pointer, &error)
        if let error { throw fail(error, "cannot read the default keyring collection") }
        return collection.map { GObjectRef(UnsafeMutableRawPointer($0)) }
    }

    /// Items matching `attributes`, never prompting unless `unlock`; locked items are included.
    func search(_ attributes: AttributeTable, unlock: Bool, _ cancellable: Cancellable)
        throws(CredentialError) -> [GObjectRef]
    {
        let service = try service(cancellable)
        var flags = SECRET_SEARCH_ALL.rawValue
        if unlock { flags |= SECRET_SEARCH_UNLOCK.rawValue }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(
            service, shopkit_token_schema(), attributes.table, SecretSearchFlags(rawValue: flags),
            cancellable.pointer, &error)
        if let error {
            if let list { g_list_free_full(list) { g_object_unref($0) } }
            throw fail(error, "cannot search the keyring")
        }
        // Take one reference of our own per item, then free the list and the references it held.
        var items: [GObjectRef] = []
        var node = list
        while let current = node {
            if let data = current.pointee.data {
                g_object_ref(data)
                items.append(GObjectRef(data))
            }
            node = current.pointee.next
        }
        if let list { g_list_free_full(list) { g_object_unref($0) } }
        return items
    }
}

/// Owns one reference to a GObject (a SecretService, SecretItem or SecretCollection).
final class GObjectRef {
    let pointer: UnsafeMutableRawPointer

    /// Takes over one reference the caller owns.
    init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }

    deinit { g_object_unref(pointer) }
}

/// Owns one `GHashTable` of string attributes (keys and values copied into it).
final class AttributeTable {
    let table: OpaquePointer

    init(_ attributes: [String: String]) {
        table = shopkit_attributes_new()
        for (key, value) in attributes { shopkit_attributes_insert(table, key, value) }
    }

    /// Copies an item's attributes (`secret_item_get_attributes`) into a dictionary.
    static func of(item: UnsafeMutablePointer<SecretItem>) -> [String: String] {
        guard let table = secret_item_get_attributes(item) else { return [:] }
        defer { g_hash_table_unref(table) }
        var result: [String: String] = [:]
        for name in ["service", "account", "device"] {
            if let value = g_hash_table_lookup(table, name) {
                result[name] = String(cString: value.assumingMemoryBound(to: CChar.self))
            }
        }
        return result
    }

    deinit { g_hash_table_unref(table) }
}

/// Owns one `SecretValue` reference.
final class SecretValueRef {
    let pointer: OpaquePointer

    /// Takes over one reference the caller owns.
    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// Copies the secret into a Swift array; the caller zeroes it after use.
    func copyBytes() -> [UInt8] {
        var length = 0
        guard let bytes = secret_value_get(pointer, &length), length > 0 else { return [] }
        return bytes.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    deinit { secret_value_unref(UnsafeMutableRawPointer(pointer)) }
}
