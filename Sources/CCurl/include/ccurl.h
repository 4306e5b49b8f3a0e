#ifndef CARETAKER_CCURL_H
#define CARETAKER_CCURL_H

/*
 * libcurl for Swift. curl_easy_setopt and curl_easy_getinfo are variadic, so
 * Swift cannot call them; these wrappers fix the argument type per call.
 */
#include <curl/curl.h>
#include <stddef.h>

/** Signature of a CURLOPT_READFUNCTION / CURLOPT_WRITEFUNCTION callback. */
typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t nitems, void *userdata);

/** Sets an option that takes a `long`. */
CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value);

/** Sets an option that takes a NUL-terminated string (libcurl copies it). */
CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value);

/** Sets an option that takes an opaque pointer (e.g. CURLOPT_READDATA). */
CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value);

/** Sets a read or write callback (CURLOPT_READFUNCTION, CURLOPT_WRITEFUNCTION, …). */
CURLcode ccurl_setopt_callback(CURL *handle, CURLoption option, ccurl_data_callback callback);

/** Sets an option that takes a `struct curl_slist *` (e.g. CURLOPT_MAIL_RCPT). */
CURLcode ccurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *list);

/** Reads a `long` info value (e.g. CURLINFO_RESPONSE_CODE). */
CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value);

/**
 * Calls curl_global_init(CURL_GLOBAL_DEFAULT) exactly once per process, however
 * many threads race to it; returns its result (the same result every time).
 */
CURLcode ccurl_global_init_once(void);

#endif
