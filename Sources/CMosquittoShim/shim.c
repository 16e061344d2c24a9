// libmosquitto behind plain functions: the shim owns the client, its callbacks and its network thread, so
// that Swift never sees a C callback, a struct mosquitto or a MOSQ_ERR_* code.
//
// fieldlog subscribes to nothing, so any PUBLISH from the broker is hostile: libmosquitto 2.0.11 keeps each
// unreleased QoS 2 one (handle_publish.c), across reconnections too (message__reconnect_reset in
// messages_mosq.c), and bounds neither their number (MQTT 3.1.1) nor a packet's size (packet_mosq.c: the client
// mallocs whatever remaining length the broker announces). The shim notices any PUBLISH and a failed allocation,
// and then destroys the handle, freeing all of it, makes a new one and reconnects after a growing backoff. The
// size of one packet is bounded only by the process's memory limit (ShareProcessMemory in Sharing).
#include "CMosquittoShim.h"
#include "loader.h"

#include <errno.h>
#include <mosquitto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/// A message published and not yet acknowledged: kept to publish again on a new handle.
typedef struct {
    int id;       // the shim's, stable across handles
    int mid;      // libmosquitto's, on the current handle
    void *payload;
    int length;
    bool retain;
} outgoing;

struct cmqtt_client {
    // The handle; replaced by the network thread under `handle_lock`, which publishers and cmqtt_stop also take.
    struct mosquitto *mosq;
    pthread_mutex_t handle_lock;
    // Under `handle_lock`:
    outgoing *outgoing;
    int outgoing_count;
    int next_id;
    int *done;  // ids of messages acknowledged, for cmqtt_take_acks
    int done_count;
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
    int unwanted_qos;                     // QoS of a PUBLISH the broker sent, -1 when none
    bool answered;                        // a CONNACK came on the current connection
    int *acks;                            // libmosquitto's ids acknowledged (PUBACK), at most max_inflight
    int ack_count;
    // Set at start:
    char *host;
    int port;
    int keepalive;
    double backoff_min;
    double backoff_max;
    double rejected_retry;
    double rejected_retry_max;
    int max_inflight;
    char *client_id;
    char *username;
    char *password;
    bool tls;
    char *ca_file;
    char *will_topic;
    char *will_payload;
    char *topic;
    // The network thread's own:
    unsigned int seed;
};

/// A broker that kept a connection clean this long is trusted again: its next fault backs off from the start.
static const double hostile_forgiven_after = 60;

static pthread_once_t library_once = PTHREAD_ONCE_INIT;

static void library_init(void) { mosquitto_lib_init(); }

static void set_error(struct cmqtt_client *client, const char *text) {
    snprintf(client->error, sizeof client->error, "%s", text);
}

