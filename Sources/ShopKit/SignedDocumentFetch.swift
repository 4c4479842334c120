import Foundation
import HTTPTypes
import OpenAPIRuntime
import ShopKitHTTPS
import ShopKitPinning
import ShopKitTLS

/// One GET of a signed document (compact JWS) through an app's transport, as `PinUpdates` and `CTLogListUpdates`
/// fetch theirs: unpinned (a transport of the app's configuration without pins and without Certificate
/// Transparency, the chain and host name verified: the signature carries the trust, so a document can still fix
/// pins or a log list that broke) or pinned (through the app's transport itself).
struct SignedDocumentFetch: Sendable {
    /// The app's transport: its configuration (trust roots, proxy, timeouts), and itself for a pinned fetch.
    let transport: HTTPSTransport
    /// Where the document is.
    let url: URL
    let mode: PinUpdates.DocumentFetch
    /// What the document is, for messages ("pin-set document", "CT log-list document").
    let documentKind: String
    /// The operation id the transport's logs and metrics name.
    let operationID: String
    /// Where the unpinned transport is built (loading trust roots reads files).
    let io: DispatchQueue

    /// GET `url`; the body of a 200 response, at most a document's size.
    func callAsFunction() async throws -> String {
        let invalid = HTTPSTransportError.invalidURL(
            reason: "\(url.absoluteString) is not a URL the \(documentKind) can be fetched from")
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { throw invalid }
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        components.percentEncodedPath = ""
        components.percentEncodedQuery = nil
        guard let base = components.url else { throw invalid }
        var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
        request.headerFields[.accept] = "application/jose"
        let ownClient = mode == .unpinned
        let client = ownClient ? try await unpinnedTransport() : transport
        do {
            let (response, body) = try await client.send(request, body: nil, baseURL: base, operationID: operationID)
            guard response.status == .ok else {
                throw UnexpectedStatus(status: response.status.code, url: url, documentKind: documentKind)
            }
            var bytes: [UInt8] = []
            if let body { bytes = try await [UInt8](collecting: body, upTo: CompactJWS.maximumLength) }
            if ownClient { await client.shutdown() }
            return String(decoding: bytes, as: UTF8.self)
        } catch {
            if ownClient { await client.shutdown() }
            throw error
        }
    }

    /// A transport for one fetch: the app transport's configuration (trust roots, proxy, timeouts) without pins
    /// and without CT. Built on `io`: loading trust roots reads files.
    private func unpinnedTransport() async throws -> HTTPSTransport {
        var unpinned = transport.configuration
        unpinned.tls.pinning = PinningPolicy()
        unpinned.tls.certificateTransparency.defaultMode = .disabled
        unpinned.tls.certificateTransparency.rules = []
        let configuration = unpinned
        let made: Result<HTTPSTransport, TLSContextError> = await withCheckedContinuation { continuation in
            io.async {
                continuation.resume(returning: Result { () throws(TLSContextError) in try HTTPSTransport(configuration: configuration) })
            }
        }
        return try made.get()
    }
}

/// The document URL answered with another status than 200 (the server's fault, or a wrong URL).
struct UnexpectedStatus: Error, CustomStringConvertible {
    let status: Int
    let url: URL
    var documentKind = "pin-set document"
    var description: String { "\(url.absoluteString) answered HTTP \(status), not 200 with a \(documentKind)" }
}
