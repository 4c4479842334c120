// SHA-256 from the system OpenSSL's libcrypto; no logic here.
#include <openssl/sha.h>
