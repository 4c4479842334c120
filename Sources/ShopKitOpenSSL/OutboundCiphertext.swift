import COpenSSL

/// The write side of a connection: a custom BIO through which OpenSSL hands each record it wrote for the peer
/// straight to the caller's sink (normally appending it to the NIO `ByteBuffer` that goes to the socket).
///
/// A memory BIO copied every record in (growing and zeroing its buffer) and copied it out again into the
/// caller's buffer: two passes over every sent byte. Here the record goes from OpenSSL's record buffer to the
/// sink, once. Without a sink (tests, the fuzz harness) the bytes are kept until ``take(into:)`` reads them.
///
/// Not thread-safe: it belongs to one ``OpenSSLConnection``, which belongs to one event loop.
final class OutboundCiphertext {
    /// Where records go as OpenSSL writes them; nil keeps them in `kept`.
    private var sink: ((UnsafeRawBufferPointer) -> Void)?
    /// Records written while there was no sink, unread from `keptStart` on.
    private var kept: [UInt8] = []
    private var keptStart = 0

    /// Bytes kept for ``take(into:)`` (always zero while a sink is set).
    var count: Int { kept.count - keptStart }

    /// Sets where the records go from now on. Bytes kept before go to the new sink first, so the order holds.
    func setSink(_ newSink: ((UnsafeRawBufferPointer) -> Void)?) {
        sink = newSink
        guard let newSink, count > 0 else { return }
        kept.withUnsafeBytes { newSink(UnsafeRawBufferPointer(rebasing: $0[keptStart...])) }
        kept.removeAll()
        keptStart = 0
    }

    /// OpenSSL wrote `bytes` (one record, or part of a flight): to the sink, or kept.
    func write(_ bytes: UnsafeRawBufferPointer) {
        if let sink {
            sink(bytes)
        } else {
            kept.append(contentsOf: bytes)
        }
    }

    /// Moves up to `capacity` kept bytes to `destination`, oldest first; returns how many.
    func take(into destination: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let n = min(capacity, count)
        guard n > 0 else { return 0 }
        kept.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress! + keptStart, byteCount: n) }
        keptStart += n
        if keptStart == kept.count {
            kept.removeAll(keepingCapacity: kept.capacity <= 1 << 16)
            keptStart = 0
        }
        return n
    }

    /// A new BIO writing to `self`, which must outlive it (the BIO keeps an unretained pointer). The caller
    /// owns the BIO (normally handing it to `SSL_set_bio`).
    func makeBIO() -> OpaquePointer? {
        guard let method = OutboundCiphertext.method.pointer, let bio = BIO_new(method) else { return nil }
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        return bio
    }

    /// The BIO method, made once for the process and never freed.
    private static let method = OutboundBIOMethod()
}

/// Owns the process-wide `BIO_METHOD` of ``OutboundCiphertext``.
private final class OutboundBIOMethod: @unchecked Sendable {
    // @unchecked Sendable: `pointer` is set once in `init` and never changed; OpenSSL only reads a BIO_METHOD
    // after its setters ran, and this one lives (is never freed) until the process exits.
    let pointer: OpaquePointer?

    init() {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "ShopKit outbound ciphertext")
        else {
            pointer = nil
            return
        }
        BIO_meth_set_write(method, outboundWrite)
        BIO_meth_set_ctrl(method, outboundControl)
        BIO_meth_set_create(method, outboundCreate)
        BIO_meth_set_destroy(method, outboundDestroy)
        pointer = method
    }
}

/// `BIO_write`: every byte is taken at once (the sink never pushes back, as a memory BIO never did).
private let outboundWrite: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
    bio, source, count in
    guard let bio, let source, count > 0 else { return 0 }
    shopkit_BIO_clear_retry_flags(bio)
    guard let raw = BIO_get_data(bio) else { return -1 }
    // The connection owns the OutboundCiphertext and frees its SSL (and so this BIO) before releasing it.
    let outbound = Unmanaged<OutboundCiphertext>.fromOpaque(raw).takeUnretainedValue()
    outbound.write(UnsafeRawBufferPointer(start: source, count: Int(count)))
    return count
}

/// `BIO_ctrl`: the kept count for `BIO_wpending` / `BIO_pending`, success for flush, nothing else.
private let outboundControl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = {
    bio, command, _, _ in
    switch command {
    case BIO_CTRL_PENDING, BIO_CTRL_WPENDING:
        guard let bio, let raw = BIO_get_data(bio) else { return 0 }
        return Unmanaged<OutboundCiphertext>.fromOpaque(raw).takeUnretainedValue().count
    case BIO_CTRL_FLUSH:
        return 1
    default:
        return 0
    }
}

private let outboundCreate: @convention(c) (OpaquePointer?) -> Int32 = { bio in
    guard let bio else { return 0 }
    BIO_set_init(bio, 1)
    return 1
}

private let outboundDestroy: @convention(c) (OpaquePointer?) -> Int32 = { bio in
    guard let bio else { return 0 }
    BIO_set_data(bio, nil)
    BIO_set_init(bio, 0)
    return 1
}
