import OpenAPIRuntime
import ShopKitAPI

// README-BEGIN (this block is the README's hand-built middleware array, verbatim; a test checks they match)
/// The array `ShopKitFactory.makeMiddlewares` builds, by hand, outermost first: retry, auth, dedup.
func petStoreMiddlewares(store: any TokenStore, refresher: any TokenRefresher) -> [any ClientMiddleware] {
    [
        RetryMiddleware(policy: RetryPolicy()),
        AuthenticationMiddleware(
            store: store, refresher: refresher,
            requirement: .publicOperations([Operations.login.id, Operations.refresh.id])),
        DeduplicationMiddleware(),
    ]
}
// README-END
