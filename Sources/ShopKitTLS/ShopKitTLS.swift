// The pinned HTTPS transport: a NIO channel handler over ShopKitOpenSSL and a ClientTransport.
