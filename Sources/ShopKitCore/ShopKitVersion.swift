/// ShopKit's version, in one place: `pin-check --version` and `token-store --version` print it, and a test checks
/// that README.md documents it and that it is CHANGELOG.md's newest release.
package enum ShopKitVersion {
    /// The version of this source tree (Semantic Versioning).
    package static let current = "0.1.0"
}
