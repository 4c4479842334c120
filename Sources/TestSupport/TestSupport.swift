// Test-only helpers: certificate fixtures, stub transports, built binaries; the loopback TLS server comes from
// ShopKitDemoSupport (shared with the demos) and is re-exported here.
@_exported import ShopKitDemoSupport
