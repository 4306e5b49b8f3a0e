#ifndef CARETAKER_CCRYPT_SHIM_H
#define CARETAKER_CCRYPT_SHIM_H
/* libxcrypt: bcrypt ($2b$) hashing that pgcrypto's crypt() verifies. */
#include <crypt.h>
#endif
