// swift-tools-version:6.0
// ShopKit: pinned HTTPS over the system OpenSSL, a typed API client, and a token store for Linux.
import PackageDescription

let package = Package(
    name: "ShopKit",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ShopKit", targets: ["ShopKit"]),
        .library(name: "ShopKitCore", targets: ["ShopKitCore"]),
        .library(name: "ShopKitPinning", targets: ["ShopKitPinning"]),
        .library(name: "ShopKitTLS", targets: ["ShopKitTLS"]),
        .library(name: "ShopKitHTTPS", targets: ["ShopKitHTTPS"]),
        .library(name: "ShopKitAPI", targets: ["ShopKitAPI"]),
        .library(name: "ShopKitCredentials", targets: ["ShopKitCredentials"]),
        .executable(name: "pin-check", targets: ["pin-check"]),
        .executable(name: "token-store", targets: ["token-store"]),
        .executable(name: "shopkit-demo", targets: ["shopkit-demo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // No swift-docc-plugin: SwiftPM compiles a package's plugins on every fresh build (and whenever it plans
        // the build again), about 20 s each time, though only the docs need it. scripts/check-docs builds the
        // documentation with the toolchain's swift-symbolgraph-extract and docc.
    ],
    targets: [
        // C, fenced: module maps and shims only.
        .systemLibrary(
            name: "COpenSSL", path: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        // libsecret without libsecret-1.pc, which through GIO's Requires.private adds `-pthread`, a flag SwiftPM
        // prohibits with a warning on every package load. CGLib gives GLib's include paths (glib-2.0.pc, quiet);
        // CLibSecret is a C target whose include/ folder (on its importers' include path) holds the shim and the
        // link include/libsecret -> /usr/include/libsecret-1/libsecret, where distributions install the headers.
        .systemLibrary(
            name: "CGLib", path: "CGLib", pkgConfig: "glib-2.0",
            providers: [.apt(["libglib2.0-dev"])]),
        .target(
            name: "CLibSecret", dependencies: ["CGLib"], path: "CLibSecret",
            linkerSettings: [
                .linkedLibrary("secret-1"), .linkedLibrary("gio-2.0"), .linkedLibrary("gobject-2.0"),
                .linkedLibrary("glib-2.0"),
            ]),
        // prctl(2) for ProcessHardening (Swift cannot call the variadic prctl).
        .systemLibrary(name: "CProcessControl", path: "CProcessControl"),
        // What the two CLIs do before anything else (no core dumps, no backtracer, standard descriptors open): no
        // product, used only where it is used.
        .target(name: "CLIHardening", dependencies: ["CProcessControl"]),

        // Pure Swift pins and policy: no OpenSSL, no NIO.
        // Resources/ct-log-list.json: the bundled CT log list (dated, no logs; scripts/update-ct-log-list).
        .target(
            name: "ShopKitPinning",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            resources: [.copy("Resources/ct-log-list.json")]),
        // The only Swift module that imports COpenSSL.
        .target(
            name: "ShopKitOpenSSL",
            dependencies: [
                "COpenSSL", "ShopKitCore", "ShopKitPinning",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        // Retry classification (RetryClassifiableError) and the idempotent-method list: below every error type.
        .target(
            name: "ShopKitCore",
            dependencies: [.product(name: "HTTPTypes", package: "swift-http-types")]),
        // TLS only: the OpenSSL channel handler (client and package-only server roles), client context, session
        // cache, the verification gate with its handshake deadline. No HTTP.
        .target(
            name: "ShopKitTLS",
            dependencies: [
                "ShopKitCore", "ShopKitOpenSSL", "ShopKitPinning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The HTTPS client over ShopKitTLS: HTTPSTransport (an OpenAPI ClientTransport, HTTP/2 or HTTP/1.1 by ALPN).
        // Folders: Request/ (the request state machine both protocols use, and the one seam that starts a request),
        // HTTP1/ (the connection state machine composing it, and its handler), HTTP2/ (connection, stream handler,
        // keepalive), Pool/ (pool, its state machine, the connection factory), Proxy/ (CONNECT tunnels),
        // PinFailureReporting/ (TrustKit-format reports).
        .target(
            name: "ShopKitHTTPS",
            dependencies: [
                "ShopKitCore", "ShopKitTLS", "ShopKitPinning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // pin-check's server inspector (no product): a handshake, its chain and pins, a verdict.
        .target(
            name: "ShopKitInspector",
            dependencies: [
                "ShopKitTLS", "ShopKitOpenSSL", "ShopKitPinning", "ShopKitHTTPS",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The typed client: HTTPTypes and OpenAPIRuntime only, never NIO or C.
        .target(
            name: "ShopKitAPI",
            dependencies: [
                "ShopKitCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Credentials: the keyring store is the only importer of CLibSecret.
        .target(
            name: "ShopKitCredentials",
            dependencies: [
                "ShopKitCore", "ShopKitAPI", "ShopKitOpenSSL", "ShopKitTLS", "CLibSecret",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Umbrella and composition root.
        .target(
            name: "ShopKit",
            dependencies: [
                "ShopKitCore", "ShopKitPinning", "ShopKitTLS", "ShopKitHTTPS", "ShopKitAPI", "ShopKitCredentials",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        .executableTarget(
            name: "pin-check",
            dependencies: [
                "ShopKitCore", "ShopKitInspector", "ShopKitTLS", "ShopKitPinning", "ShopKitDemoSupport", "ShopKitHTTPS",
                "CLIHardening",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(
            name: "token-store",
            dependencies: [
                "ShopKitCredentials", "ShopKitCore", "CLIHardening",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
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
                "ShopKitTLS", "ShopKitInspector", "ShopKitPinning",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        // Test-only helpers: certificate fixtures, stub transports, built binaries; re-exports ShopKitDemoSupport.
        .target(
            name: "TestSupport",
            dependencies: [
                "ShopKitDemoSupport", "ShopKitTLS", "ShopKitHTTPS", "ShopKitAPI", "ShopKitPinning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        .testTarget(name: "ShopKitCoreTests", dependencies: ["ShopKitCore"]),
        .testTarget(name: "ShopKitPinningTests", dependencies: ["ShopKitPinning"]),
        .testTarget(name: "ShopKitOpenSSLTests", dependencies: ["ShopKitOpenSSL", "TestSupport"]),
        .testTarget(
            name: "ShopKitTLSTests",
            dependencies: [
                "ShopKitTLS", "ShopKitHTTPS", "ShopKitInspector", "ShopKitAPI", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // pin-check's tests: the built binary run as a child process, and the library calls it makes.
        .testTarget(
            name: "PinCheckTests",
            dependencies: [
                "ShopKitInspector", "ShopKitTLS", "ShopKitHTTPS", "ShopKitPinning", "ShopKitOpenSSL", "ShopKitCore",
                "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]),
        .testTarget(
            name: "ShopKitHTTPSTests",
            dependencies: [
                "ShopKitHTTPS", "ShopKitTLS", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "ShopKitAPITests", dependencies: ["ShopKitAPI", "TestSupport"]),
        .testTarget(name: "ShopKitCredentialsTests", dependencies: ["ShopKitCredentials", "ShopKitAPI", "TestSupport"]),
        .testTarget(name: "ShopKitTests", dependencies: ["ShopKit", "TestSupport"]),
        // Links the HTTPS and API products only (no umbrella): retry classification holds without it.
        .testTarget(
            name: "ShopKitCompositionTests",
            dependencies: ["ShopKitHTTPS", "ShopKitTLS", "ShopKitAPI", "ShopKitPinning", "TestSupport"]),

        // Fuzzing (no product): one function per parser of outside input; `shopkit-fuzz` runs them under
        // libFuzzer when built by scripts/fuzz (scripts/sanitizer-build: SHOPKIT_FUZZING, libFuzzer linked), and
        // replays files otherwise;
        // ShopKitFuzzTests replays the committed corpus (Fuzz/) on every test run.
        .target(
            name: "ShopKitFuzzTargets",
            dependencies: [
                "ShopKitPinning", "ShopKitOpenSSL", "ShopKitTLS", "ShopKitHTTPS", "ShopKitAPI", "ShopKitCredentials",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]),
        .executableTarget(name: "shopkit-fuzz", dependencies: ["ShopKitFuzzTargets"]),
        .testTarget(name: "ShopKitFuzzTests", dependencies: ["ShopKitFuzzTargets", "TestSupport"]),
    ]
)
