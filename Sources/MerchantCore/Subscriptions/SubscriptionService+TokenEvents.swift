import ApplePay
import Foundation
import Foundations
import Logging
import Synchronization

/// Apple's merchant-token events and their notifications.
extension SubscriptionService {
    // MARK: Apple's merchant-token events

    /// What applying an event did.
    public enum EventResult: String, Sendable {
        /// Applied now, applied before, or unknown to Apple's gateway: Apple is answered 200.
        case applied, alreadyApplied, unknownEvent
        /// Not applied (Apple is answered non-200 and retries): no gateway configured, the gateway failed or did
        /// not answer, the store failed, too many pulls at once, or not done within the notification's time limit.
        case noGateway, gatewayFailed, storeFailed, busy, timedOut

        /// Whether Apple may consider the notification handled (`200`).
        public var isHandled: Bool { self == .applied || self == .alreadyApplied || self == .unknownEvent }
    }

    /// Pulls event `eventID` from the gateway and applies it once, in one store transaction that records the event
    /// id together with the subscriptions' change (``SubscriptionStore/applyTokenEvent(eventID:eventType:merchantTokenIdentifier:change:)``),
    /// tried again when a concurrent writer conflicts, so an `UNLINK` is never recorded without its effect:
    /// `UNLINK` stops every subscription on the token; `UPDATED_METADATA` updates the card (``CardMetadata``);
    /// `UPDATED_CARD_ART` records the art's URL; `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY` is recorded and otherwise
    /// ignored on purpose (this server sends no usage-information notifications, the only use of that key).
    public func applyTokenEvent(eventID: String) async -> EventResult {
        guard let gateway else { return .noGateway }
        let event: MerchantTokenEvent?
        do {
            event = try await gateway.event(id: eventID)
        } catch {
            logger.warning(
                "cannot pull the merchant token event",
                metadata: ["eventId": "\(eventID.prefix(64))", "error": "\(error)"])
            return .gatewayFailed
        }
        guard let event else { return .unknownEvent }
        switch event.eventType {
        case "UNLINK", "UPDATED_METADATA", "UPDATED_CARD_ART": break
        case "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY":
            logger.info(
                "merchant token public key updated: ignored on purpose (no usage-information notifications are sent)",
                metadata: ["eventId": "\(eventID)"])
        default:
            logger.warning(
                "unknown merchant token event type: recorded, nothing changed", metadata: ["eventId": "\(eventID)"])
        }
        let change = Self.change(for: event)
        for _ in 0..<5 {
            do {
                guard
                    let changed = try await store.applyTokenEvent(
                        eventID: eventID, eventType: event.eventType,
                        merchantTokenIdentifier: event.merchantTokenIdentifier, change: change)
                else { return .alreadyApplied }
                logger.info(
                    "merchant token event applied",
                    metadata: [
                        "eventId": "\(eventID)", "eventType": "\(event.eventType)", "subscriptions": "\(changed)",
                    ])
                return .applied
            } catch  where error.code == .conflict {
                continue  // a concurrent writer: the whole event again, over what it wrote
            } catch {
                logger.error(
                    "cannot apply the merchant token event",
                    metadata: ["eventId": "\(eventID)", "code": "\(error.code.rawValue)"])
                return .storeFailed
            }
        }
        logger.error("cannot apply the merchant token event: it kept conflicting", metadata: ["eventId": "\(eventID)"])
        return .storeFailed
    }

    /// What `event` does to one subscription on its token (`nil`: nothing).
    static func change(for event: MerchantTokenEvent) -> @Sendable (Subscription) -> Subscription? {
        { subscription in
            var next = subscription
            switch event.eventType {
            case "UNLINK":
                guard subscription.status != .unlinked else { return nil }
                next.status = .unlinked
                next.statusReason = event.reason
                next.nextChargeAt = nil
            case "UPDATED_METADATA":
                if let card = event.merchantTokenMetadata?.cardMetadata {
                    next.cardSuffix = card.fpanSuffix ?? next.cardSuffix
                    next.cardExpiration = card.expirationDate ?? next.cardExpiration
                    next.cardCountry = card.cardCountry ?? next.cardCountry
                    next.cardDescription = card.shortDescription ?? next.cardDescription
                    next.cardLongDescription = card.longDescription ?? next.cardLongDescription
                }
                if let art = event.merchantTokenMetadata?.cardArt?.first?.url { next.cardArtURL = art }
            case "UPDATED_CARD_ART":
                if let art = event.merchantTokenMetadata?.cardArt?.first?.url { next.cardArtURL = art }
            default:
                return nil
            }
            return next == subscription ? nil : next
        }
    }

    /// Apple's notification `GET {tokenNotificationURL}/notification/merchantToken/{eventId}`, answered only once
    /// its event is pulled and applied (``applyTokenEvent(eventID:)``) or known to be, within `timeLimit`: a
    /// second notification of an event being pulled joins that pull (``TokenNotifications``), and pulls beyond the
    /// notification share wait briefly, then answer ``EventResult/busy`` (Apple retries a non-200). A pull outlives a
    /// time limit that ran out: it still completes and is found applied when Apple retries.
    public func handleTokenNotification(eventID: String, timeLimit: Duration) async -> EventResult {
        guard gateway != nil else { return .noGateway }
        guard let pull = await notifications.pull(eventID, start: { await self.applyTokenEvent(eventID: eventID) })
        else { return .busy }
        // The time limit abandons the wait, not the pull (awaiting a task's value does not cancel it).
        let waited = await PaymentProcessing.withTimeLimit(timeLimit) {
            () async throws(ProcessorError) -> EventResult in
            await pull.value
        }
        if case .success(let result) = waited { return result }
        return .timedOut
    }
}

/// The notification pulls in flight: one per event id (a repeated notification joins it), at most the share's
/// places at once (and its queue waiting briefly), so a burst of notifications neither floods Apple's gateway nor
/// piles up work.
public final class TokenNotifications: Sendable {
    /// Four pulls at once, eight waiting up to half a second: Apple retries at once on a non-200.
    public static let defaultShare = Bulkhead.Limits(
        maximumInFlight: 4, maximumQueued: 8, maximumWait: .milliseconds(500))

    public let share: Bulkhead
    private let inFlight = Mutex<[String: Task<SubscriptionService.EventResult, Never>]>([:])

    public init(share: Bulkhead.Limits = TokenNotifications.defaultShare) {
        self.share = Bulkhead(name: "tokenNotifications", limits: share)
    }

    /// The pull of `eventID` in flight, or a new one started in a place of the share; `nil` when the share is full.
    func pull(
        _ eventID: String, start: @escaping @Sendable () async -> SubscriptionService.EventResult
    ) async -> Task<SubscriptionService.EventResult, Never>? {
        if let running = inFlight.withLock({ $0[eventID] }) { return running }
        guard await share.acquire() else { return nil }
        return inFlight.withLock { pulls in
            if let running = pulls[eventID] {
                share.release()
                return running
            }
            let task = Task { [share, weak self] in
                let result = await start()
                self?.inFlight.withLock { _ = $0.removeValue(forKey: eventID) }
                share.release()
                return result
            }
            pulls[eventID] = task
            return task
        }
    }

    /// How many event pulls are in flight.
    public var count: Int { inFlight.withLock { $0.count } }
}
