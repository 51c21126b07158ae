import Foundation
import Synchronization

/// The decrypted network token a processor needs to authorise a payment: a device (or merchant) PAN, its
/// expiry, and either a 3-D Secure online cryptogram with an optional ECI, or EMV data.
///
/// Secret material: ``description`` and ``debugDescription`` print only the network and the last four digits,
/// and nothing here is `Codable`, so it cannot end up in a log line or the database by accident.
public struct NetworkToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How the device authenticated the payment.
    public enum Authentication: Sendable {
        /// `paymentDataType` 3DSecure: the online payment cryptogram (base64-decoded bytes) and ECI, when present.
        case threeDSecure(cryptogram: Data, eciIndicator: String?)
        /// `paymentDataType` EMV: EMV data bytes and, when present, the encrypted PIN data (hex).
        case emv(data: Data, encryptedPINData: String?)
    }

    /// `applicationPrimaryAccountNumber`: the device (DPAN) or merchant (MPAN) account number.
    public let primaryAccountNumber: String
    /// `applicationExpirationDate`, `YYMMDD`.
    public let expirationDate: String
    public let authentication: Authentication
    /// The card network from the token's payment method (`Visa`, `MasterCard`, ...), if known.
    public let network: String?

    public init(primaryAccountNumber: String, expirationDate: String, authentication: Authentication, network: String?)
    {
        self.primaryAccountNumber = primaryAccountNumber
        self.expirationDate = expirationDate
        self.authentication = authentication
        self.network = network
    }

    /// The last four digits of the PAN: the only part of it that may be stored or shown.
    public var lastFour: String { String(primaryAccountNumber.suffix(4)) }

    public var description: String { "NetworkToken(\(network ?? "unknown network") ••••\(lastFour))" }
    public var debugDescription: String { description }
    /// `dump` and debuggers see the network and last four digits only.
    public var customMirror: Mirror { Mirror(self, children: ["network": network as Any, "lastFour": lastFour]) }
}

/// One charge sent to a processor.
public struct ChargeRequest: Sendable, CustomStringConvertible, CustomReflectable {
    public let token: NetworkToken
    /// Amount in minor units of ``currencyCode``.
    public let amount: Int64
    /// ISO 4217 alphabetic code.
    public let currencyCode: String
    /// Same key, same charge: processors must not charge twice for one key. The merchant server uses the
    /// token's `transactionId`.
    public let idempotencyKey: String

    public init(token: NetworkToken, amount: Int64, currencyCode: String, idempotencyKey: String) {
        self.token = token
        self.amount = amount
        self.currencyCode = currencyCode
        self.idempotencyKey = idempotencyKey
    }

    public var description: String { "ChargeRequest(\(amount) \(currencyCode), \(token), key \(idempotencyKey))" }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "token": token, "amount": amount, "currencyCode": currencyCode, "idempotencyKey": idempotencyKey,
            ])
    }
}

/// What a processor answered.
public enum ChargeOutcome: Sendable, Equatable {
    /// Authorised and captured; `reference` is the processor's id for the charge.
    case approved(reference: String)
    /// The issuer or processor refused the card; nothing was charged.
    case declined(DeclineReason)
    /// The processor failed (or timed out); nothing was charged. `code` is stable (`processorError`,
    /// `processorTimeout`, ...), `message` is for logs.
    case error(code: String, message: String)

    /// Equal when the same kind with the same reference, reason or error code (error messages are for logs).
    public static func == (lhs: ChargeOutcome, rhs: ChargeOutcome) -> Bool {
        switch (lhs, rhs) {
        case (.approved(let a), .approved(let b)): a == b
        case (.declined(let a), .declined(let b)): a == b
        case (.error(let a, _), .error(let b, _)): a == b
        default: false
        }
    }
}

/// Why a card was declined (stable codes).
public struct DeclineReason: Hashable, Sendable, CustomStringConvertible {
    public let code: String
    public init(code: String) { self.code = code }
    public var description: String { code }

