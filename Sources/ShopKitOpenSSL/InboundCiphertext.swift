import COpenSSL

/// The read side of a connection: a custom BIO from which OpenSSL reads the peer's ciphertext straight out of
/// the caller's buffer.
///
/// A memory BIO would copy every received byte in (zero-filling its buffer as it grows, `BUF_MEM_grow_clean`)
/// and copy it out again when OpenSSL reads a record: for a large response that was two of the client's five
/// passes over each byte. Here OpenSSL copies from the lent buffer into its record buffer, once. Bytes it has not
/// consumed when the loan ends (normally part of a record) are copied and kept, and served first next time.
///
/// Not thread-safe: it belongs to one ``OpenSSLConnection``, which belongs to one event loop.
final class InboundCiphertext {
    /// The buffer lent by ``lend(_:_:)``, from its first unread byte; empty outside a loan.
    private var lent = UnsafeRawBufferPointer(start: nil, count: 0)
    /// Whether a loan is running (a nested one copies its bytes instead).
    private var lending = false
    /// Bytes kept from earlier loans or handed over by ``append(_:)``, unread from `carriedStart` on.
    private var carried: [UInt8] = []
    private var carriedStart = 0

    /// Bytes not read by OpenSSL yet.
    var count: Int { carried.count - carriedStart + lent.count }

    /// Keeps a copy of `bytes` for OpenSSL to read after everything it has not read yet (during a loan, after
    /// the rest of the lent buffer, which is copied first so the order holds).
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        keepLent()
        carried.append(contentsOf: bytes)
    }

    /// Copies the unread rest of the lent buffer to the kept bytes and ends the loan of it.
    private func keepLent() {
        if carriedStart > 0 {
            carried.removeFirst(carriedStart)
            carriedStart = 0
        }
        carried.append(contentsOf: lent)
        lent = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// Lends `bytes` to OpenSSL while `body` runs its steps; what it leaves unread is copied and kept.
    ///
    /// - Warning: `bytes` must stay valid while `body` runs, and no step may run on another thread meanwhile.
    func lend<T>(_ bytes: UnsafeRawBufferPointer, _ body: () -> T) -> T {
        if lending {
            append(bytes)
            return body()
        }
        lending = true
        lent = bytes
        defer {
            keepLent()
            lending = false
        }
        return body()
    }

    /// Moves up to `capacity` unread bytes to `destination`, kept bytes first; returns how many.
    func read(into destination: UnsafeMutableRawPointer, capacity: Int) -> Int {
        var written = 0
        if carriedStart < carried.count {
            let n = min(capacity, carried.count - carriedStart)
            carried.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress! + carriedStart, byteCount: n) }
            carriedStart += n
            written = n
            if carriedStart == carried.count {
                carried.removeAll(keepingCapacity: carried.capacity <= 1 << 16)
                carriedStart = 0
            }
        }
        if written < capacity, let base = lent.baseAddress, !lent.isEmpty {
            let n = min(capacity - written, lent.count)
            (destination + written).copyMemory(from: base, byteCount: n)
            lent = UnsafeRawBufferPointer(rebasing: lent[n...])
            written += n
        }
        return written
    }

    /// A new BIO reading from `self`, which must outlive it (the BIO keeps an unretained pointer). The caller
    /// owns the BIO (normally handing it to `SSL_set_bio`).
    func makeBIO() -> OpaquePointer? {
        guard let method = InboundCiphertext.method.pointer, let bio = BIO_new(method) else { return nil }
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        return bio
    }

    /// The BIO method, made once for the process and never freed.
    private static let method = BIOMethod()
}

/// Owns the process-wide `BIO_METHOD` of ``InboundCiphertext``.
private final class BIOMethod: @unchecked Sendable {
    // @unchecked Sendable: `pointer` is set once in `init` and never changed; OpenSSL only reads a BIO_METHOD
    // after its setters ran, and this one lives (is never freed) until the process exits.
    let pointer: OpaquePointer?

    init() {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "ShopKit inbound ciphertext")
        else {
            pointer = nil
            return
        }
        BIO_meth_set_read(method, inboundRead)
        BIO_meth_set_ctrl(method, inboundControl)
        BIO_meth_set_create(method, inboundCreate)
        BIO_meth_set_destroy(method, inboundDestroy)
        pointer = method
    }
}

/// `BIO_read`: bytes from the connection's ``InboundCiphertext``, or "retry" when there are none (never EOF: the
/// transport reports the TCP close itself).
private let inboundRead: @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int32) -> Int32 = {
    bio, destination, capacity in
    guard let bio, let destination, capacity > 0 else { return 0 }
    shopkit_BIO_clear_retry_flags(bio)
    guard let raw = BIO_get_data(bio) else { return 0 }
    // The connection owns the InboundCiphertext and frees its SSL (and so this BIO) before releasing it.
    let inbound = Unmanaged<InboundCiphertext>.fromOpaque(raw).takeUnretainedValue()
    let count = inbound.read(into: UnsafeMutableRawPointer(destination), capacity: Int(capacity))
    guard count > 0 else {
        shopkit_BIO_set_retry_read(bio)
        return -1
    }
    return Int32(count)
}

/// `BIO_ctrl`: the unread count for `BIO_pending`, success for flush, nothing else.
private let inboundControl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = {
    bio, command, _, _ in
    switch command {
    case BIO_CTRL_PENDING:
        guard let bio, let raw = BIO_get_data(bio) else { return 0 }
        return Unmanaged<InboundCiphertext>.fromOpaque(raw).takeUnretainedValue().count
    case BIO_CTRL_FLUSH:
        return 1
    default:
        return 0
    }
}

private let inboundCreate: @convention(c) (OpaquePointer?) -> Int32 = { bio in
    guard let bio else { return 0 }
    BIO_set_init(bio, 1)
    return 1
}

private let inboundDestroy: @convention(c) (OpaquePointer?) -> Int32 = { bio in
    guard let bio else { return 0 }
    BIO_set_data(bio, nil)
    BIO_set_init(bio, 0)
    return 1
}
