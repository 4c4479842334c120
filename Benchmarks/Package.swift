// swift-tools-version:6.0
// ShopKit benchmarks: ShopKit's transport beside AsyncHTTPClient, URLSession, wrk and openssl s_time.
//
// Its own package so that library users never pull in AsyncHTTPClient. Release builds only:
//     swift build -c release --package-path Benchmarks
// or, for everything at once, scripts/bench.
import PackageDescription

let package = Package(
    name: "ShopKitBenchmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "shopkit-bench", targets: ["shopkit-bench"])
    ],
    dependencies: [
        .package(name: "ShopKit", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Already in the graph through AsyncHTTPClient; named so the AHC client can configure TLS and pin.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        // Already in the graph through ShopKit; named for the ShopKit adapter (HTTPRequest, ClientTransport).
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        // Already in the graph through ShopKit; named for the logger that counts ShopKit's new connections.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // SHA-256 from the system libcrypto, for AsyncHTTPClient's after-handshake leaf pin.
        .systemLibrary(name: "CBenchSHA", path: "Sources/CBenchSHA", pkgConfig: "libcrypto"),
        // The pure part: results, statistics and the report tables (unit-tested).
        .target(name: "ShopKitBenchCore"),
        .executableTarget(
            name: "shopkit-bench",
            dependencies: [
                "CBenchSHA",
                "ShopKitBenchCore",
                .product(name: "ShopKit", package: "ShopKit"),
                .product(name: "ShopKitTLS", package: "ShopKit"),
                .product(name: "ShopKitAPI", package: "ShopKit"),
                .product(name: "ShopKitCredentials", package: "ShopKit"),
                .product(name: "ShopKitPinning", package: "ShopKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            path: "Sources/ShopKitBench"),
        .testTarget(name: "ShopKitBenchCoreTests", dependencies: ["ShopKitBenchCore"]),
    ],
    swiftLanguageModes: [.v6]
)
