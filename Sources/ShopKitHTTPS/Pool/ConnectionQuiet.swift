import NIOCore
import ShopKitTLS

#if canImport(Glibc)
import Glibc
#endif

/// Counts every byte the channel reads from its socket (the first handler of a connection's pipeline), so that
/// the kernel's count of bytes received can tell whether any wait unread (``ConnectionQuiet``).
final class ReceivedByteCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// Bytes read from the socket so far.
    private(set) var total: UInt64 = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        total &+= UInt64(unwrapInboundIn(data).readableBytes)
        context.fireChannelRead(data)
    }
}

/// Whether an idle connection is quiet, checked before a request is written on it again (the liveness
/// check curl makes before reusing a connection): no byte from the server waits anywhere (in the socket, in the
/// TLS layer), and the server has not closed its side. A server that said anything after its last response, or
/// closed, gets no request on that connection: it is discarded, and the request goes out on another.
///
/// The socket's side comes from the kernel (Linux `TCP_INFO`): the connection's state (past ESTABLISHED once the
/// server's FIN arrived) and `tcpi_bytes_received`, compared with ``ReceivedByteCounter``.
enum ConnectionQuiet {
    /// Linux's `struct tcp_info` up to `tcpi_bytes_received` (include/uapi/linux/tcp.h): 8 one-byte fields, 24
    /// 32-bit ones, then 64-bit ones; `tcpi_bytes_received` is the fourth of those, at byte 128. Glibc's
    /// declaration stops before it, so the bytes are read as they lie.
    private typealias RawTCPInfo = (
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
        UInt64, UInt64, UInt64, UInt64
    )
    private static let bytesReceivedOffset = 128
    private static let established: UInt8 = 1  // TCP_ESTABLISHED

    /// On the channel's event loop: whether `channel` is quiet. A channel whose kernel state cannot be read
    /// (not a socket) is judged by the TLS layer alone.
    ///
    /// With `closedOnly` (an idle HTTP/2 connection, where a PING, its acknowledgement or a WINDOW_UPDATE may
    /// arrive at any time and harms nobody), only whether the server closed its side counts.
    static func check(_ channel: any Channel, closedOnly: Bool = false) -> Bool {
        guard channel.isActive else { return false }
        let handlers = channel.pipeline.syncOperations
        if !closedOnly, let tls = try? handlers.handler(type: TLSHandler.self), tls.holdsUnreadInput { return false }
        guard let counter = try? handlers.handler(type: ReceivedByteCounter.self),
            let socket = channel as? any SocketOptionProvider
        else { return true }
        #if os(Linux)
        // NIO runs the getsockopt inline on the event loop, so the future is complete when it returns.
        let info: EventLoopFuture<RawTCPInfo> = socket.unsafeGetSocketOption(
            level: SocketOptionLevel(IPPROTO_TCP), name: SocketOptionName(TCP_INFO))
        let kernel = NIOLoopBoundBox<(state: UInt8, received: UInt64)?>(nil, eventLoop: channel.eventLoop)
        info.whenSuccess { raw in
            kernel.value = withUnsafeBytes(of: raw) { bytes in
                (bytes[0], bytes.loadUnaligned(fromByteOffset: bytesReceivedOffset, as: UInt64.self))
            }
        }
        guard let (state, received) = kernel.value else { return true }
        // A kernel older than 4.1 leaves the count at zero: then the state alone speaks.
        return state == established && (closedOnly || received == 0 || received == counter.total)
        #else
        return true
        #endif
    }
}
