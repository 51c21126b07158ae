import Foundation

// The JSON bodies of docs/PROCESSOR-PROTOCOL.md, shared by the service (ProcessorService) and the client
// (MerchantServer's HTTPPaymentProcessor). Amounts are integer minor units of `currencyCode` (ISO 4217).

/// The payment method of a charge: the decrypted network token. Secret: ``description`` and `dump` show the
/// network and last four digits only.
public struct PaymentMethodBody: Codable, Sendable, CustomStringConvertible, CustomReflectable {
    /// `Visa`, `MasterCard`, ...; `nil` when unknown.
    public var network: String?
    /// The device (DPAN) or merchant (MPAN) account number, 12 to 19 digits.
    public var primaryAccountNumber: String
    /// `YYMMDD`.
    public var expirationDate: String
    /// 3-D Secure: the online payment cryptogram, base64.
    public var cryptogram: String?
    public var eciIndicator: String?
    /// EMV: the EMV data, base64.
    public var emvData: String?
    /// EMV: the encrypted PIN data, hex.
    public var encryptedPINData: String?

    public init(
        network: String?, primaryAccountNumber: String, expirationDate: String, cryptogram: String? = nil,
        eciIndicator: String? = nil, emvData: String? = nil, encryptedPINData: String? = nil
    ) {
        self.network = network
        self.primaryAccountNumber = primaryAccountNumber
        self.expirationDate = expirationDate
        self.cryptogram = cryptogram
        self.eciIndicator = eciIndicator
        self.emvData = emvData
        self.encryptedPINData = encryptedPINData
    }

    /// The last four digits of the PAN: all of it that may be stored or logged.
    public var lastFour: String { String(primaryAccountNumber.suffix(4)) }
    public var description: String { "PaymentMethodBody(\(network ?? "unknown network") ••••\(lastFour))" }
    public var customMirror: Mirror { Mirror(self, children: ["network": network as Any, "lastFour": lastFour]) }
}

/// `POST /v1/charges`.
public struct CreateChargeBody: Codable, Sendable, CustomStringConvertible {
    public var idempotencyKey: String
    /// Minor units of ``currencyCode``, greater than zero.
    public var amount: Int64
    public var currencyCode: String
    public var paymentMethod: PaymentMethodBody
    /// SHA-256 (lowercase hex) of the DER of the root the token chained to.
    public var rootFingerprint: String?
    /// Keep the payment method for merchant-initiated charges: an approved charge then answers a
    /// `paymentMethodReference`.
    public var storePaymentMethod: Bool?

    public init(
        idempotencyKey: String, amount: Int64, currencyCode: String, paymentMethod: PaymentMethodBody,
        rootFingerprint: String?, storePaymentMethod: Bool? = nil
    ) {
        self.storePaymentMethod = storePaymentMethod
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.currencyCode = currencyCode
        self.paymentMethod = paymentMethod
        self.rootFingerprint = rootFingerprint
    }

    public var description: String {
        "CreateChargeBody(\(amount) \(currencyCode), \(paymentMethod), key \(idempotencyKey))"
    }
}

/// The state of a charge on the wire.
public enum ChargeStatus: String, Codable, Sendable, CaseIterable {
    case approved, declined, voided, refunded, partiallyRefunded
}

/// A charge as the processor's ledger holds it (`{"charge": ...}`, and each element of `{"charges": [...]}`).
public struct ChargeResource: Codable, Sendable, Equatable {
    /// The processor's id for the charge (declined charges have one too).
    public var reference: String
    public var idempotencyKey: String
    /// Minor units of ``currencyCode``.
    public var amount: Int64
    public var currencyCode: String
    public var status: ChargeStatus
    /// Minor units refunded so far.
    public var refundedAmount: Int64
    /// Why it was declined (`insufficientFunds`, `lostCard`, `notSandboxToken`, ...), for `declined` only.
    public var declineCode: String?
    public var network: String?
    /// The PAN's last four digits.
    public var lastFour: String?
    /// ISO 8601, UTC.
    public var createdAt: String
    /// The kept payment method: on an approved charge made with `storePaymentMethod`, and on charges of a kept
    /// method.
    public var paymentMethodReference: String?

    public init(
        reference: String, idempotencyKey: String, amount: Int64, currencyCode: String, status: ChargeStatus,
        refundedAmount: Int64 = 0, declineCode: String? = nil, network: String? = nil, lastFour: String? = nil,
        createdAt: String, paymentMethodReference: String? = nil
    ) {
        self.paymentMethodReference = paymentMethodReference
        self.reference = reference
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.currencyCode = currencyCode
        self.status = status
        self.refundedAmount = refundedAmount
        self.declineCode = declineCode
        self.network = network
        self.lastFour = lastFour
        self.createdAt = createdAt
    }
}

