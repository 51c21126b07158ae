import ApplePay
import Foundation

/// The billing rules, as pure functions of a subscription: when a cycle is due, what it costs, and the state after
/// an approval or a decline. The scheduler (``SubscriptionService/chargeDue(now:)``) applies them.
///
/// Retries: a declined cycle is retried 1, 3 and 7 days after its due date (``retryDays``); the subscription is
/// `pastDue` meanwhile; when the third retry is declined too it is `cancelled` (reason `unpaid`). Dates are
/// counted from the plan's anchor, so a late or retried charge never shifts the following cycles.
public enum SubscriptionBilling {
    /// Days after the due date at which a declined cycle is tried again.
    public static let retryDays = [1, 3, 7]

    /// When cycle `cycle` (from 1) is due.
    public static func dueDate(of subscription: Subscription, cycle: Int) -> Date? {
        switch subscription.plan {
        case .recurring(let plan):
            let date = BillingCalendar.date(
                subscription.anchor, plus: cycle - 1, plan.intervalUnit, every: plan.intervalCount)
            if let end = plan.endDate, date > end { return nil }
            return date
        case .deferred(let plan): return cycle == 1 ? plan.billingDate : nil
        case .automaticReload: return nil
        }
    }

    /// The catch-up rule: after an outage, at most one missed cycle is charged. When cycles after the current one
    /// are due at `now` too, the subscription moves to the latest due cycle, counting the ones passed over in
    /// ``Subscription/skippedCycles`` (they are never charged); `nil` when at most one cycle is due. Only a recurring
    /// plan on its first attempt of a cycle has cycles to skip (a retried cycle keeps its retry dates).
    public static func catchUp(_ subscription: Subscription, now: Date) -> Subscription? {
        guard case .recurring = subscription.plan, subscription.attempt == 0, subscription.isLive else { return nil }
        var latest = subscription.cycle
        while latest - subscription.cycle < 100_000, let due = dueDate(of: subscription, cycle: latest + 1), due <= now
        {
            latest += 1
        }
        guard latest > subscription.cycle else { return nil }
        var next = subscription
        next.skippedCycles += latest - subscription.cycle
        next.cycle = latest
        next.nextChargeAt = dueDate(of: subscription, cycle: latest)
        return next
    }

    /// The idempotency key of one attempt: one charge per subscription, cycle and attempt at the processor.
    public static func idempotencyKey(_ subscription: Subscription) -> String {
        "\(subscription.id):c\(subscription.cycle):a\(subscription.attempt)"
    }

    /// The subscription after its current cycle was approved.
    public static func afterApproval(_ subscription: Subscription) -> Subscription {
        var next = subscription
        next.cycle += 1
        next.attempt = 0
        next.status = .active
        next.statusReason = nil
        switch subscription.plan {
        case .recurring:
            next.nextChargeAt = dueDate(of: next, cycle: next.cycle)
            if next.nextChargeAt == nil {
                next.status = .cancelled
                next.statusReason = "ended"
            }
        case .automaticReload:
            next.nextChargeAt = nil
        case .deferred:
            next.nextChargeAt = nil
            next.status = .cancelled
            // A late cancellation keeps saying who cancelled; otherwise the plan ended by being charged.
            next.statusReason = subscription.status == .cancelled ? subscription.statusReason : "charged"
        }
        return next
    }

    /// Whether cancelling `subscription` at `now` still owes its charge: a deferred plan not charged yet,
    /// cancelled after its `freeCancellationDate` (the instant the payment request showed; its time zone only
    /// says how the sheet displays it). Without a free-cancellation date, cancelling before the billing date is
    /// free. Other plans never owe a charge on cancellation: future cycles are simply not charged.
    public static func cancellationOwesCharge(_ subscription: Subscription, at now: Date) -> Bool {
        guard case .deferred(let plan) = subscription.plan, subscription.cycle == 1,
            subscription.nextChargeAt != nil, let deadline = plan.freeCancellationDate
        else { return false }
        return now > deadline
    }

    /// The subscription after its current attempt was declined: retried, or cancelled after the last retry.
    public static func afterDecline(_ subscription: Subscription, dueAt: Date) -> Subscription {
        var next = subscription
        next.attempt += 1
        if next.attempt <= retryDays.count {
            // A charge still owed after a late cancellation is retried too, the subscription staying cancelled.
            next.status = subscription.status == .cancelled ? .cancelled : .pastDue
            next.statusReason = subscription.status == .cancelled ? subscription.statusReason : nil
            next.nextChargeAt = BillingCalendar.date(dueAt, plus: retryDays[next.attempt - 1], .day, every: 1)
        } else {
            next.status = .cancelled
            next.statusReason = "unpaid"
            next.nextChargeAt = nil
        }
        return next
    }

    /// The subscription once `charge` (decided: `approved` or `declined`) is recorded over `current`, and whether
    /// an approved charge must be given back. Still on the charge's attempt and chargeable, the outcome moves it on
    /// (``afterApproval(_:)``, ``afterDecline(_:dueAt:)``); ended meanwhile (cancelled, unlinked) or, oddly, past
    /// that attempt, it stays as it is, and an approval is given back. The attempt the charge settles is resolved.
    /// The scheduler's answer, its look-up and a provider's webhook all record a charge by this one rule.
    public static func afterDecided(_ current: Subscription, _ charge: SubscriptionCharge) -> (
        next: Subscription, givesBack: Bool
    ) {
        let sameAttempt = current.cycle == charge.cycle && current.attempt == charge.attempt
        // A cancelled deferred plan that still owes its charge (nextChargeAt kept) is charged as due.
        let chargeable = current.isLive || (current.status == .cancelled && current.nextChargeAt != nil)
        var next: Subscription
        let givesBack: Bool
        if sameAttempt && chargeable {
            next =
                charge.status == "approved"
                ? afterApproval(current) : afterDecline(current, dueAt: charge.dueAt)
            givesBack = false
        } else {
            next = current
            givesBack = charge.status == "approved"
        }
        if next.unresolvedCharge?.idempotencyKey == charge.idempotencyKey { next.unresolvedCharge = nil }
        return (next, givesBack)
    }

    /// The due date of the current cycle (the first attempt's date, whatever the attempt).
    public static func currentDueDate(of subscription: Subscription) -> Date {
        switch subscription.plan {
        case .automaticReload:
            // Reloads are due when requested; retries count from the first attempt.
            guard subscription.attempt > 0, let next = subscription.nextChargeAt else {
                return subscription.nextChargeAt ?? subscription.anchor
            }
            return BillingCalendar.date(next, plus: -retryDays[subscription.attempt - 1], .day, every: 1)
        default:
            return dueDate(of: subscription, cycle: subscription.cycle) ?? subscription.nextChargeAt
                ?? subscription.anchor
        }
    }
}
