// libmosquitto behind plain functions: the shim owns the client, its callbacks and its network thread, so
// that Swift never sees a C callback, a struct mosquitto or a MOSQ_ERR_* code.
#include "CMosquittoShim.h"
#include "loader.h"

#include <errno.h>
#include <mosquitto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct cmqtt_client {
    struct mosquitto *mosq;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    // Under `lock`:
    int state;
    uint64_t connections;
    uint64_t failures;
    char error[CMQTT_TEXT_CAPACITY];
    char tls_error[CMQTT_TEXT_CAPACITY];  // the latest error libmosquitto logged (OpenSSL's reasons)
    int *acks;
    int ack_count;
    int ack_capacity;
    // The network thread's own:
    char *host;
    int port;
    int keepalive;
    double backoff_min;
    double backoff_max;
    unsigned int seed;
};

static pthread_once_t library_once = PTHREAD_ONCE_INIT;

static void library_init(void) { mosquitto_lib_init(); }

static void set_error(struct cmqtt_client *client, const char *text) {
    snprintf(client->error, sizeof client->error, "%s", text);
}

static void on_connect(struct mosquitto *mosq, void *object, int code) {
    (void)mosq;
    struct cmqtt_client *client = object;
    pthread_mutex_lock(&client->lock);
    if (code == 0) {
        client->state = CMQTT_CONNECTED;
        client->connections += 1;
        client->error[0] = 0;
    } else {
        // 2: identifier rejected, 4: bad user name or password, 5: not authorised. Asking again cannot help.
        if (code == 2 || code == 4 || code == 5) client->state = CMQTT_REJECTED;
        char text[CMQTT_TEXT_CAPACITY];
        snprintf(text, sizeof text, "the broker refused the connection: %s", mosquitto_connack_string(code));
        set_error(client, text);
    }
    pthread_mutex_unlock(&client->lock);
}

static void on_disconnect(struct mosquitto *mosq, void *object, int code) {
    (void)mosq;
    struct cmqtt_client *client = object;
    pthread_mutex_lock(&client->lock);
    if (client->state != CMQTT_REJECTED) {
        if (client->state == CMQTT_CONNECTED && code != 0) set_error(client, "connection lost");
        client->state = CMQTT_DISCONNECTED;
    }
    pthread_mutex_unlock(&client->lock);
}

static void on_publish(struct mosquitto *mosq, void *object, int mid) {
    (void)mosq;
    struct cmqtt_client *client = object;
    pthread_mutex_lock(&client->lock);
    if (client->ack_count == client->ack_capacity) {
        int capacity = client->ack_capacity ? client->ack_capacity * 2 : 64;
        int *grown = realloc(client->acks, (size_t)capacity * sizeof *grown);
        if (grown) {
            client->acks = grown;
            client->ack_capacity = capacity;
        }
    }
    // Out of memory: the ack is lost and the message is sent again after a restart (a duplicate, not a loss).
    if (client->ack_count < client->ack_capacity) client->acks[client->ack_count++] = mid;
    pthread_mutex_unlock(&client->lock);
}

static void on_log(struct mosquitto *mosq, void *object, int level, const char *text) {
    (void)mosq;
    struct cmqtt_client *client = object;
    if (!(level & MOSQ_LOG_ERR) || !text) return;
    pthread_mutex_lock(&client->lock);
    snprintf(client->tls_error, sizeof client->tls_error, "%s", text);
    pthread_mutex_unlock(&client->lock);
}

/// Words for a failed connection attempt or a failed loop; never the password (libmosquitto has none in them).
static void note_failure(struct cmqtt_client *client, int code, int saved_errno) {
    char text[CMQTT_TEXT_CAPACITY];
    pthread_mutex_lock(&client->lock);
    client->failures += 1;
    if (client->state == CMQTT_REJECTED) {
        pthread_mutex_unlock(&client->lock);
        return;
    }
    client->state = CMQTT_DISCONNECTED;
    switch (code) {
    case MOSQ_ERR_ERRNO:
        snprintf(text, sizeof text, "%s", strerror(saved_errno));
        break;
    case MOSQ_ERR_TLS:
    case MOSQ_ERR_TLS_HANDSHAKE:
        snprintf(text, sizeof text, "TLS failed%s%s", client->tls_error[0] ? ": " : "", client->tls_error);
        break;
    case MOSQ_ERR_EAI:
        snprintf(text, sizeof text, "cannot resolve the host name");
        break;
    case MOSQ_ERR_CONN_REFUSED:
        // on_connect has said why.
        text[0] = 0;
        break;
    default:
        snprintf(text, sizeof text, "%s", mosquitto_strerror(code));
    }
    // A TLS failure often shows as a lost connection: libmosquitto's log line says more.
    if (client->tls_error[0] && (code == MOSQ_ERR_CONN_LOST || code == MOSQ_ERR_PROTOCOL)) {
        snprintf(text, sizeof text, "TLS failed: %s", client->tls_error);
    }
    if (text[0]) set_error(client, text);
    client->tls_error[0] = 0;
    pthread_mutex_unlock(&client->lock);
}

