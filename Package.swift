// swift-tools-version:6.0
// ShopKit: pinned HTTPS over the system OpenSSL, a typed API client, and a token store for Linux.
import PackageDescription

let package = Package(
    name: "ShopKit",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ShopKit", targets: ["ShopKit"]),
        .library(name: "ShopKitPinning", targets: ["ShopKitPinning"]),
        .library(name: "ShopKitTLS", targets: ["ShopKitTLS"]),
        .library(name: "ShopKitAPI", targets: ["ShopKitAPI"]),
        .library(name: "ShopKitAuth", targets: ["ShopKitAuth"]),
        .executable(name: "pin-check", targets: ["pin-check"]),
        .executable(name: "token-store", targets: ["token-store"]),
        .executable(name: "shopkit-demo", targets: ["shopkit-demo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C, fenced: module maps and shims only.
        .systemLibrary(
            name: "COpenSSL", path: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CLibSecret", path: "CLibSecret", pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]),
        // prctl(2) for ProcessHardening (Swift cannot call the variadic prctl).
        .systemLibrary(name: "CProcessControl", path: "CProcessControl"),

        // Pure Swift pins and policy: no OpenSSL, no NIO.
        .target(
            name: "ShopKitPinning",
            dependencies: [.product(name: "Logging", package: "swift-log")]),
        // The only Swift module that imports COpenSSL.
        .target(
            name: "ShopKitOpenSSL",
            dependencies: ["COpenSSL", "ShopKitPinning"]),
        .target(
            name: "ShopKitTLS",
            dependencies: [
                "ShopKitOpenSSL", "ShopKitPinning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The typed client: HTTPTypes and OpenAPIRuntime only, never NIO or C.
        .target(
            name: "ShopKitAPI",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Credentials: the keyring store is the only importer of CLibSecret.
        .target(
            name: "ShopKitAuth",
            dependencies: [
                "ShopKitAPI", "ShopKitOpenSSL", "CLibSecret", "CProcessControl",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Umbrella and composition root.
        .target(
            name: "ShopKit",
            dependencies: ["ShopKitPinning", "ShopKitTLS", "ShopKitAPI", "ShopKitAuth"]),

        .executableTarget(
            name: "pin-check",
            dependencies: [
                "ShopKit", "ShopKitDemoSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "token-store",
            dependencies: [
                "ShopKitAuth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "shopkit-demo",
            dependencies: [
                "ShopKit", "ShopKitDemoSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]),

        // What the demos need (no product): the in-process loopback TLS server over ShopKitTLS's server role,
        // and the TestCerts certificates, found from the running binary.
        .target(
            name: "ShopKitDemoSupport",
            dependencies: [
                "ShopKitTLS", "ShopKitPinning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        // Test-only helpers: certificate fixtures, stub transports, built binaries; re-exports ShopKitDemoSupport.
        .target(
            name: "TestSupport",
            dependencies: [
                "ShopKitDemoSupport", "ShopKitTLS", "ShopKitAPI", "ShopKitPinning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]),

        .testTarget(name: "ShopKitPinningTests", dependencies: ["ShopKitPinning"]),
        .testTarget(name: "ShopKitOpenSSLTests", dependencies: ["ShopKitOpenSSL", "TestSupport"]),
        .testTarget(
            name: "ShopKitTLSTests",
            dependencies: [
                "ShopKitTLS", "ShopKitAPI", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "ShopKitAPITests", dependencies: ["ShopKitAPI", "TestSupport"]),
        .testTarget(name: "ShopKitAuthTests", dependencies: ["ShopKitAuth", "ShopKitAPI", "TestSupport"]),
        .testTarget(name: "ShopKitTests", dependencies: ["ShopKit", "TestSupport"]),
    ]
)
