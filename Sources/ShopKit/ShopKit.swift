// The ShopKit umbrella: re-exports, and ShopKitFactory's HTTPS convenience (the composition root itself is
// ShopKitAPI's ShopKitFactory).
// The transport seam's types, so `import ShopKit` is enough to name `ClientTransport`, `HTTPBody`, `HTTPRequest`.
@_exported import HTTPTypes
@_exported import OpenAPIRuntime
@_exported import ShopKitAPI
@_exported import ShopKitCredentials
@_exported import ShopKitPinning
@_exported import ShopKitCore
@_exported import ShopKitHTTPS
@_exported import ShopKitTLS
