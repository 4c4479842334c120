// libsecret, as ShopKit's keyring store sees it.
// The item schema is defined here in C; the rest are static inline wrappers only (GLib macros and the
// function-pointer arguments Swift cannot pass tidily), no logic.
#ifndef SHOPKIT_CLIBSECRET_SHIM_H
#define SHOPKIT_CLIBSECRET_SHIM_H

#include <libsecret/secret.h>

/// The schema of every ShopKit token item: attributes hold stable identifiers only, never a secret.
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

/// The schema of client-certificate key items: a name of their own, so that a token lookup or store (which
/// matches the schema name) never finds or replaces a key; `kind` is always `client-key`.
static inline const SecretSchema *shopkit_client_key_schema(void) {
    static const SecretSchema schema = {
        "dev.shopkit.ClientKey",
        SECRET_SCHEMA_NONE,
        {
            { "service", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "account", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "device", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { "kind", SECRET_SCHEMA_ATTRIBUTE_STRING },
            { NULL, 0 },
        },
    };
    return &schema;
}

/// An attribute table owning copies of its keys and values (g_hash_table_new_full with g_str_hash/g_str_equal).
static inline GHashTable *shopkit_attributes_new(void) {
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

/// Inserts copies of `key` and `value` (g_strdup) into a table made by shopkit_attributes_new.
static inline void shopkit_attributes_insert(GHashTable *table, const char *key, const char *value) {
    g_hash_table_insert(table, g_strdup(key), g_strdup(value));
}

#endif
