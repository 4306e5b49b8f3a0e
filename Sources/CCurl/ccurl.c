#include "ccurl.h"

#include <pthread.h>

CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_setopt_callback(CURL *handle, CURLoption option, ccurl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

CURLcode ccurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *list) {
    return curl_easy_setopt(handle, option, list);
}

CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static pthread_once_t global_init_once = PTHREAD_ONCE_INIT;
static CURLcode global_init_result = CURLE_FAILED_INIT;

static void global_init(void) {
    global_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

CURLcode ccurl_global_init_once(void) {
    /* curl_global_init is not thread-safe in every libcurl build; pthread_once is. */
    pthread_once(&global_init_once, global_init);
    return global_init_result;
}
