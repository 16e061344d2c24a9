// A narrow view of libmosquitto for Swift: one client, one network thread the shim owns, plain structs and
// integer results. No struct mosquitto, callback or MOSQ_ERR_* code leaves C.
#ifndef CMOSQUITTOSHIM_H
#define CMOSQUITTOSHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cmqtt_client cmqtt_client;

/// How to reach and log in to a broker. Strings are copied; NULL means none.
typedef struct {
    const char *host;
    int port;
    const char *client_id;
    const char *topic;         // where every message goes
    const char *username;
    const char *password;      // copied into libmosquitto, never kept or printed by the shim
    bool tls;                  // TLS with the peer verified (certificate chain and host name)
    const char *ca_file;       // also trust this PEM file (with tls); the system's CAs are always trusted
    const char *will_topic;    // the last will, sent by the broker when the connection dies without DISCONNECT
    const char *will_payload;
    int keepalive;             // seconds
    int max_inflight;          // QoS 1 messages awaiting PUBACK at most
    double backoff_min;        // seconds: reconnections wait a random time in [0, min(max, min * 2^n)]
    double backoff_max;
    double rejected_retry;     // seconds: after the broker refused the credentials, asked again after this,
    double rejected_retry_max; // then twice as long each time up to this
} cmqtt_options;

enum {
    CMQTT_DISCONNECTED = 0,  // waiting to try again
    CMQTT_CONNECTING = 1,
    CMQTT_CONNECTED = 2,     // CONNACK accepted
    CMQTT_REJECTED = 3,      // the broker refused the credentials or the client id: asked again on the slow schedule
};

enum {
    CMQTT_TEXT_CAPACITY = 200,
};

/// The connection as of now.
typedef struct {
    int state;
    uint64_t connections;   // CONNACKs accepted so far
    uint64_t failures;      // connection attempts failed or connections lost so far
    char error[CMQTT_TEXT_CAPACITY];  // the latest failure in words ("" when none); never holds the password
} cmqtt_status;

/// Starts a client and its network thread, which connects, reconnects with jittered backoff and keeps the
/// connection alive. NULL on failure, with the reason in `error`.
cmqtt_client *cmqtt_start(const cmqtt_options *options, char *error, size_t error_capacity);

enum {
    CMQTT_PUBLISH_TOO_LARGE = -2,  // the broker or MQTT cannot take a payload this large: it will never go
    CMQTT_PUBLISH_FAILED = -1,     // nothing queued (out of memory, rejected client): try again later
};

/// Publishes at QoS 1: a message id > 0 once the client holds the message (it resends it after a reconnection
/// until its PUBACK comes), else a CMQTT_PUBLISH_* code. At most `max_inflight` messages are held: beyond them,
/// CMQTT_PUBLISH_FAILED until acknowledgements come.
int cmqtt_publish(cmqtt_client *client, const void *payload, int length, bool retain);

/// Moves up to `capacity` ids of messages acknowledged (PUBACK) since the last call into `ids`; returns how many.
int cmqtt_take_acks(cmqtt_client *client, int *ids, int capacity);

void cmqtt_status_get(cmqtt_client *client, cmqtt_status *out);

/// Disconnects cleanly (no will), stops the thread and frees the client.
void cmqtt_stop(cmqtt_client *client);

#endif
