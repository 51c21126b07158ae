import ApplePay
import Foundation
import PaymentSheet
import Sandbox
import Synchronization
import TestSupport

/// One sandbox for the whole test run (three RSA keys take a moment), made once on a thread of its own: tests
/// await it without holding any of Swift's cooperative threads meanwhile.
enum SharedSandbox {
    private static let sandbox = MadeOnce(inFolder: "payment-sheet-tests") {
        try Sandbox.create(
            at: $0.url.appendingPathComponent("sandbox"), merchantIdentifier: "merchant.com.example.sheet")
    }

    static func get() async throws -> Sandbox { try await sandbox.value }
}

enum Fixture {
    static let jane = Contact(
        phoneNumber: "+1 408 555 0100", emailAddress: "jane@example.com", givenName: "Jane", familyName: "Appleseed",
        postalAddress: PostalAddress(
            street: ["1 Infinite Loop"], city: "Cupertino", postalCode: "95014-2083", state: "CA",
            country: "United States", isoCountryCode: "US"))

    static let london = Contact(
        phoneNumber: "+44 20 7946 0000", emailAddress: "john@example.co.uk", givenName: "John", familyName: "Smith",
        postalAddress: PostalAddress(
            street: ["10 Downing Street"], city: "London", postalCode: "SW1A 2AA", country: "United Kingdom",
            isoCountryCode: "GB"))

    static let ottawa = Contact(
        givenName: "Marie", familyName: "Tremblay",
        postalAddress: PostalAddress(
            street: ["24 Sussex Drive"], city: "Ottawa", postalCode: "K1M 1M4", state: "ON", country: "Canada",
            isoCountryCode: "CA"))

    static let sydney = Contact(
        phoneNumber: "+61 2 5550 0100", emailAddress: "jane@example.com", givenName: "Jane", familyName: "Appleseed",
        postalAddress: PostalAddress(
            street: ["1 Macquarie Street"], city: "Sydney", postalCode: "2000", state: "NSW", country: "Australia",
            isoCountryCode: "AU"))

    static let billing = Contact(
        givenName: "Jane", familyName: "Appleseed",
        postalAddress: PostalAddress(
            street: ["1 Infinite Loop"], city: "Cupertino", postalCode: "95014", state: "CA", isoCountryCode: "US"))

    static func visa(type: PaymentMethodType = .debit, country: String = "US") throws -> WalletCard {
        try WalletCard(
            network: .visa, type: type, issuingCountry: country, devicePAN: "4761120010000492",
            expirationDate: "291231", cardholderName: "Jane Appleseed", billingContact: billing)
    }

    static func masterCard(type: PaymentMethodType = .credit) throws -> WalletCard {
        try WalletCard(
            network: .masterCard, type: type, issuingCountry: "GB", devicePAN: "5204247750001471",
            expirationDate: "290630", billingContact: billing)
    }

    static func wallet() throws -> Wallet {
        Wallet(cards: [try visa(), try masterCard()], contacts: [jane, london])
    }

    static let methods = [
        ShippingMethod(label: "Standard", detail: "3 to 5 days", amount: "4.99", identifier: "standard"),
        ShippingMethod(label: "Express", detail: "1 to 2 days", amount: "14.99", identifier: "express"),
    ]

    /// A USD request for 29.00 of goods plus standard shipping, asking for the shipping fields given.
    static func request(
        shippingFields: [ContactField]? = [.postalAddress, .name, .email, .phone],
        billingFields: [ContactField]? = [.postalAddress], coupons: Bool = true
    ) -> PaymentRequest {
        var request = PaymentRequest(
            countryCode: "US", currencyCode: "USD", supportedNetworks: [.visa, .masterCard, .amex],
            merchantCapabilities: [.supports3DS, .supportsCredit, .supportsDebit],
            total: PaymentSummaryItem(label: "Example Coffee", amount: "33.99"),
            lineItems: [
                PaymentSummaryItem(label: "House Blend × 2", amount: "29.00"),
                PaymentSummaryItem(label: "Shipping", amount: "4.99"),
            ])
        request.requiredShippingContactFields = shippingFields
        request.requiredBillingContactFields = billingFields
        if shippingFields?.contains(.postalAddress) == true { request.shippingMethods = methods }
        request.applicationData = Data("order-42".utf8).base64EncodedString()
        if coupons { request.supportsCouponCode = true }
        return request
    }

    static func total(_ amount: String) -> PaymentSummaryItem {
        PaymentSummaryItem(label: "Example Coffee", amount: amount)
    }
}

/// A one-shot signal a test opens to let a waiting merchant answer.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// An in-process merchant whose answers the test writes; it records every call in order.
final class RecordingMerchant: PaymentSheetDelegate {
    struct Answers: Sendable {
        var shippingContact: @Sendable (Contact) -> ShippingContactUpdate = { _ in ShippingContactUpdate() }
        var shippingMethod: @Sendable (ShippingMethod) -> ShippingMethodUpdate = { _ in ShippingMethodUpdate() }
        var paymentMethod: @Sendable (PaymentMethod) -> PaymentMethodUpdate = { _ in PaymentMethodUpdate() }
        var coupon: @Sendable (String) -> CouponCodeUpdate = { _ in CouponCodeUpdate() }
        var authorization: @Sendable (Payment) -> PaymentAuthorizationResult = { _ in
            PaymentAuthorizationResult(status: .success)
        }
    }