/// `POST /v1/payment-methods`: keep a payment method without charging it (a deferred payment).
public struct StorePaymentMethodBody: Codable, Sendable, CustomStringConvertible {
    public var idempotencyKey: String
    public var paymentMethod: PaymentMethodBody
    public var rootFingerprint: String?

    public init(idempotencyKey: String, paymentMethod: PaymentMethodBody, rootFingerprint: String?) {
        self.idempotencyKey = idempotencyKey
        self.paymentMethod = paymentMethod
        self.rootFingerprint = rootFingerprint
    }

    public var description: String { "StorePaymentMethodBody(\(paymentMethod), key \(idempotencyKey))" }
}

/// A kept payment method (`{"paymentMethod": ...}`): the processor's reference and what may be shown, no PAN.
public struct PaymentMethodResource: Codable, Sendable, Equatable {
    public var reference: String
    public var idempotencyKey: String
    public var network: String?
    public var lastFour: String?
    public var createdAt: String

    public init(reference: String, idempotencyKey: String, network: String?, lastFour: String?, createdAt: String) {
        self.reference = reference
        self.idempotencyKey = idempotencyKey
        self.network = network
        self.lastFour = lastFour
        self.createdAt = createdAt
    }
}

/// `{"paymentMethod": ...}`.
public struct PaymentMethodEnvelope: Codable, Sendable, Equatable {
    public var paymentMethod: PaymentMethodResource
    public init(paymentMethod: PaymentMethodResource) { self.paymentMethod = paymentMethod }
}

/// `POST /v1/payment-methods/{reference}/charges`: a merchant-initiated charge of a kept method.
public struct StoredMethodChargeBody: Codable, Sendable, Equatable {
    public var idempotencyKey: String
    /// Minor units of ``currencyCode``, greater than zero.
    public var amount: Int64
    public var currencyCode: String

    public init(idempotencyKey: String, amount: Int64, currencyCode: String) {
        self.idempotencyKey = idempotencyKey
        self.amount = amount
        self.currencyCode = currencyCode
    }
}

/// `POST /v1/charges/{reference}/refunds`.
public struct CreateRefundBody: Codable, Sendable, Equatable {
    /// Minor units of the charge's currency, greater than zero.
    public var amount: Int64
    public var idempotencyKey: String

    public init(amount: Int64, idempotencyKey: String) {
        self.amount = amount
        self.idempotencyKey = idempotencyKey
    }
}

/// One refund of a charge.
public struct RefundResource: Codable, Sendable, Equatable {
    public var reference: String
    public var idempotencyKey: String
    public var chargeReference: String
    public var amount: Int64
    public var currencyCode: String
    public var createdAt: String

    public init(
        reference: String, idempotencyKey: String, chargeReference: String, amount: Int64, currencyCode: String,
        createdAt: String
    ) {
        self.reference = reference
        self.idempotencyKey = idempotencyKey
        self.chargeReference = chargeReference
        self.amount = amount
        self.currencyCode = currencyCode
        self.createdAt = createdAt
    }
}

/// `{"charge": ...}`.
public struct ChargeEnvelope: Codable, Sendable, Equatable {
    public var charge: ChargeResource
    public init(charge: ChargeResource) { self.charge = charge }
}

/// `{"charges": [...]}`.
public struct ChargeListEnvelope: Codable, Sendable, Equatable {
    public var charges: [ChargeResource]
    public init(charges: [ChargeResource]) { self.charges = charges }
}

/// `{"refund": ..., "charge": ...}`: the refund and the charge after it.
public struct RefundEnvelope: Codable, Sendable, Equatable {
    public var refund: RefundResource
    public var charge: ChargeResource
    public init(refund: RefundResource, charge: ChargeResource) {
        self.refund = refund
        self.charge = charge
    }
}

/// `{"error": {"code", "message"}}`.
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    public struct Detail: Codable, Sendable, Equatable {
        public var code: String
        public var message: String
    }
    public var error: Detail
    public init(code: String, message: String) { error = Detail(code: code, message: message) }
}

/// `POST /v1/faults` (test services only): what to do to the next ``count`` charge requests.
public struct FaultBody: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// Commit, then answer only after ``FaultBody/seconds``.
        case delay
        /// Commit, then close the connection without an answer.
        case dropAfterCommit
        /// Answer 500 without committing anything.
        case failBeforeCommit
    }
    public var kind: Kind
    /// How many charge requests it applies to (default 1).
    public var count: Int?
    /// For `delay`: seconds to wait before answering (default 10).
    public var seconds: Double?

    public init(kind: Kind, count: Int? = nil, seconds: Double? = nil) {
        self.kind = kind
        self.count = count
        self.seconds = seconds
    }
}

/// Characters allowed in idempotency keys and references (they travel in URL paths): 1 to 255 of
/// `A-Z a-z 0-9 . _ ~ : -`.
public enum ProcessorKey {
    public static func isValid(_ key: String) -> Bool {
        guard (1...255).contains(key.utf8.count) else { return false }
        return key.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
                || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
        }
    }
}