static double monotonic_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void on_connect(struct mosquitto *mosq, void *object, int code) {
    (void)mosq;
    struct cmqtt_client *client = object;
    pthread_mutex_lock(&client->lock);
    client->answered = true;
    if (code == 0) {
        client->state = CMQTT_CONNECTED;
        client->connections += 1;
        client->error[0] = 0;
    } else {
        // 2: identifier rejected, 4: bad user name or password, 5: not authorised: asked again only slowly.
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
    // Room for every message held (the publisher is held to max_inflight): none is lost.
    if (client->ack_count < client->max_inflight) client->acks[client->ack_count++] = mid;
    pthread_mutex_unlock(&client->lock);
}

static void on_log(struct mosquitto *mosq, void *object, int level, const char *text) {
    (void)mosq;
    struct cmqtt_client *client = object;
    if (!text) return;
    // The one sign of every PUBLISH received, QoS 2 included (held silently until PUBREL): handle_publish.c
    // logs "Client ID received PUBLISH (d0, q2, ...". The network thread acts on it once the loop returns.
    const char *publish = (level & MOSQ_LOG_DEBUG) ? strstr(text, " received PUBLISH (d") : NULL;
    if (!(level & MOSQ_LOG_ERR) && !publish) return;
    pthread_mutex_lock(&client->lock);
    if (publish) {
        int dup = 0, qos = 0;
        if (client->unwanted_qos < 0) {
            client->unwanted_qos = sscanf(publish, " received PUBLISH (d%d, q%d", &dup, &qos) == 2 ? qos : 0;
        }
    } else {
        // One line for the log and the status: libmosquitto's own lines may end in a newline.
        snprintf(client->tls_error, sizeof client->tls_error, "%s", text);
        for (char *c = client->tls_error; *c; c++) {
            if ((unsigned char)*c < 0x20) *c = ' ';
        }
        for (size_t end = strlen(client->tls_error); end > 0 && client->tls_error[end - 1] == ' '; end--) {
            client->tls_error[end - 1] = 0;
        }
    }
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
        if (saved_errno == ECONNREFUSED) {
            snprintf(text, sizeof text, "connection refused (nothing listens on port %d)", client->port);
        } else if (saved_errno == ETIMEDOUT) {
            snprintf(text, sizeof text, "no answer to the connection (timed out)");
        } else {
            snprintf(text, sizeof text, "%s", strerror(saved_errno));
        }
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
    case MOSQ_ERR_KEEPALIVE:
        snprintf(text, sizeof text, "no answer from the broker within %d s", client->keepalive + client->keepalive / 2);
        break;
    case MOSQ_ERR_CONN_LOST:
        snprintf(text, sizeof text, client->answered ? "connection lost"
                                                     : "the broker closed the connection without an MQTT answer (is it "
                                                       "a TLS port, or no broker?)");
        break;
    case MOSQ_ERR_PROTOCOL:
        snprintf(text, sizeof text, "the broker's answer is not MQTT");
        break;
    default:
        // libmosquitto 2.0.11 says "Unknown error." for several codes: the number says which.
        snprintf(text, sizeof text, "%s (libmosquitto error %d)", mosquitto_strerror(code), code);
    }
    // A failure often shows as a lost connection or a protocol error: libmosquitto's log line says more. Over
    // TLS it is OpenSSL's reason; over plain MQTT, what it could not read (a TLS port, or not a broker at all).
    if (client->tls_error[0] && (code == MOSQ_ERR_CONN_LOST || code == MOSQ_ERR_PROTOCOL)) {
        if (client->tls) {
            snprintf(text, sizeof text, "TLS failed: %s", client->tls_error);
        } else {
            snprintf(text, sizeof text, "the broker's answer is not MQTT (is it a TLS port? libmosquitto: %s)", client->tls_error);
        }
    }
    if (text[0]) set_error(client, text);
    client->tls_error[0] = 0;
    pthread_mutex_unlock(&client->lock);
}