    public static let insufficientFunds = DeclineReason(code: "insufficientFunds")
    public static let lostCard = DeclineReason(code: "lostCard")
    public static let stolenCard = DeclineReason(code: "stolenCard")
    public static let expiredCard = DeclineReason(code: "expiredCard")
    public static let doNotHonor = DeclineReason(code: "doNotHonor")
}

/// A payment processor (acquirer, gateway): authorises and captures one charge.
///
/// Implementations must honour task cancellation promptly: ``PaymentProcessing/charge(_:with:timeout:)`` cancels
/// the call when it exceeds its time limit, and the payment is then recorded as failed with nothing captured.
/// Expected refusals are ``ChargeOutcome`` values; throw only for failures the processor cannot describe.
public protocol PaymentProcessor: Sendable {
    /// A short name for logs and metrics (`sandbox`).
    var name: String { get }

    /// Authorises and captures the charge.
    func charge(_ request: ChargeRequest) async throws -> ChargeOutcome
}

/// Bounded processor calls.
public enum PaymentProcessing {
    /// Calls the processor, giving up after `timeout`: the answer is then `.error(code: "processorTimeout")` and
    /// the call's task is cancelled. A thrown error becomes `.error(code: "processorError")`. Never throws, and
    /// returns at the time limit even if the processor ignores cancellation.
    /// - Parameters:
    ///   - request: the charge.
    ///   - processor: where to send it.
    ///   - timeout: the upper bound for the call.
    public static func charge(
        _ request: ChargeRequest, with processor: any PaymentProcessor, timeout: Duration
    ) async -> ChargeOutcome {
        let answer = OnceAnswer()
        return await withCheckedContinuation { (continuation: CheckedContinuation<ChargeOutcome, Never>) in
            answer.install(continuation)
            let call = Task {
                let outcome: ChargeOutcome
                do {
                    outcome = try await processor.charge(request)
                } catch {
                    outcome = .error(code: "processorError", message: "\(processor.name) failed: \(type(of: error))")
                }
                return answer.resume(with: outcome)
            }
            // The time limit runs on a serial Dispatch queue of its own: such a queue gets a thread even when
            // every thread of the shared pool (which on Linux also runs Swift's tasks) is busy, so it fires on time.
            let timer = DispatchWorkItem {
                if answer.resume(
                    with: .error(
                        code: "processorTimeout", message: "\(processor.name) did not answer within \(timeout)"))
                {
                    call.cancel()
                }
            }
            timeLimits.asyncAfter(deadline: .now() + dispatchInterval(timeout), execute: timer)
            Task {
                // Once the processor has answered, the timer has nothing left to do.
                if await call.value { timer.cancel() }
            }
        }
    }
}

/// Where processor time limits fire; serial, so Dispatch gives it a thread of its own when the pool is busy.
private let timeLimits = DispatchQueue(label: "MerchantServer.PaymentProcessing.timeLimits")

/// A `Duration` as a Dispatch interval: negative is zero, too long to count in nanoseconds is never.
private func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
    let (seconds, attoseconds) = max(duration, .zero).components
    let whole = Int(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000)
    let total = whole.partialValue.addingReportingOverflow(Int(attoseconds / 1_000_000_000))
    return whole.overflow || total.overflow ? .never : .nanoseconds(total.partialValue)
}

/// Resumes a continuation exactly once, whichever of the processor and the timer answers first.
private final class OnceAnswer: Sendable {
    private let state = Mutex<CheckedContinuation<ChargeOutcome, Never>?>(nil)

    func install(_ continuation: CheckedContinuation<ChargeOutcome, Never>) {
        state.withLock { $0 = continuation }
    }

    /// Returns whether this call was the one that answered.
    @discardableResult
    func resume(with outcome: ChargeOutcome) -> Bool {
        guard
            let continuation = state.withLock({ value in
                defer { value = nil }
                return value
            })
        else { return false }
        continuation.resume(returning: outcome)
        return true
    }
}
