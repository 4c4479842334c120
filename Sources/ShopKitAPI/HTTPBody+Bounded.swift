import Foundation
import OpenAPIRuntime

/// A response body was larger than the configured limit, so it was not buffered.
///
/// Carried by ``APIError/transport(_:)``. Raise the limit (`maxResponseBodyBytes` or the
/// configuration's `maxResponseBodyBytes`) if the endpoint legitimately returns more.
public struct ResponseBodyTooLargeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The limit in bytes that the body exceeded.
    public let limit: Int

    /// Creates the error for `limit`.
    package init(limit: Int) { self.limit = limit }

    /// Says which limit was exceeded and how to raise it.
    public var description: String {
        "The response body was larger than the limit of \(limit) bytes and was not read; "
            + "raise maxResponseBodyBytes if this endpoint legitimately returns more."
    }
}

extension HTTPBody {
    /// Reads the whole body into memory, throwing ``ResponseBodyTooLargeError`` as soon as it passes `limit`.
    ///
    /// A declared `Content-Length` over the limit fails before a single byte is read. A body of one chunk (the
    /// dedup decorator's shared buffer) is returned without a copy: the array shares the chunk's storage.
    func collectBounded(limit: Int) async throws -> [UInt8] {
        if case .known(let declared) = length, declared > Int64(limit) {
            throw ResponseBodyTooLargeError(limit: limit)
        }
        var bytes: [UInt8] = []
        for try await chunk in self {
            guard chunk.count <= limit - bytes.count else { throw ResponseBodyTooLargeError(limit: limit) }
            if bytes.isEmpty { bytes = Array(chunk) } else { bytes.append(contentsOf: chunk) }
        }
        return bytes
    }
}

extension HTTPBody {
    /// Reads at most `limit` bytes and leaves the rest unread: enough of an error body for its message.
    func collectPrefix(limit: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in self {
            bytes.append(contentsOf: chunk.prefix(limit - bytes.count))
            if bytes.count >= limit { break }
        }
        return bytes
    }
}

extension Optional where Wrapped == HTTPBody {
    /// `true` when the body is absent or can be iterated again, so the request can be sent another time.
    var isReplayable: Bool {
        guard let body = self else { return true }
        return body.iterationBehavior == .multiple
    }
}