/// Whether the broker just misbehaved in a way only a new handle undoes, said in `error` if so.
static bool broker_was_hostile(struct cmqtt_client *client, int code) {
    char text[CMQTT_TEXT_CAPACITY];
    pthread_mutex_lock(&client->lock);
    int qos = client->unwanted_qos;
    client->unwanted_qos = -1;
    pthread_mutex_unlock(&client->lock);
    if (qos >= 0) {
        snprintf(text, sizeof text,
                 qos == 2 ? "the broker sent a QoS 2 message, though fieldlog subscribes to nothing; disconnected"
                          : "the broker sent a message, though fieldlog subscribes to nothing; disconnected");
    } else if (code == MOSQ_ERR_NOMEM) {
        // Nearly always a packet whose announced size libmosquitto could not allocate (packet_mosq.c).
        struct rlimit limit;
        if (getrlimit(RLIMIT_DATA, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
            snprintf(text, sizeof text, "the broker sent a packet larger than the %llu MiB fieldlog allows; disconnected",
                     (unsigned long long)(limit.rlim_cur >> 20));
        } else {
            snprintf(text, sizeof text, "out of memory reading from the broker; disconnected");
        }
    } else {
        return false;
    }
    pthread_mutex_lock(&client->lock);
    client->failures += 1;
    if (client->state != CMQTT_REJECTED) client->state = CMQTT_DISCONNECTED;
    set_error(client, text);
    pthread_mutex_unlock(&client->lock);
    return true;
}

/// Waits `delay` seconds, or until stopped; false when stopping.
static bool wait_for(struct cmqtt_client *client, double delay) {
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

/// Waits a random time in [0, min(max, min * 2^attempt)] ("full jitter"), or until stopped; false when stopping.
static bool back_off(struct cmqtt_client *client, int attempt) {
    double ceiling = client->backoff_min;
    for (int i = 0; i < attempt && ceiling < client->backoff_max; i++) ceiling *= 2;
    if (ceiling > client->backoff_max) ceiling = client->backoff_max;
    double delay = ceiling * ((double)rand_r(&client->seed) / (double)RAND_MAX);
    return wait_for(client, delay < 0.05 ? 0.05 : delay);
}

/// Waits before asking again after the `refusals`-th refusal in a row (1 or more): rejected_retry, doubled each
/// time up to rejected_retry_max (Sharing's ShareRetry). False when stopping.
static bool wait_after_rejection(struct cmqtt_client *client, int refusals) {
    double delay = client->rejected_retry;
    for (int i = 1; i < refusals && delay < client->rejected_retry_max; i++) delay *= 2;
    return wait_for(client, delay > client->rejected_retry_max ? client->rejected_retry_max : delay);
}

static int current_state(struct cmqtt_client *client, bool *stopping) {
    pthread_mutex_lock(&client->lock);
    int state = client->state;
    *stopping = client->stopping;
    pthread_mutex_unlock(&client->lock);
    return state;
}

/// A new handle with the client's settings; NULL with the reason in `failure`.
static struct mosquitto *make_handle(struct cmqtt_client *client, const char **failure) {
    // Clean session: a publisher keeps nothing at the broker; its unacknowledged messages are its own to resend.
    struct mosquitto *mosq = mosquitto_new(client->client_id, true, client);
    if (!mosq) {
        *failure = "cannot create the MQTT client";
        return NULL;
    }
    mosquitto_threaded_set(mosq, true);
    mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
    mosquitto_int_option(mosq, MOSQ_OPT_SEND_MAXIMUM, client->max_inflight);
    mosquitto_connect_callback_set(mosq, on_connect);
    mosquitto_disconnect_callback_set(mosq, on_disconnect);
    mosquitto_publish_callback_set(mosq, on_publish);
    mosquitto_log_callback_set(mosq, on_log);
    *failure = NULL;
    if (client->username && mosquitto_username_pw_set(mosq, client->username, client->password) != MOSQ_ERR_SUCCESS) {
        *failure = "invalid user name or password for MQTT";
    } else if (client->will_topic && client->will_payload &&
               mosquitto_will_set(mosq, client->will_topic, (int)strlen(client->will_payload), client->will_payload, 0,
                                  false) != MOSQ_ERR_SUCCESS) {
        *failure = "invalid last-will topic";
    } else if (client->tls) {
        mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
        int code = mosquitto_tls_set(mosq, client->ca_file, client->ca_file ? NULL : "/etc/ssl/certs", NULL, NULL, NULL);
        if (code != MOSQ_ERR_SUCCESS) *failure = "cannot read the CA file";
        // Peer verification and the host-name check stay on (mosquitto_tls_insecure_set is never called).
    }
    if (*failure) {
        mosquitto_destroy(mosq);
        return NULL;
    }
    return mosq;
}

/// Turns the acknowledged ids of the current handle into the shim's (under `handle_lock`).
static void settle_acks(struct cmqtt_client *client) {
    pthread_mutex_lock(&client->lock);
    for (int a = 0; a < client->ack_count; a++) {
        for (int i = 0; i < client->outgoing_count; i++) {
            if (client->outgoing[i].mid != client->acks[a]) continue;
            client->done[client->done_count++] = client->outgoing[i].id;
            free(client->outgoing[i].payload);
            memmove(&client->outgoing[i], &client->outgoing[i + 1],
                    (size_t)(client->outgoing_count - i - 1) * sizeof *client->outgoing);
            client->outgoing_count -= 1;
            break;
        }
    }
    client->ack_count = 0;
    pthread_mutex_unlock(&client->lock);
}

/// Frees the handle with all libmosquitto held (incoming QoS 2 state, a half-read packet) and makes a new one,
/// which takes the messages still unacknowledged, in order. False when no handle could be made (it is tried
/// again next time).
static bool renew_handle(struct cmqtt_client *client) {
    pthread_mutex_lock(&client->handle_lock);
    settle_acks(client);
    if (client->mosq) mosquitto_destroy(client->mosq);
    const char *failure;
    client->mosq = make_handle(client, &failure);
    for (int i = 0; client->mosq && i < client->outgoing_count; i++) {
        outgoing *message = &client->outgoing[i];
        // Not connected yet: queued all the same (NO_CONN), sent after CONNACK. A message that cannot be queued
        // (out of memory) gets no id, so no acknowledgement can match it; the next new handle tries it again.
        int code = mosquitto_publish(client->mosq, &message->mid, client->topic, message->length, message->payload,
                                     1, message->retain);
        if (code != MOSQ_ERR_SUCCESS && code != MOSQ_ERR_NO_CONN) message->mid = 0;
    }
    pthread_mutex_unlock(&client->handle_lock);
    if (!client->mosq) {
        pthread_mutex_lock(&client->lock);
        set_error(client, failure);
        pthread_mutex_unlock(&client->lock);
    }
    return client->mosq != NULL;
}

static void *network_thread(void *argument) {
    struct cmqtt_client *client = argument;
    int attempt = 0;
    int hostile = 0;  // hostile episodes in a row: each backs off longer
    int refusals = 0; // refusals of the credentials in a row
    double connected_at = 0;
    bool connected_socket = false;
    for (;;) {
        bool stopping;
        int state = current_state(client, &stopping);
        if (stopping) break;
        if (state == CMQTT_REJECTED) {
            // The state says "rejected" until the next attempt, which a new connection makes (libmosquitto
            // closes the refused socket first).
            if (!wait_after_rejection(client, ++refusals)) break;
            pthread_mutex_lock(&client->lock);
            if (client->state == CMQTT_REJECTED) client->state = CMQTT_DISCONNECTED;
            pthread_mutex_unlock(&client->lock);
            connected_socket = false;
            continue;
        }
        if (!client->mosq && !renew_handle(client)) {
            if (!back_off(client, attempt++)) break;
            continue;
        }
        if (!connected_socket) {
            pthread_mutex_lock(&client->lock);
            client->state = CMQTT_CONNECTING;
            client->answered = false;
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
            connected_at = monotonic_seconds();
        }
        // Five seconds at most: a publish from another thread wakes the loop at once (libmosquitto's socket
        // pair), as does cmqtt_stop, and keepalive pings need no finer clock. Fewer wake-ups for the recorder.
        errno = 0;
        int code = mosquitto_loop(client->mosq, 5000, 1);
        int saved_errno = errno;
        if (broker_was_hostile(client, code)) {
            connected_socket = false;
            renew_handle(client);  // without a handle, the next turn tries again
            hostile += 1;
            attempt = hostile;
            if (!back_off(client, attempt++)) break;
        } else if (code != MOSQ_ERR_SUCCESS) {
            connected_socket = false;
            note_failure(client, code, saved_errno);
            if (current_state(client, &stopping) == CMQTT_REJECTED) continue;
            if (!back_off(client, attempt++)) break;
        } else if (current_state(client, &stopping) == CMQTT_CONNECTED) {
            if (hostile > 0 && monotonic_seconds() - connected_at >= hostile_forgiven_after) hostile = 0;
            attempt = hostile;
            refusals = 0;
        }
    }
    if (connected_socket) {
        // A clean DISCONNECT: the broker drops the will (the owner chose to stop).
        mosquitto_disconnect(client->mosq);
        for (int i = 0; i < 5 && mosquitto_loop(client->mosq, 50, 1) == MOSQ_ERR_SUCCESS; i++) {}
    }
    return NULL;
}

static char *copy(const char *text) { return text ? strdup(text) : NULL; }

static void free_client(struct cmqtt_client *client) {
    if (client->mosq) mosquitto_destroy(client->mosq);
    for (int i = 0; i < client->outgoing_count; i++) free(client->outgoing[i].payload);
    free(client->outgoing);
    free(client->done);
    free(client->acks);
    free(client->host);
    free(client->client_id);
    free(client->username);
    if (client->password) {
        memset(client->password, 0, strlen(client->password));
        free(client->password);
    }
    free(client->ca_file);
    free(client->will_topic);
    free(client->will_payload);
    free(client->topic);
    pthread_cond_destroy(&client->wake);
    pthread_mutex_destroy(&client->lock);
    pthread_mutex_destroy(&client->handle_lock);
    free(client);
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
    pthread_mutex_init(&client->handle_lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&client->wake, &attributes);
    pthread_condattr_destroy(&attributes);
    client->unwanted_qos = -1;
    client->next_id = 1;
    client->host = strdup(options->host ? options->host : "");
    client->port = options->port;
    client->keepalive = options->keepalive > 0 ? options->keepalive : 60;
    client->backoff_min = options->backoff_min > 0 ? options->backoff_min : 1;
    client->backoff_max = options->backoff_max > client->backoff_min ? options->backoff_max : client->backoff_min;
    client->rejected_retry = options->rejected_retry > 0 ? options->rejected_retry : 60;
    client->rejected_retry_max =
        options->rejected_retry_max > client->rejected_retry ? options->rejected_retry_max : client->rejected_retry;
    client->max_inflight = options->max_inflight > 0 ? options->max_inflight : 10;
    client->client_id = copy(options->client_id);
    client->username = copy(options->username);
    client->password = copy(options->password);
    client->tls = options->tls;
    client->ca_file = copy(options->ca_file);
    client->will_topic = copy(options->will_topic);
    client->will_payload = copy(options->will_payload);
    client->topic = copy(options->topic);
    client->outgoing = calloc((size_t)client->max_inflight, sizeof *client->outgoing);
    client->done = calloc((size_t)client->max_inflight, sizeof *client->done);
    client->acks = calloc((size_t)client->max_inflight, sizeof *client->acks);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    client->seed = (unsigned int)(now.tv_nsec ^ (long)getpid() ^ (long)(uintptr_t)client);
    const char *failure = NULL;
    if (!client->host || !client->topic || !client->outgoing || !client->done || !client->acks ||
        (options->client_id && !client->client_id) || (options->username && !client->username) ||
        (options->password && !client->password) || (options->ca_file && !client->ca_file) ||
        (options->will_topic && !client->will_topic) || (options->will_payload && !client->will_payload)) {
        failure = "out of memory";
    } else {
        client->mosq = make_handle(client, &failure);
    }
    if (!failure && pthread_create(&client->thread, NULL, network_thread, client) != 0) {
        failure = "cannot start the MQTT network thread";
    }
    if (failure) {
        snprintf(error, error_capacity, "%s", failure);
        free_client(client);
        return NULL;
    }
    return client;
}

int cmqtt_publish(cmqtt_client *client, const void *payload, int length, bool retain) {
    pthread_mutex_lock(&client->handle_lock);
    int result = CMQTT_PUBLISH_FAILED;
    void *kept = malloc(length > 0 ? (size_t)length : 1);
    if (client->mosq && kept && client->outgoing_count < client->max_inflight) {
        memcpy(kept, payload, (size_t)length);
        int mid = 0;
        int code = mosquitto_publish(client->mosq, &mid, client->topic, length, payload, 1, retain);
        switch (code) {
        case MOSQ_ERR_SUCCESS:
        case MOSQ_ERR_NO_CONN:
            // At QoS 1 a message published while disconnected is queued all the same, and resent after CONNACK.
            if (mid > 0) {
                result = client->next_id;
                client->next_id = client->next_id == INT32_MAX ? 1 : client->next_id + 1;
                client->outgoing[client->outgoing_count++] =
                    (outgoing){.id = result, .mid = mid, .payload = kept, .length = length, .retain = retain};
                kept = NULL;
            }
            break;
        case MOSQ_ERR_PAYLOAD_SIZE:
        case MOSQ_ERR_OVERSIZE_PACKET:
            result = CMQTT_PUBLISH_TOO_LARGE;
            break;
        default:
            break;
        }
    }
    pthread_mutex_unlock(&client->handle_lock);
    free(kept);
    return result;
}

int cmqtt_take_acks(cmqtt_client *client, int *ids, int capacity) {
    pthread_mutex_lock(&client->handle_lock);
    settle_acks(client);
    int count = client->done_count < capacity ? client->done_count : capacity;
    memcpy(ids, client->done, (size_t)count * sizeof *ids);
    memmove(client->done, client->done + count, (size_t)(client->done_count - count) * sizeof *ids);
    client->done_count -= count;
    pthread_mutex_unlock(&client->handle_lock);
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
    pthread_mutex_lock(&client->handle_lock);
    if (client->mosq) mosquitto_disconnect(client->mosq);
    pthread_mutex_unlock(&client->handle_lock);
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
    free_client(client);
}