    /// A merchant answering the payment with `authorization`, every other event with the defaults.
    convenience init(authorization: @escaping @Sendable (Payment) -> PaymentAuthorizationResult) {
        var answers = Answers()
        answers.authorization = authorization
        self.init(answers: answers)
    }

    struct Log {
        var calls: [String] = []
        var contacts: [Contact] = []
        var paymentMethods: [PaymentMethod] = []
        var payments: [Payment] = []
        var outcomes: [SessionOutcome] = []
        var finishedDelays = 0
    }

    let answers: Answers
    /// Before answering an event, wait for this gate.
    let gates: [String: Gate]
    /// Before answering an event, advance this clock by the duration (a slow merchant).
    let delays: [String: Duration]
    let clock: VirtualClock?
    /// Events the merchant never answers (it waits until cancelled).
    let silentEvents: Set<String>
    private let log = Mutex(Log())

    init(
        answers: Answers = Answers(), gates: [String: Gate] = [:], delays: [String: Duration] = [:],
        clock: VirtualClock? = nil, silentEvents: Set<String> = []
    ) {
        self.answers = answers
        self.gates = gates
        self.delays = delays
        self.clock = clock
        self.silentEvents = silentEvents
    }

    var calls: [String] { log.withLock { $0.calls } }
    var contacts: [Contact] { log.withLock { $0.contacts } }
    var paymentMethods: [PaymentMethod] { log.withLock { $0.paymentMethods } }
    var payments: [Payment] { log.withLock { $0.payments } }
    var outcomes: [SessionOutcome] { log.withLock { $0.outcomes } }
    /// How many `delays` have been advanced in full (the session may end, timed out, while one is still running).
    var finishedDelays: Int { log.withLock { $0.finishedDelays } }

    private func arrive(_ event: String) async throws {
        log.withLock { $0.calls.append(event) }
        if let gate = gates[event] { await gate.wait() }
        if let delay = delays[event], let clock {
            await clock.advance(by: delay)
            log.withLock { $0.finishedDelays += 1 }
        }
        if silentEvents.contains(event) {
            // Never answers: suspended until the session cancels the call (the cancellation handler resumes it).
            let cancelled = Latch()
            await withTaskCancellationHandler {
                await cancelled.wait()
            } onCancel: {
                cancelled.open()
            }
            throw CancellationError()
        }
    }

    func validateMerchant(_ event: MerchantValidationEvent) async throws -> MerchantSession {
        try await arrive("validatemerchant")
        return MerchantSession(.object(["merchantSessionIdentifier": .string("SSH-test")]))
    }

    func didSelectShippingContact(_ contact: Contact) async throws -> ShippingContactUpdate {
        try await answer("shippingcontactselected", contact, recordedIn: \.contacts, answers.shippingContact)
    }

    func didSelectShippingMethod(_ method: ShippingMethod) async throws -> ShippingMethodUpdate {
        try await answer("shippingmethodselected", method, answers.shippingMethod)
    }

    func didSelectPaymentMethod(_ paymentMethod: PaymentMethod) async throws -> PaymentMethodUpdate {
        try await answer(
            "paymentmethodselected", paymentMethod, recordedIn: \.paymentMethods, answers.paymentMethod)
    }

    func didChangeCouponCode(_ couponCode: String) async throws -> CouponCodeUpdate {
        try await answer("couponcodechanged", couponCode, answers.coupon)
    }

    func didAuthorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationResult {
        try await answer("paymentauthorized", payment, recordedIn: \.payments, answers.authorization)
    }

    /// Records `value` (in `list`, when given) and the event, waits as the test asked, then gives the test's answer.
    private func answer<Value, Answer>(
        _ event: String, _ value: Value, recordedIn list: WritableKeyPath<Log, [Value]>? = nil,
        _ answer: (Value) -> Answer
    ) async throws -> Answer {
        if let list { log.withLock { $0[keyPath: list].append(value) } }
        try await arrive(event)
        return answer(value)
    }

    func didFinish(_ outcome: SessionOutcome) async {
        log.withLock {
            $0.calls.append("didFinish")
            $0.outcomes.append(outcome)
        }
    }
}

/// Builds a session on a virtual clock with the shared sandbox.
func makeSession(
    request: PaymentRequest = Fixture.request(), wallet: Wallet? = nil, merchant: RecordingMerchant,
    clock: VirtualClock = VirtualClock(), initiative: SessionInitiative = .inApp, announces: Bool = false
) async throws -> PaymentSession {
    try PaymentSession(
        request: request, wallet: wallet ?? Fixture.wallet(), delegate: merchant,
        tokenIssuer: SandboxTokenIssuer(sandbox: try await SharedSandbox.get()), clock: clock,
        configuration: PaymentSession.Configuration(initiative: initiative, announcesInitialSelections: announces))
}

/// Waits (briefly, in real time) until `condition` holds.
func eventually(_ condition: @Sendable () async -> Bool) async -> Bool {
    for _ in 0..<2000 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return false
}

extension PaymentSession {
    /// The transcript's event names, in order.
    var eventNames: [String] { transcript.map(\.event) }
}