/// Waits a random time in [0, min(max, min * 2^attempt)] ("full jitter"), or until stopped; false when stopping.
static bool back_off(struct cmqtt_client *client, int attempt) {
    double ceiling = client->backoff_min;
    for (int i = 0; i < attempt && ceiling < client->backoff_max; i++) ceiling *= 2;
    if (ceiling > client->backoff_max) ceiling = client->backoff_max;
    double delay = ceiling * ((double)rand_r(&client->seed) / (double)RAND_MAX);
    if (delay < 0.05) delay = 0.05;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long long nanoseconds = until.tv_nsec + (long long)(delay * 1e9);
    until.tv_sec += (time_t)(nanoseconds / 1000000000LL);
    until.tv_nsec = (long)(nanoseconds % 1000000000LL);
    pthread_mutex_lock(&client->lock);
    while (!client->stopping) {
        if (pthread_cond_timedwait(&client->wake, &client->lock, &until) == ETIMEDOUT) break;
    }
    bool stopping = client->stopping;
    pthread_mutex_unlock(&client->lock);
    return !stopping;
}

static int current_state(struct cmqtt_client *client, bool *stopping) {
    pthread_mutex_lock(&client->lock);
    int state = client->state;
    *stopping = client->stopping;
    pthread_mutex_unlock(&client->lock);
    return state;
}

static void *network_thread(void *argument) {
    struct cmqtt_client *client = argument;
    int attempt = 0;
    bool connected_socket = false;
    for (;;) {
        bool stopping;
        int state = current_state(client, &stopping);
        if (stopping) break;
        if (state == CMQTT_REJECTED) {
            // Stop asking: the credentials will not improve by themselves. Wait for the end.
            pthread_mutex_lock(&client->lock);
            while (!client->stopping) pthread_cond_wait(&client->wake, &client->lock);
            pthread_mutex_unlock(&client->lock);
            break;
        }
        if (!connected_socket) {
            pthread_mutex_lock(&client->lock);
            client->state = CMQTT_CONNECTING;
            pthread_mutex_unlock(&client->lock);
            // Non-blocking connect: the loop below completes it; messages queued before resend after CONNACK.
            errno = 0;
            int code = mosquitto_connect_async(client->mosq, client->host, client->port, client->keepalive);
            int saved_errno = errno;
            if (code != MOSQ_ERR_SUCCESS) {
                note_failure(client, code, saved_errno);
                if (!back_off(client, attempt++)) break;
                continue;
            }
            connected_socket = true;
        }
        // Five seconds at most: a publish from another thread wakes the loop at once (libmosquitto's socket
        // pair), as does cmqtt_stop, and keepalive pings need no finer clock. Fewer wake-ups for the recorder.
        errno = 0;
        int code = mosquitto_loop(client->mosq, 5000, 1);
        int saved_errno = errno;
        if (code != MOSQ_ERR_SUCCESS) {
            connected_socket = false;
            note_failure(client, code, saved_errno);
            if (current_state(client, &stopping) == CMQTT_REJECTED) continue;
            if (!back_off(client, attempt++)) break;
        } else if (current_state(client, &stopping) == CMQTT_CONNECTED) {
            attempt = 0;
        }
    }
    if (connected_socket) {
        // A clean DISCONNECT: the broker drops the will (the owner chose to stop).
        mosquitto_disconnect(client->mosq);
        for (int i = 0; i < 5 && mosquitto_loop(client->mosq, 50, 1) == MOSQ_ERR_SUCCESS; i++) {}
    }
    return NULL;
}

