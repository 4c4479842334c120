// The system OpenSSL 3, as ShopKitOpenSSL sees it.
// Only static inline wrappers for macros and variadic functions that Swift cannot call; no logic.
#ifndef SHOPKIT_COPENSSL_SHIM_H
#define SHOPKIT_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/ct.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static inline int shopkit_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int shopkit_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline long shopkit_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline long shopkit_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

static inline int shopkit_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline int shopkit_SSL_CTX_add_extra_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add_extra_chain_cert(ctx, cert);
}

static inline int shopkit_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}

static inline X509 *shopkit_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

// Client certificates (ShopKitOpenSSL's client identity and its certificate-request callback).

static inline int shopkit_sk_X509_NAME_num(const STACK_OF(X509_NAME) *stack) {
    return sk_X509_NAME_num(stack);
}

static inline X509_NAME *shopkit_sk_X509_NAME_value(const STACK_OF(X509_NAME) *stack, int index) {
    return sk_X509_NAME_value(stack, index);
}

static inline int shopkit_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

static inline void shopkit_sk_X509_pop_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}

static inline int shopkit_sk_GENERAL_NAME_num(const GENERAL_NAMES *names) {
    return sk_GENERAL_NAME_num(names);
}

static inline GENERAL_NAME *shopkit_sk_GENERAL_NAME_value(const GENERAL_NAMES *names, int index) {
    return sk_GENERAL_NAME_value(names, index);
}

static inline void shopkit_GENERAL_NAMES_free(GENERAL_NAMES *names) {
    GENERAL_NAMES_free(names);
}

static inline int shopkit_SSL_get_ex_new_index(void) {
    return SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

static inline int shopkit_SSL_SESSION_get_ex_new_index(void) {
    return SSL_SESSION_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

static inline void shopkit_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

static inline long shopkit_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

// The ciphertext BIOs (ShopKitOpenSSL's InboundCiphertext and OutboundCiphertext): retry flags are macros.

static inline void shopkit_BIO_set_retry_read(BIO *bio) {
    BIO_set_retry_read(bio);
}

static inline void shopkit_BIO_clear_retry_flags(BIO *bio) {
    BIO_clear_retry_flags(bio);
}

static inline unsigned long shopkit_XN_FLAG_RFC2253(void) {
    return XN_FLAG_RFC2253;
}

static inline uint64_t shopkit_SSL_OP_NO_RENEGOTIATION(void) {
    return SSL_OP_NO_RENEGOTIATION;
}

static inline uint64_t shopkit_SSL_OP_NO_COMPRESSION(void) {
    return SSL_OP_NO_COMPRESSION;
}

static inline long shopkit_SSL_CTX_sess_set_cache_size(SSL_CTX *ctx, long size) {
    return SSL_CTX_sess_set_cache_size(ctx, size);
}


// Certificate Transparency (ShopKitOpenSSL's SCT reading): the SCT stack's macros.

static inline int shopkit_sk_SCT_num(const STACK_OF(SCT) *stack) {
    return sk_SCT_num(stack);
}

static inline SCT *shopkit_sk_SCT_value(const STACK_OF(SCT) *stack, int index) {
    return sk_SCT_value(stack, index);
}

#endif
