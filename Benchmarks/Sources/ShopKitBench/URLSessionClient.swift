import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// URLSession from FoundationNetworking (libcurl over the system OpenSSL on Linux).
///
/// It cannot pin: on Linux, FoundationNetworking never asks the delegate about server trust. Nor can it be
/// told to trust a root: it points libcurl's CAINFO at the system bundle
/// (`/etc/ssl/certs/ca-certificates.crt` on Debian) with no API to change it. So scripts/bench runs this client
/// in a private mount namespace (`unshare -m`) in which that one file is bind-mounted to the benchmark root:
/// verification stays fully on, the process trusts only the test root, and nothing outside the process changes.
final class URLSessionBenchClient: BenchClient {
    private let session: URLSession
    private let baseURL: String

    init(baseURL: String, connections: Int) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = connections
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 30
        self.session = URLSession(configuration: configuration)
        self.baseURL = baseURL
    }

    func get(_ path: String, closeConnection: Bool) async throws -> Int {
        guard let url = URL(string: baseURL + path) else { throw BenchFailure("bad URL \(baseURL + path)") }
        var request = URLRequest(url: url)
        if closeConnection { request.setValue("close", forHTTPHeaderField: "Connection") }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse, http.statusCode == 200 else {
            throw BenchFailure("URLSession: unexpected response \(response)")
        }
        return data.count
    }

    func shutdown() async throws { session.invalidateAndCancel() }
}
