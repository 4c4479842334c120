import NIOHTTP2

/// HTTP/2 frames as bytes (RFC 9113 §4.1), for a server that breaks the protocol on purpose: header fields are
/// HPACK literals without indexing (RFC 7541 §6.2.2), names and values shorter than 127 bytes.
package enum RawHTTP2Frame {
    /// A HEADERS frame with END_HEADERS (and END_STREAM when `endStream`).
    package static func headers(_ streamID: HTTP2StreamID, _ fields: [(String, String)], endStream: Bool) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            block.append(0x00)
            for string in [name, value] {
                precondition(string.utf8.count < 127)
                block.append(UInt8(string.utf8.count))
                block += Array(string.utf8)
            }
        }
        return frame(type: 0x1, flags: 0x4 | (endStream ? 0x1 : 0), streamID, block)
    }

    /// A DATA frame (END_STREAM when `endStream`).
    package static func data(_ streamID: HTTP2StreamID, _ payload: [UInt8], endStream: Bool) -> [UInt8] {
        frame(type: 0x0, flags: endStream ? 0x1 : 0, streamID, payload)
    }

    /// A SETTINGS frame with no settings (the defaults), not an acknowledgement.
    package static func settings() -> [UInt8] {
        frame(type: 0x4, flags: 0, .rootStream, [])
    }

    /// A PING frame carrying `data` (not an acknowledgement).
    package static func ping(_ data: UInt64) -> [UInt8] {
        frame(type: 0x6, flags: 0, .rootStream, (0..<8).map { UInt8(data >> (56 - 8 * $0) & 0xFF) })
    }

    /// The frames in `bytes` (after the client preface, if any, was skipped by the caller): each frame's type,
    /// flags, stream id and payload; a partial frame at the end is left out.
    package static func parse(_ bytes: ArraySlice<UInt8>) -> [(type: UInt8, flags: UInt8, streamID: UInt32, payload: ArraySlice<UInt8>)] {
        var frames: [(type: UInt8, flags: UInt8, streamID: UInt32, payload: ArraySlice<UInt8>)] = []
        var rest = bytes
        while rest.count >= 9 {
            let header = Array(rest.prefix(9))
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            guard rest.count >= 9 + length else { break }
            let id = (UInt32(header[5]) & 0x7F) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])
            frames.append((header[3], header[4], id, rest.dropFirst(9).prefix(length)))
            rest = rest.dropFirst(9 + length)
        }
        return frames
    }

    private static func frame(type: UInt8, flags: UInt8, _ streamID: HTTP2StreamID, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        let id = UInt32(Int32(streamID))
        return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
            + [UInt8(id >> 24 & 0x7F), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF)] + payload
    }
}
