import Foundation

/// The one error ``APIClient`` throws: a closed set of cases the UI can switch on.
///
/// It is `Equatable` honestly: two values are equal only when they describe the same outcome (see
/// ``==(_:_:)`` for how `transport` causes compare). Descriptions say what happened and never contain a token.
public enum APIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server rejected the credentials (401) even after the auth decorator's one refresh and replay, or the
    /// user is signed out. Show the sign-in screen.
    case unauthorized
    /// The server understood who the user is but refuses the action (403).
    case forbidden
    /// The resource does not exist (404).
    case notFound
    /// The server asked the client to slow down (429); `retryAfter` is its `Retry-After`, when it sent one.
    case rateLimited(retryAfter: Duration?)
    /// Any other non-2xx status (other 4xx, 5xx, or an unexpected 1xx/3xx), with the server's short error
    /// message when its JSON body had a `message` or `error` string.
    case server(status: Int, message: String?)
    /// A 2xx body was not the expected JSON; names the type and the coding path.
    case decoding(DecodingFailure)
    /// The request did not complete: the transport's own typed cause (a TLS pin mismatch, a refused connection,
    /// a body over the size limit, …).
    case transport(any Error & Sendable)
    /// The calling task was cancelled.
    case cancelled

    /// What happened, for logs and error reports; never contains a token.
    public var description: String {
        switch self {
        case .unauthorized:
            return "The request needs a signed-in user: there are no stored credentials, or the server rejected "
                + "them (401) and one refresh did not help; sign in again."
        case .forbidden:
            return "The server refused the request (403): the signed-in user may not do this."
        case .notFound:
            return "The server has no such resource (404)."
        case .rateLimited(let retryAfter):
            let wait = retryAfter.map { " Retry after \($0)." } ?? ""
            return "The server is rate limiting this client (429).\(wait)"
        case .server(let status, let message):
            let detail = message.map { ": \($0)" } ?? "."
            return "The server answered with status \(status)\(detail)"
        case .decoding(let failure):
            return failure.description
        case .transport(let cause):
            return "The request did not complete: \(cause)"
        case .cancelled:
            return "The request was cancelled."
        }
    }

    /// Compares two errors case by case.
    ///
    /// For ``transport(_:)`` the causes are compared like this:
    /// - when the left cause's type is `Equatable`, the causes are equal only if the right one has the same type
    ///   and `==` says so (the existential is opened; no casts that could succeed for different types);
    /// - otherwise they must have the same dynamic type, and then a class instance is equal only to itself
    ///   (identity), while a value is compared by its full structure (every stored property, recursively, as
    ///   `dump` shows it), never by its description, which may leave fields out.
    ///
    /// So two different causes never compare equal, while the same non-`Equatable` error thrown twice does.
    public static func == (lhs: APIError, rhs: APIError) -> Bool {
        switch (lhs, rhs) {
        case (.unauthorized, .unauthorized), (.forbidden, .forbidden), (.notFound, .notFound),
            (.cancelled, .cancelled):
            return true
        case (.rateLimited(let l), .rateLimited(let r)):
            return l == r
        case (.server(let ls, let lm), .server(let rs, let rm)):
            return ls == rs && lm == rm
        case (.decoding(let l), .decoding(let r)):
            return l == r
        case (.transport(let l), .transport(let r)):
            return causesAreEqual(l, r)
        default:
            return false
        }
    }
}

/// Why a 2xx body could not be decoded: the expected type, where in the JSON, and what was wrong there.
public struct DecodingFailure: Sendable, Equatable, CustomStringConvertible {
    /// The Swift type that was being decoded, e.g. `Product`.
    public let typeName: String
    /// The coding path to the failing value, e.g. `items[2].price`; empty for the top level.
    public let codingPath: String
    /// What the decoder reported.
    public let reason: String

    /// Creates a failure from its parts.
    package init(typeName: String, codingPath: String, reason: String) {
        self.typeName = typeName
        self.codingPath = codingPath
        self.reason = reason
    }

    /// Describes `error` (normally a `DecodingError`) met while decoding `type`.
    package init(decoding type: Any.Type, error: any Error) {
        typeName = String(describing: type)
        switch error as? DecodingError {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            codingPath = Self.render(context.codingPath)
            reason = context.debugDescription
        case .keyNotFound(let key, let context):
            codingPath = Self.render(context.codingPath + [key])
            reason = "The key is missing. " + context.debugDescription
        case nil:
            codingPath = ""
            reason = String(describing: error)
        @unknown default:
            codingPath = ""
            reason = String(describing: error)
        }
    }

    /// The expected type, the coding path and the decoder's reason.
    public var description: String {
        let location = codingPath.isEmpty ? "at the top level" : "at \(codingPath)"
        return "The response is not the expected \(typeName) JSON \(location): \(reason)"
    }

    /// Renders a coding path as `items[2].price`.
    static func render(_ path: [any CodingKey]) -> String {
        var rendered = ""
        for key in path {
            if let index = key.intValue {
                rendered += "[\(index)]"
            } else {
                rendered += rendered.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return rendered
    }
}

/// The comparison documented on `APIError.==`.
func causesAreEqual(_ lhs: any Error, _ rhs: any Error) -> Bool {
    let opened: Any = lhs  // cast from Any: the compiler must not fold the check for `any Error`
    if let equatable = opened as? any Equatable {
        return equatable.isEqual(toAny: rhs)
    }
    guard ObjectIdentifier(type(of: lhs)) == ObjectIdentifier(type(of: rhs)) else { return false }
    if type(of: lhs) is AnyClass { return (lhs as AnyObject) === (rhs as AnyObject) }
    return structure(of: lhs) == structure(of: rhs)
}

/// Every stored property of `value`, recursively, as `dump` renders it (a description may leave fields out).
private func structure(of value: Any) -> String {
    var text = ""
    dump(value, to: &text)
    return text
}

extension Equatable {
    /// `self == other` when `other` has exactly this type; `false` otherwise.
    fileprivate func isEqual(toAny other: Any) -> Bool {
        guard ObjectIdentifier(type(of: other)) == ObjectIdentifier(Self.self), let other = other as? Self else { return false }
        return self == other
    }
}
