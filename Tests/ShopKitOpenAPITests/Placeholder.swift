import Testing
@Test func generatedClientPlaceholder() { _ = Client.self }
