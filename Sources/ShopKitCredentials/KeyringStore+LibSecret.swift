import CLibSecret
import Foundation

/// The libsecret state of the process: confined to the ``LibSecretThread``, never shared with another thread.
///
/// Holds ShopKit's own `SecretService` proxy (`secret_service_open_sync`, not libsecret's shared default one, which
/// other code in the process may use from other threads) between calls, and a reference to the session-bus
/// connection under it; a D-Bus failure drops both so the next call reconnects.
final class LibSecretSession {
    /// What a failed call said about the Secret Service.
    enum Failure: Equatable {
        /// Nothing to talk to: no session bus, the bus went away, or nothing owns `org.freedesktop.secrets`.
        case noService
        /// The item or collection is locked.
        case locked
        /// Something answered (or holds the name) but failed or did not answer in time.
        case failing
    }

    /// The session bus, held so that GLib's shared connection (kept only weakly by `g_bus_get`) stays the one
    /// with exit-on-close turned off for as long as libsecret uses it.
    private var bus: GObjectRef?
    private var service: GObjectRef?
    /// What the last failure of the current job said; set by ``fail(_:_:connecting:)``.
    private(set) var lastFailure: Failure?

    init() {}

    /// The connected service proxy, opened on first use, never prompting.
    func service(_ cancellable: Cancellable) throws(CredentialError) -> UnsafeMutablePointer<SecretService> {
        if let service { return service.pointer.assumingMemoryBound(to: SecretService.self) }
        var error: UnsafeMutablePointer<GError>?
        if bus == nil {
            // libsecret uses GLib's shared session-bus connection, which by default kills the whole process when
            // the bus goes away; a credential store must report "unavailable" instead. GLib keeps that shared
            // connection only weakly: this reference keeps it (and its setting) alive until `reset()`.
            guard let connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellable.pointer, &error) else {
                throw fail(error, "cannot connect to the D-Bus session bus", connecting: true)
            }
            g_dbus_connection_set_exit_on_close(connection, 0)
            bus = GObjectRef(UnsafeMutableRawPointer(connection))
        }
        guard
            let opened = secret_service_open_sync(
                secret_service_get_type(), nil, SECRET_SERVICE_NONE, cancellable.pointer, &error)
        else { throw fail(error, "cannot reach the Secret Service") }
        service = GObjectRef(UnsafeMutableRawPointer(opened))
        return opened
    }

    /// Whether the connection under the service proxy would end the process when the bus closes (it must not).
    func serviceConnectionExitsOnClose(_ cancellable: Cancellable) throws(CredentialError) -> Bool {
        let proxy = UnsafeMutableRawPointer(try service(cancellable)).assumingMemoryBound(to: GDBusProxy.self)
        return g_dbus_connection_get_exit_on_close(g_dbus_proxy_get_connection(proxy)) != 0
    }

    /// Runs `body`; when it fails because the Secret Service is not on the bus while a proxy was cached (the
    /// daemon went away or was restarted since the last call, and the proxy still names the old one), runs it
    /// once more on a fresh connection. Such a call never reached a service, so repeating it is safe.
    func withReconnect<T>(_ body: () throws(CredentialError) -> T) throws(CredentialError) -> T {
        lastFailure = nil
        let wasConnected = service != nil
        do {
            return try body()
        } catch {
            guard wasConnected, lastFailure == .noService else { throw error }
            lastFailure = nil
            return try body()
        }
    }

    /// Turns a GError into a typed error, frees it, records what it says about the service (``lastFailure``), and
    /// forgets the connection unless the failure was a locked item.
    ///
    /// Only "nothing there" counts as ``Failure/noService``: no session bus (`connecting`), a closed bus
    /// connection, or the bus saying that nothing owns the name (`ServiceUnknown`, `NameHasNoOwner`). A timeout,
    /// a cancelled call or any other error comes from something that is there but failing.
    func fail(_ error: UnsafeMutablePointer<GError>?, _ what: String, connecting: Bool = false) -> CredentialError {
        guard let error else {
            reset()
            lastFailure = .failing
            return .unavailable("\(what): libsecret gave no reason")
        }
        defer { g_error_free(error) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "no message"
        let domain = error.pointee.domain
        let code = error.pointee.code
        if domain == secret_error_get_quark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue) {
            lastFailure = .locked
            return .locked("\(what): \(message); unlock the keyring (e.g. log in to the desktop session) and retry")
        }
        reset()
        if domain == g_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue) {
            lastFailure = .failing
            return .unavailable("\(what): the D-Bus call timed out and was cancelled; check that the Secret Service "
                + "(gnome-keyring-daemon) is running and responsive")
        }
        lastFailure = connecting || Self.meansNoService(domain: domain, code: code) ? .noService : .failing
        return .unavailable("\(what): \(message)")
    }

    /// Whether an error says that there is nothing to talk to (rather than something failing).
    private static func meansNoService(domain: GQuark, code: Int32) -> Bool {
        if domain == g_dbus_error_quark() {
            return [G_DBUS_ERROR_SERVICE_UNKNOWN, G_DBUS_ERROR_NAME_HAS_NO_OWNER, G_DBUS_ERROR_DISCONNECTED]
                .contains { code == Int32($0.rawValue) }
        }
        return domain == g_io_error_quark() && code == Int32(G_IO_ERROR_CLOSED.rawValue)
    }

    /// Drops the service proxy and the bus connection, so that the next call reconnects.
    func reset() {
        service = nil
        bus = nil
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
    func search(_ attributes: AttributeTable, kind: CredentialKind, unlock: Bool, _ cancellable: Cancellable)
        throws(CredentialError) -> [GObjectRef]
    {
        let service = try service(cancellable)
        var flags = SECRET_SEARCH_ALL.rawValue
        if unlock { flags |= SECRET_SEARCH_UNLOCK.rawValue }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(
            service, KeyringStore.schema(kind), attributes.table, SecretSearchFlags(rawValue: flags),
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

    /// Lends the secret's bytes in libsecret's own memory (no copy).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(CredentialError) -> R) throws(CredentialError) -> R {
        var length = 0
        let bytes = secret_value_get(pointer, &length)
        return try body(UnsafeRawBufferPointer(start: bytes.map { UnsafeRawPointer($0) }, count: bytes == nil ? 0 : length))
    }

    deinit { secret_value_unref(UnsafeMutableRawPointer(pointer)) }
}
