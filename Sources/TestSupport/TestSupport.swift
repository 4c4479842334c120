// Test-only helpers: loopback TLS server, certificate fixtures, stub transports.
