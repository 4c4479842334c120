import NIOCore

/// Opens a `CONNECT` tunnel on a channel connected to a proxy (behind the proxy's TLS handler for an `https://`
/// proxy): sends the request when added, reads the proxy's response head, and removes itself once the tunnel is
/// open, so that the origin's TLS handler added next talks to the origin through it.
///
/// Its deadline lives here, with what it races: a proxy that does not answer within `timeout` fails the tunnel
/// with ``HTTPSTransportError/timeout(_:)`` (`.connect`).
///
/// - Warning: The request may carry `Proxy-Authorization`; neither it nor the proxy's response is logged.
package final class ProxyTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private var machine: ProxyTunnelStateMachine
    /// The `CONNECT` request still to send, or why none can be.
    private var request: Result<[UInt8], HTTPSTransportError>?
    private var promise: EventLoopPromise<Void>?
    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    /// A handler that asks the proxy at `proxyHost`:`proxyPort` for a tunnel to `host`:`port`.
    ///
    /// - Parameter authorization: the `Proxy-Authorization` value, if any.
    package init(
        host: String, port: Int, proxyHost: String, proxyPort: Int, authorization: String?, timeout: TimeAmount,
        promise: EventLoopPromise<Void>
    ) {
        self.machine = ProxyTunnelStateMachine(proxyHost: proxyHost, proxyPort: proxyPort)
        self.request = Result { () throws(HTTPSTransportError) in
            try ProxyTunnelStateMachine.request(for: RequestTarget(host: host, port: port), authorization: authorization)
        }
        self.timeout = timeout
        self.promise = promise
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = bound.value
            handler.timer = nil
            handler.carryOut(.fail(.timeout(.connect)), context: context)
        }
        if context.channel.isActive { sendRequest(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        sendRequest(context: context)
        context.fireChannelActive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let action = buffer.withUnsafeReadableBytes { machine.received($0) }
        carryOut(action, context: context)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        carryOut(machine.closed(), context: context)
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS error of an https:// proxy's connection, or a socket error: the proxy's, not the origin's.
        guard promise != nil else { return context.fireErrorCaught(error) }
        carryOut(machine.errorCaught("\(error)"), context: context)
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
        if let promise {
            self.promise = nil
            promise.fail(HTTPSTransportError.proxyClosed)
        }
    }

    private func sendRequest(context: ChannelHandlerContext) {
        guard let pending = request else { return }
        request = nil
        let bytes: [UInt8]
        switch pending {
        case .success(let request): bytes = request
        case .failure(let error): return carryOut(.fail(error), context: context)
        }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private func carryOut(_ action: ProxyTunnelStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .wait:
            return
        case .established:
            cancelTimer()
            let promise = self.promise
            self.promise = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            promise?.succeed()
        case .fail(let error):
            cancelTimer()
            guard let promise else { return }
            self.promise = nil
            context.close(promise: nil)
            promise.fail(error)
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}
