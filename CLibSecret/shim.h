// libsecret, as ShopKit's keyring store sees it.
// The item schema is defined here in C; the rest are static inline wrappers for macros only.
#ifndef SHOPKIT_CLIBSECRET_SHIM_H
#define SHOPKIT_CLIBSECRET_SHIM_H

#include <libsecret/secret.h>

/// The schema of every ShopKit item: attributes hold stable identifiers only, never a secret.
static inline const SecretSchema *shopkit_token_schema(void) {
    static const SecretSchema schema = {
        "dev.shopkit.Token",
        SECRET_SCHEMA_NONE,
        {
            { "service", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "account", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "device", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { NULL, 0 },
        },
    };
    return &schema;
}

#endif
