// The ShopKit umbrella: re-exports and the one composition root.
@_exported import ShopKitAPI
@_exported import ShopKitAuth
@_exported import ShopKitPinning
@_exported import ShopKitCore
@_exported import ShopKitHTTPS
@_exported import ShopKitTLS