cmqtt_client *cmqtt_start(const cmqtt_options *options, char *error, size_t error_capacity) {
    if (cmosq_load(error, error_capacity) != 0) return NULL;
    pthread_once(&library_once, library_init);
    struct cmqtt_client *client = calloc(1, sizeof *client);
    if (!client) {
        snprintf(error, error_capacity, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&client->lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&client->wake, &attributes);
    pthread_condattr_destroy(&attributes);
    client->host = strdup(options->host ? options->host : "");
    client->port = options->port;
    client->keepalive = options->keepalive > 0 ? options->keepalive : 60;
    client->backoff_min = options->backoff_min > 0 ? options->backoff_min : 1;
    client->backoff_max = options->backoff_max > client->backoff_min ? options->backoff_max : client->backoff_min;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    client->seed = (unsigned int)(now.tv_nsec ^ (long)getpid() ^ (long)(uintptr_t)client);
    // Clean session: a publisher keeps nothing at the broker; its unacknowledged messages are its own to resend.
    client->mosq = mosquitto_new(options->client_id, true, client);
    const char *failure = NULL;
    if (!client->mosq || !client->host) {
        failure = "cannot create the MQTT client";
    } else {
        mosquitto_threaded_set(client->mosq, true);
        mosquitto_int_option(client->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
        mosquitto_int_option(client->mosq, MOSQ_OPT_SEND_MAXIMUM, options->max_inflight > 0 ? options->max_inflight : 10);
        mosquitto_connect_callback_set(client->mosq, on_connect);
        mosquitto_disconnect_callback_set(client->mosq, on_disconnect);
        mosquitto_publish_callback_set(client->mosq, on_publish);
        mosquitto_log_callback_set(client->mosq, on_log);
        if (options->username && mosquitto_username_pw_set(client->mosq, options->username, options->password) != MOSQ_ERR_SUCCESS) {
            failure = "invalid user name or password for MQTT";
        } else if (options->will_topic && options->will_payload &&
                   mosquitto_will_set(client->mosq, options->will_topic, (int)strlen(options->will_payload),
                                      options->will_payload, 0, false) != MOSQ_ERR_SUCCESS) {
            failure = "invalid last-will topic";
        } else if (options->tls) {
            mosquitto_int_option(client->mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
            int code = mosquitto_tls_set(client->mosq, options->ca_file, options->ca_file ? NULL : "/etc/ssl/certs",
                                         NULL, NULL, NULL);
            if (code != MOSQ_ERR_SUCCESS) failure = "cannot read the CA file";
            // Peer verification and the host-name check stay on (mosquitto_tls_insecure_set is never called).
        }
    }
    if (!failure && pthread_create(&client->thread, NULL, network_thread, client) != 0) {
        failure = "cannot start the MQTT network thread";
    }
    if (failure) {
        snprintf(error, error_capacity, "%s", failure);
        if (client->mosq) mosquitto_destroy(client->mosq);
        free(client->host);
        pthread_cond_destroy(&client->wake);
        pthread_mutex_destroy(&client->lock);
        free(client);
        return NULL;
    }
    return client;
}

int cmqtt_publish(cmqtt_client *client, const char *topic, const void *payload, int length, bool retain) {
    int mid = 0;
    int code = mosquitto_publish(client->mosq, &mid, topic, length, payload, 1, retain);
    switch (code) {
    case MOSQ_ERR_SUCCESS:
    case MOSQ_ERR_NO_CONN:
        // At QoS 1 a message published while disconnected is queued all the same, and resent after CONNACK.
        return mid > 0 ? mid : CMQTT_PUBLISH_FAILED;
    case MOSQ_ERR_PAYLOAD_SIZE:
    case MOSQ_ERR_OVERSIZE_PACKET:
        return CMQTT_PUBLISH_TOO_LARGE;
    default:
        return CMQTT_PUBLISH_FAILED;
    }
}

int cmqtt_take_acks(cmqtt_client *client, int *ids, int capacity) {
    pthread_mutex_lock(&client->lock);
    int count = client->ack_count < capacity ? client->ack_count : capacity;
    memcpy(ids, client->acks, (size_t)count * sizeof *ids);
    memmove(client->acks, client->acks + count, (size_t)(client->ack_count - count) * sizeof *ids);
    client->ack_count -= count;
    pthread_mutex_unlock(&client->lock);
    return count;
}

void cmqtt_status_get(cmqtt_client *client, cmqtt_status *out) {
    pthread_mutex_lock(&client->lock);
    out->state = client->state;
    out->connections = client->connections;
    out->failures = client->failures;
    snprintf(out->error, sizeof out->error, "%s", client->error);
    pthread_mutex_unlock(&client->lock);
}

void cmqtt_stop(cmqtt_client *client) {
    pthread_mutex_lock(&client->lock);
    client->stopping = true;
    pthread_cond_broadcast(&client->wake);
    pthread_mutex_unlock(&client->lock);
    // Queues a DISCONNECT, which wakes a loop waiting on the socket; a thread backing off wakes on the condition.
    mosquitto_disconnect(client->mosq);
    // The thread is never blocked for long: connections are non-blocking and a loop turn ends when woken
    // (a host name lookup is the exception).
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 3;
    if (pthread_timedjoin_np(client->thread, NULL, &until) != 0) {
        // Left to the process's end rather than blocking a shutdown.
        pthread_detach(client->thread);
        return;
    }
    mosquitto_destroy(client->mosq);
    free(client->host);
    free(client->acks);
    pthread_cond_destroy(&client->wake);
    pthread_mutex_destroy(&client->lock);
    free(client);
}
