internal import CMosquittoShim
import FoundationEssentials
import Synchronization

/// OwnTracks over MQTT through libmosquitto (CMosquittoShim): QoS 1, not retained, a last will marking the
/// device offline; a refusal of the credentials is asked again on `ShareRetry`'s slow schedule. The client keeps
/// an unacknowledged message (the window at most) and resends it after a reconnection, also on the new
/// libmosquitto handle it makes after a hostile broker; that copy dies with the process, which is why the
/// journal, not the client, is the queue.
package final class MQTTTransport: ShareTransport, @unchecked Sendable {
    package struct Settings: Sendable {
        package var destination: ShareDestination
        package var password: String?
        package var caFile: String?
        package var tid: String
        package var keepalive = 60
        package var window = 10
        package var backoffMin = 1.0
        package var backoffMax = 120.0
        package var rejectedRetry = ShareRetry.rejectedDefault
    }

    package let window: Int
    private let client: OpaquePointer
    /// Message ids of libmosquitto to the engine's tokens.
    private let tokens = Mutex<[Int32: Int]>([:])

    package init(_ settings: Settings) throws(ShareError) {
        window = settings.window
        let destination = settings.destination
        let will = OwnTracksMessage.lastWill(tid: settings.tid, connectedAt: Date().timeIntervalSince1970)
        let clientID = "fieldlog-" + destination.device
        var error = [CChar](repeating: 0, count: 200)
        let started: OpaquePointer? = destination.host.withCString { host in
            clientID.withCString { clientID in
                // A URL without a user logs in anonymously: no user name, and no password.
                withOptionalCString(destination.user) { user in
                    withOptionalCString(destination.user == nil ? nil : settings.password) { password in
                        withOptionalCString(settings.caFile) { caFile in
                            destination.topic.withCString { topic in
                                will.withCString { willPayload in
                                    var options = cmqtt_options(
                                        host: host, port: Int32(destination.port), client_id: clientID, topic: topic,
                                        username: user, password: password, tls: destination.tls, ca_file: caFile,
                                        will_topic: topic, will_payload: willPayload,
                                        keepalive: Int32(settings.keepalive), max_inflight: Int32(settings.window),
                                        backoff_min: settings.backoffMin, backoff_max: settings.backoffMax,
                                        rejected_retry: settings.rejectedRetry,
                                        rejected_retry_max: ShareRetry.rejectedMax)
                                    return cmqtt_start(&options, &error, error.count)
                                }
                            }
                        }
                    }
                }
            }
        }
        guard let started else {
            throw ShareError(
                "\(destination.url): \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
            )
        }
        client = started
    }

    package func submit(_ payload: [UInt8], token: Int) -> ShareSubmission {
        // The id is recorded under the lock, before an acknowledgement for it could be taken.
        tokens.withLock { tokens in
            let id = payload.withUnsafeBytes { bytes in
                cmqtt_publish(client, bytes.baseAddress, Int32(bytes.count), false)
            }
            switch Int(id) {
            case Int(CMQTT_PUBLISH_TOO_LARGE): return .refused
            case ..<1: return .later
            default:
                tokens[id] = token
                return .accepted
            }
        }
    }

    package func poll() -> ShareTransportPoll {
        var ids = [Int32](repeating: 0, count: 256)
        let count = Int(cmqtt_take_acks(client, &ids, Int32(ids.count)))
        let acknowledged = tokens.withLock { tokens in ids.prefix(count).compactMap { tokens.removeValue(forKey: $0) } }
        var status = cmqtt_status()
        cmqtt_status_get(client, &status)
        let error = withUnsafeBytes(of: status.error) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        let connection: ShareConnection =
            switch Int(status.state) {
            case Int(CMQTT_CONNECTED): .connected
            case Int(CMQTT_CONNECTING): .connecting
            case Int(CMQTT_REJECTED): .rejected
            default: .disconnected
            }
        return ShareTransportPoll(
            acknowledged: acknowledged, connection: connection, error: error.isEmpty ? nil : error)
    }

    private let stopped = Mutex(false)

    package func stop() async {
        guard
            stopped.withLock({
                let was = $0
                $0 = true
                return !was
            })
        else { return }
        cmqtt_stop(client)
    }

    deinit {
        if !stopped.withLock({ $0 }) { cmqtt_stop(client) }
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
