/// The one limit on a response body, in bytes, wherever ShopKit reads one: the transport streaming it
/// (`HTTPSTransport.Configuration.maxResponseBodyBytes`), the API client and the dedup middleware buffering it
/// (`maxResponseBodyBytes` too). One idea, one name, one default.
public enum ResponseBodyLimit {
    /// 16 MiB: the default `maxResponseBodyBytes` everywhere.
    public static let defaultBytes = 16 * 1024 * 1024
}
