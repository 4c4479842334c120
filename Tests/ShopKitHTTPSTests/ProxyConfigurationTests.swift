import Foundation
import Testing
@testable import ShopKitHTTPS

/// `NO_PROXY` as curl reads it, the opt-in environment reading, redaction of the password, and the route in the
/// pool key: pure tests.
@Suite(.timeLimit(.minutes(3))) struct ProxyConfigurationTests {
    @Test func noProxyMatchesDomainsAndSubdomainsOnly() {
        let rules = NoProxyRules("example.com, .corp.test,Internal.Lan")
        #expect(rules.matches(host: "example.com", port: 443))
        #expect(rules.matches(host: "api.example.com", port: 443))
        #expect(rules.matches(host: "API.Example.COM.", port: 443))
        #expect(!rules.matches(host: "badexample.com", port: 443))
        #expect(rules.matches(host: "corp.test", port: 443))
        #expect(rules.matches(host: "a.b.corp.test", port: 8443))
        #expect(rules.matches(host: "internal.lan", port: 443))
        #expect(!rules.matches(host: "example.org", port: 443))
    }

    @Test func noProxyStarMatchesEverythingAndEmptyNothing() {
        #expect(NoProxyRules("*").matches(host: "anything.test", port: 1))
        #expect(!NoProxyRules("").matches(host: "anything.test", port: 1))
        #expect(!NoProxyRules(" , ,").matches(host: "anything.test", port: 1))
    }

    @Test func noProxyPortsRestrictTheMatch() {
        let rules = NoProxyRules("example.com:8443,[::1]:443,10.1.2.3:80")
        #expect(rules.matches(host: "api.example.com", port: 8443))
        #expect(!rules.matches(host: "api.example.com", port: 443))
        #expect(rules.matches(host: "::1", port: 443))
        #expect(!rules.matches(host: "::1", port: 8443))
        #expect(rules.matches(host: "10.1.2.3", port: 80))
        #expect(!rules.matches(host: "10.1.2.3", port: 443))
    }

    @Test func noProxyIPLiteralsAreExactOrCIDR() {
        let rules = NoProxyRules("127.0.0.1,10.0.0.0/8,fd00::/8,::1")
        #expect(rules.matches(host: "127.0.0.1", port: 443))
        #expect(!rules.matches(host: "127.0.0.2", port: 443))
        #expect(rules.matches(host: "10.200.3.4", port: 443))
        #expect(!rules.matches(host: "11.0.0.1", port: 443))
        #expect(rules.matches(host: "fd12::5", port: 443))
        #expect(rules.matches(host: "[::1]", port: 443))
        #expect(!rules.matches(host: "fe80::1", port: 443))
        // An IP is never a domain suffix, and a name never matches an address rule.
        #expect(!NoProxyRules("0.0.1").matches(host: "10.0.0.1", port: 443))
        #expect(!rules.matches(host: "127.0.0.1.example.com", port: 443))
    }

    @Test func environmentIsReadOnlyWhenAskedAndLowercaseWins() throws {
        #expect(try ProxyConfiguration.fromEnvironment([:]) == nil)
        #expect(try ProxyConfiguration.fromEnvironment(["HTTPS_PROXY": "  "]) == nil)
        // http_proxy is for http URLs: never used for https.
        #expect(try ProxyConfiguration.fromEnvironment(["http_proxy": "http://p:1"]) == nil)
        let proxy = try #require(
            try ProxyConfiguration.fromEnvironment([
                "https_proxy": "http://lower.test:3128", "HTTPS_PROXY": "http://upper.test:3128",
                "no_proxy": "localhost,.internal", "NO_PROXY": "*",
            ]))
        #expect(proxy.host == "lower.test" && proxy.port == 3128 && proxy.scheme == .http)
        #expect(proxy.applies(toHost: "api.shop.test", port: 443))
        #expect(!proxy.applies(toHost: "db.internal", port: 443))
        #expect(!proxy.applies(toHost: "localhost", port: 8443))
    }

    @Test func environmentWithoutSchemeIsHTTPAndCredentialsAreDecoded() throws {
        let proxy = try #require(try ProxyConfiguration.fromEnvironment(["HTTPS_PROXY": "user%40corp:p%3Ass@proxy.corp:8080"]))
        #expect(proxy.scheme == .http && proxy.host == "proxy.corp" && proxy.port == 8080)
        #expect(proxy.credentials == ProxyConfiguration.Credentials(username: "user@corp", password: "p:ss"))
        #expect(proxy.credentials?.authorizationValue == "Basic " + Data("user@corp:p:ss".utf8).base64EncodedString())
    }

    @Test func badEnvironmentValuesThrowWithoutEchoingThem() {
        #expect(throws: HTTPSTransportError.invalidProxy(reason: "https_proxy: the proxy URL's scheme must be http or https (got socks5)")) {
            _ = try ProxyConfiguration.fromEnvironment(["https_proxy": "socks5://u:secret@p:1080"])
        }
        #expect(throws: HTTPSTransportError.self) {
            _ = try ProxyConfiguration.fromEnvironment(["HTTPS_PROXY": "http://u:secret@p:1080/path"])
        }
    }

    @Test func thePasswordIsNeverPrinted() throws {
        let proxy = try ProxyConfiguration(
            url: URL(string: "https://alice:hunter2@proxy.corp")!, noProxy: NoProxyRules("localhost"))
        #expect(proxy.port == 443 && proxy.scheme == .https)
        var dumped = ""
        dump(proxy, to: &dumped)
        for text in ["\(proxy)", String(reflecting: proxy), "\(String(describing: proxy.credentials))",
            String(reflecting: proxy.credentials), dumped]
        {
            #expect(!text.contains("hunter2"), "\(text)")
        }
        #expect("\(proxy)" == "https://proxy.corp:443 (with credentials)")
        #expect(proxy.credentials?.description == "alice:<redacted>")
    }

    @Test func theRouteIsPartOfThePoolKey() throws {
        let proxy = try ProxyConfiguration(url: URL(string: "http://proxy.corp:3128")!, noProxy: NoProxyRules("direct.test"))
        let other = try ProxyConfiguration(url: URL(string: "http://other.corp:3128")!)
        let target = try RequestTarget(baseURL: URL(string: "https://api.shop.test")!)
        let tunnelled = target.routed(through: proxy)
        #expect(tunnelled.route == .tunnel(proxy))
        #expect(tunnelled != target)
        #expect(tunnelled != target.routed(through: other))
        #expect(target.routed(through: nil) == target)
        let bypassed = try RequestTarget(baseURL: URL(string: "https://api.direct.test")!).routed(through: proxy)
        #expect(bypassed.route == .direct)
        // Same origin and route: the same key, so the connection is shared.
        #expect(try RequestTarget(baseURL: URL(string: "https://API.shop.test:443/v1")!).routed(through: proxy) == tunnelled)
    }
}
