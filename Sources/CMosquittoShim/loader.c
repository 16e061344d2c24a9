// libmosquitto loaded when sharing starts, not when fieldlog does: the recorder never maps it (nor the libssl
// and libcrypto it brings). These definitions stand in for the library's functions the shim calls, and
// forward to the library's own, looked up in a handle of its own (RTLD_LOCAL).
#include "loader.h"

#include <dlfcn.h>
#include <mosquitto.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CMOSQ_LIBRARY "libmosquitto.so.1"

// Every libmosquitto function the shim calls: return type, name, parameters, arguments, value when unloaded.
#define CMOSQ_FUNCTIONS(X, V)                                                                                   \
    X(int, mosquitto_lib_init, (void), (), MOSQ_ERR_NOT_SUPPORTED)                                               \
    X(struct mosquitto *, mosquitto_new, (const char *id, bool clean_session, void *obj),                        \
      (id, clean_session, obj), NULL)                                                                           \
    V(mosquitto_destroy, (struct mosquitto * mosq), (mosq))                                                      \
    X(int, mosquitto_threaded_set, (struct mosquitto * mosq, bool threaded), (mosq, threaded),                   \
      MOSQ_ERR_NOT_SUPPORTED)                                                                                   \
    X(int, mosquitto_int_option, (struct mosquitto * mosq, enum mosq_opt_t option, int value),                   \
      (mosq, option, value), MOSQ_ERR_NOT_SUPPORTED)                                                            \
    V(mosquitto_connect_callback_set, (struct mosquitto * mosq, void (*cb)(struct mosquitto *, void *, int)),    \
      (mosq, cb))                                                                                               \
    V(mosquitto_disconnect_callback_set, (struct mosquitto * mosq, void (*cb)(struct mosquitto *, void *, int)), \
      (mosq, cb))                                                                                               \
    V(mosquitto_publish_callback_set, (struct mosquitto * mosq, void (*cb)(struct mosquitto *, void *, int)),    \
      (mosq, cb))                                                                                               \
    V(mosquitto_log_callback_set,                                                                                \
      (struct mosquitto * mosq, void (*cb)(struct mosquitto *, void *, int, const char *)), (mosq, cb))          \
    X(int, mosquitto_username_pw_set, (struct mosquitto * mosq, const char *username, const char *password),     \
      (mosq, username, password), MOSQ_ERR_NOT_SUPPORTED)                                                       \
    X(int, mosquitto_tls_set,                                                                                    \
      (struct mosquitto * mosq, const char *cafile, const char *capath, const char *certfile, const char *keyfile, \
       int (*pw_callback)(char *, int, int, void *)),                                                           \
      (mosq, cafile, capath, certfile, keyfile, pw_callback), MOSQ_ERR_NOT_SUPPORTED)                           \
    X(int, mosquitto_will_set,                                                                                   \
      (struct mosquitto * mosq, const char *topic, int payloadlen, const void *payload, int qos, bool retain),   \
      (mosq, topic, payloadlen, payload, qos, retain), MOSQ_ERR_NOT_SUPPORTED)                                  \
    X(int, mosquitto_connect_async, (struct mosquitto * mosq, const char *host, int port, int keepalive),       \
      (mosq, host, port, keepalive), MOSQ_ERR_NOT_SUPPORTED)                                                    \
    X(int, mosquitto_loop, (struct mosquitto * mosq, int timeout, int max_packets), (mosq, timeout, max_packets), \
      MOSQ_ERR_NOT_SUPPORTED)                                                                                   \
    X(int, mosquitto_publish,                                                                                    \
      (struct mosquitto * mosq, int *mid, const char *topic, int payloadlen, const void *payload, int qos,       \
       bool retain),                                                                                            \
      (mosq, mid, topic, payloadlen, payload, qos, retain), MOSQ_ERR_NOT_SUPPORTED)                             \
    X(int, mosquitto_disconnect, (struct mosquitto * mosq), (mosq), MOSQ_ERR_NOT_SUPPORTED)                      \
    X(const char *, mosquitto_strerror, (int mosq_errno), (mosq_errno), "libmosquitto not loaded")              \
    X(const char *, mosquitto_connack_string, (int connack_code), (connack_code), "libmosquitto not loaded")

#define CMOSQ_POINTER(type, name, parameters, arguments, unloaded) type(*name) parameters;
#define CMOSQ_VOID_POINTER(name, parameters, arguments) void(*name) parameters;
static struct {
    CMOSQ_FUNCTIONS(CMOSQ_POINTER, CMOSQ_VOID_POINTER)
} real;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];
static bool loaded;

#define CMOSQ_LOOKUP(name)                                                                        \
    if (!(*(void **)&real.name = dlsym(handle, #name))) {                                         \
        snprintf(load_error, sizeof load_error, "%s has no %s", CMOSQ_LIBRARY, #name);             \
        return;                                                                                   \
    }
#define CMOSQ_LOOKUP_FUNCTION(type, name, parameters, arguments, unloaded) CMOSQ_LOOKUP(name)
#define CMOSQ_LOOKUP_VOID(name, parameters, arguments) CMOSQ_LOOKUP(name)

static void load(void) {
    void *handle = dlopen(CMOSQ_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof load_error, "%s", reason ? reason : CMOSQ_LIBRARY " cannot be loaded");
        return;
    }
    CMOSQ_FUNCTIONS(CMOSQ_LOOKUP_FUNCTION, CMOSQ_LOOKUP_VOID)
    loaded = true;
}

int cmosq_load(char *error, size_t error_capacity) {
    pthread_once(&load_once, load);
    if (!loaded) snprintf(error, error_capacity, "%s", load_error);
    return loaded ? 0 : -1;
}

#define CMOSQ_FORWARD(type, name, parameters, arguments, unloaded) \
    type name parameters {                                        \
        pthread_once(&load_once, load);                           \
        return loaded ? real.name arguments : unloaded;           \
    }
#define CMOSQ_FORWARD_VOID(name, parameters, arguments) \
    void name parameters {                              \
        pthread_once(&load_once, load);                 \
        if (loaded) real.name arguments;                \
    }
CMOSQ_FUNCTIONS(CMOSQ_FORWARD, CMOSQ_FORWARD_VOID)
