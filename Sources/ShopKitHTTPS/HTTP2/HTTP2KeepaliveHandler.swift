import Logging
import NIOCore
import NIOHTTP2

/// Finds dead HTTP/2 connections: after `interval` with no frame from the server, it sends a PING; if the
/// server does not acknowledge it within `timeout`, the connection is closed and its open streams fail with
/// ``HTTPSTransportError/timeout(_:)`` `.ping`. A connection idle in the pool whose peer vanished (a NAT or
/// load balancer that forgot it, a host that went away) is thus dropped before a request is put on it, and a
/// stream waiting on a vanished peer fails within `interval + timeout` even if its idle-read timeout is longer.
///
/// It sits between swift-nio-http2's connection handler and ``HTTP2ConnectionHandler``, sees every inbound frame, and
/// does no work per frame beyond noting the time: the timer checks silence when it fires.
final class HTTP2KeepaliveHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let interval: TimeAmount
    private let timeout: TimeAmount
    private let logger: Logger
    /// Records why the handler closed the connection, for the streams that fail with it.
    private let closed: (HTTPSTransportError) -> Void
    private var lastRead: NIODeadline = .uptimeNanoseconds(0)
    private var timer: Scheduled<Void>?
    /// The PING sent and not yet acknowledged.
    private var outstanding: HTTP2PingData?
    private var pingsSent: UInt64 = 0

    init(interval: TimeAmount, timeout: TimeAmount, logger: Logger, closed: @escaping (HTTPSTransportError) -> Void) {
        self.interval = interval
        self.timeout = timeout
        self.logger = logger
        self.closed = closed
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastRead = context.eventLoop.now
        if case .ping(let payload, ack: true) = frame.payload, payload == outstanding {
            outstanding = nil
            schedule(context: context, at: lastRead + interval)
        }
        context.fireChannelRead(data)
    }

    private func start(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        lastRead = context.eventLoop.now
        schedule(context: context, at: lastRead + interval)
    }

    private func stop() {
        timer?.cancel()
        timer = nil
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer?.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.fire(context: context)
        }
    }

    /// The timer fired: either the silence check (no PING outstanding) or the acknowledgement's deadline.
    private func fire(context: ChannelHandlerContext) {
        timer = nil
        let now = context.eventLoop.now
        if outstanding != nil {
            logger.notice(
                "closing an HTTP/2 connection: the server did not acknowledge a PING",
                metadata: ["timeout": "\(timeout)"])
            closed(.timeout(.ping))
            context.close(promise: nil)
            return
        }
        guard now >= lastRead + interval else {
            schedule(context: context, at: lastRead + interval)
            return
        }
        pingsSent &+= 1
        let ping = HTTP2PingData(withInteger: pingsSent)
        outstanding = ping
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(ping, ack: false))), promise: nil)
        schedule(context: context, at: now + timeout)
    }
}
