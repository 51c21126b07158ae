import ApplePay
import Foundation
import Foundations
import PaymentSheet
import PaymentToken
import Sandbox
import Testing

@Suite("PaymentSession: Apple's rules")
struct PaymentSessionTests {
    /// A begun session whose merchant waits at a gate before answering `event`: the gate, the merchant, the session.
    static func begunSession(holding event: String) async throws -> (Gate, RecordingMerchant, PaymentSession) {
        let gate = Gate()
        let merchant = RecordingMerchant(gates: [event: gate])
        let session = try await makeSession(merchant: merchant)
        try await session.begin()
        return (gate, merchant, session)
    }

    // MARK: One event at a time

    @Test("a second event before the merchant answers is refused; cancel is not")
    func oneAtATime() async throws {
        let (gate, merchant, session) = try await Self.begunSession(holding: "shippingcontactselected")
        let first = Task { try await session.perform(.selectShippingContact(Fixture.jane)) }
        #expect(await eventually { merchant.calls == ["shippingcontactselected"] })
        #expect(await session.isWaitingForMerchant)
        await #expect(throws: PaymentSheetError(.eventInProgress, "")) {
            try await session.perform(.selectShippingMethod(identifier: "express"))
        }
        await #expect(throws: PaymentSheetError(.eventInProgress, "")) { try await session.perform(.authorize) }
        await #expect(throws: PaymentSheetError(.eventInProgress, "")) {
            try await session.perform(.enterCouponCode("WELCOME10"))
        }
        #expect(merchant.calls == ["shippingcontactselected"])
        gate.open()
        try await first.value
        try await session.perform(.selectShippingMethod(identifier: "express"))
        #expect(merchant.calls == ["shippingcontactselected", "shippingmethodselected"])
        #expect(await session.eventNames == ["shippingcontactselected", "shippingmethodselected"])
    }

    @Test("cancel while the merchant is answering ends the session at once; the late answer is dropped")
    func cancelWhileWaiting() async throws {
        let (gate, merchant, session) = try await Self.begunSession(holding: "couponcodechanged")
        let pending = Task { try await session.perform(.enterCouponCode("WELCOME10")) }
        #expect(await eventually { merchant.calls == ["couponcodechanged"] })
        try await session.perform(.cancel)
        try await pending.value
        gate.open()
        #expect(await session.outcome?.kind == .cancelled)
        #expect(merchant.calls == ["couponcodechanged", "didFinish"])
        #expect(await session.eventNames == ["cancel", "finished"])
    }

    // MARK: Redaction and contacts

    @Test(
        "the merchant sees the shipping contact redacted before authorization and in full after, requested fields only")
    func contactsAroundAuthorization() async throws {
        let merchant = RecordingMerchant()
        let session = try await makeSession(
            request: Fixture.request(shippingFields: [.postalAddress, .email], billingFields: [.name]),
            merchant: merchant)
        try await session.begin()
        try await session.perform(.selectShippingContact(Fixture.jane))
        try await session.perform(.selectShippingContact(Fixture.london))
        #expect(merchant.contacts.map(\.postalCode) == ["95014", "SW1A"])
        #expect(
            merchant.contacts.allSatisfy { $0.givenName == nil && $0.addressLines == nil && $0.emailAddress == nil })
        try await session.perform(.selectShippingContact(Fixture.jane))
        try await session.perform(.authorize)
        let payment = try #require(merchant.payments.first)
        let shipping = try #require(payment.shippingContact)
        #expect(shipping.addressLines == ["1 Infinite Loop"])
        #expect(shipping.postalCode == "95014-2083")
        #expect(shipping.emailAddress == "jane@example.com")
        #expect(shipping.givenName == nil && shipping.phoneNumber == nil)
        #expect(payment.billingContact == Contact(givenName: "Jane", familyName: "Appleseed"))
        #expect(await session.outcome?.kind == .success)
    }

    @Test("paymentmethodselected carries display name, network and type, never the number")
    func paymentMethodRedacted() async throws {
        let merchant = RecordingMerchant()
        let session = try await makeSession(merchant: merchant, announces: true)
        try await session.begin()
        try await session.perform(.selectCard(identifier: "Mastercard 1471"))
        #expect(merchant.paymentMethods.map(\.displayName) == ["Visa 0492", "Mastercard 1471"])
        #expect(merchant.paymentMethods[1].network == .masterCard && merchant.paymentMethods[1].type == .credit)
        #expect(merchant.paymentMethods[1].billingContact?.addressLines == nil)
        #expect(merchant.calls == ["paymentmethodselected", "shippingcontactselected", "paymentmethodselected"])
    }

    // MARK: Errors block authorization

    @Test("merchant errors block authorization until a later successful answer resolves them")
    func errorsBlockUntilResolved() async throws {
        var answers = RecordingMerchant.Answers()
        answers.shippingContact = { contact in
            contact.countryCode == "AU"
                ? ShippingContactUpdate(errors: [
                    PaymentError(code: .addressUnserviceable, contactField: .postalAddress)
                ])
                : ShippingContactUpdate()
        }
        answers.coupon = { code in
            code == "GOOD" ? CouponCodeUpdate() : CouponCodeUpdate(errors: [PaymentError(code: .couponCodeInvalid)])
        }
        let merchant = RecordingMerchant(answers: answers)
        let session = try await makeSession(merchant: merchant)
        try await session.begin()
        try await session.perform(.selectShippingContact(Fixture.sydney))
        await #expect(throws: PaymentSheetError(.authorizationBlocked, "")) { try await session.perform(.authorize) }
        try await session.perform(.enterCouponCode("BAD"))
        // A good coupon resolves the coupon error but not the address error.
        try await session.perform(.enterCouponCode("GOOD"))
        #expect(await session.blockingErrors.map(\.error.code) == [.addressUnserviceable])
        await #expect(throws: PaymentSheetError(.authorizationBlocked, "")) { try await session.perform(.authorize) }
        try await session.perform(.selectShippingContact(Fixture.jane))
        #expect(await session.blockingErrors.isEmpty)
        try await session.perform(.authorize)
        #expect(merchant.calls.filter { $0 == "paymentauthorized" }.count == 1)
        #expect(await session.outcome?.kind == .success)
        let names = await session.eventNames
        #expect(names.filter { $0 == "authorizationblocked" }.count == 2)
    }

    @Test("a failed authorization with errors keeps the sheet open until they are resolved")
    func authorizationErrors() async throws {
        let merchant = RecordingMerchant(authorization: { payment in
            payment.shippingContact?.countryCode == "GB"
                ? PaymentAuthorizationResult(
                    status: .failure, errors: [PaymentError(code: .shippingContactInvalid, contactField: .postalCode)])
                : PaymentAuthorizationResult(status: .success)
        })
        let session = try await makeSession(merchant: merchant)
        try await session.begin()
        try await session.perform(.selectShippingContact(Fixture.london))
        try await session.perform(.authorize)
        #expect(await session.outcome == nil)
        await #expect(throws: PaymentSheetError(.authorizationBlocked, "")) { try await session.perform(.authorize) }
        try await session.perform(.selectShippingContact(Fixture.jane))
        try await session.perform(.authorize)
        #expect(await session.outcome?.kind == .success)
        #expect(merchant.calls.filter { $0 == "paymentauthorized" }.count == 2)
    }

    @Test("a decline (unknown error) blocks until any later successful answer")
    func declineThenRetry() async throws {
        let merchant = RecordingMerchant(authorization: { payment in
            payment.billingContact?.postalCode == "95014"
                ? PaymentAuthorizationResult(
                    status: .failure, errors: [PaymentError(code: .unknown, message: "declined")])
                : PaymentAuthorizationResult(status: .success)
        })
        let session = try await makeSession(merchant: merchant)
        try await session.begin()
        try await session.perform(.selectShippingContact(Fixture.jane))
        try await session.perform(.authorize)
        #expect(await session.blockingErrors.map(\.resolvedBy) == ["any"])
        await #expect(throws: PaymentSheetError(.authorizationBlocked, "")) { try await session.perform(.authorize) }
        try await session.perform(.selectShippingMethod(identifier: "express"))
        #expect(await session.blockingErrors.isEmpty)
        // Still the same card: declined again, and the user gives up.
        try await session.perform(.authorize)
        let outcome = await session.run([])
        #expect(outcome.kind == .failure && outcome.reason == "authorizationFailed")
        #expect(merchant.calls.filter { $0 == "didFinish" }.count == 1)
    }

    @Test("a refused authorization without errors ends the session as failure")
    func refused() async throws {
        let merchant = RecordingMerchant(authorization: { _ in PaymentAuthorizationResult(status: .failure) })
        let session = try await makeSession(merchant: merchant)
        let outcome = await session.run([.selectShippingContact(Fixture.jane), .authorize, .authorize])
        #expect(outcome.kind == .failure)
        #expect(outcome.reason == "merchantRefused")
        #expect(merchant.calls.last == "didFinish")
        #expect(merchant.calls.filter { $0 == "paymentauthorized" }.count == 1)
    }

    @Test("missing required contact fields block authorization")
    func missingFields() async throws {
        let merchant = RecordingMerchant()
        var noPhone = Fixture.jane
        noPhone.phoneNumber = nil
        let session = try await makeSession(merchant: merchant)
        try await session.begin()
        try await session.perform(.selectShippingContact(noPhone))
        await #expect(throws: PaymentSheetError(.authorizationBlocked, "")) { try await session.perform(.authorize) }
        let line = try #require(await session.transcript.last)
        #expect(line.event == "authorizationblocked")
        #expect(line.fields["missingShippingContactFields"] == .array([.string("phone")]))
        #expect(merchant.payments.isEmpty)

        // A card without a billing address blocks a request that asks for one.
        let bare = try WalletCard(network: .visa, devicePAN: "4761120010000492", expirationDate: "291231")
        let other = try await makeSession(wallet: Wallet(cards: [bare], contacts: []), merchant: RecordingMerchant())
        try await other.begin()
        try await other.perform(.selectShippingContact(Fixture.jane))
        await #expect(throws: PaymentSheetError(.authorizationBlocked, "")) { try await other.perform(.authorize) }
        #expect(
            await other.transcript.last?.fields["missingBillingContactFields"] == .array([.string("postalAddress")]))
    }

    // MARK: Updates that break the rules

    @Test("a negative total fails the session")
    func negativeTotal() async throws {
        var answers = RecordingMerchant.Answers()
        answers.coupon = { _ in CouponCodeUpdate(newTotal: Fixture.total("-1.00")) }
        let merchant = RecordingMerchant(answers: answers)
        let session = try await makeSession(merchant: merchant)
        let outcome = await session.run([.enterCouponCode("FREE"), .authorize])
        #expect(outcome.kind == .failure)
        #expect(outcome.reason == "invalidUpdate")
        #expect(outcome.message?.contains("total.negative") == true)
        #expect(merchant.calls == ["couponcodechanged", "didFinish"])
    }

    @Test(
        "an update that breaks the request rules fails the session",
        arguments: [
            "amount", "duplicateMethods", "decimals",
        ])
    func invalidUpdate(kind: String) async throws {
        var answers = RecordingMerchant.Answers()
        answers.shippingContact = { _ in
            switch kind {
            case "amount": return ShippingContactUpdate(newTotal: Fixture.total("twelve"))
            case "duplicateMethods":
                return ShippingContactUpdate(newShippingMethods: [Fixture.methods[0], Fixture.methods[0]])
            default: return ShippingContactUpdate(newLineItems: [PaymentSummaryItem(label: "Tax", amount: "1.005")])
            }
        }
        let merchant = RecordingMerchant(answers: answers)
        let session = try await makeSession(merchant: merchant)
        let outcome = await session.run([.selectShippingContact(Fixture.jane), .authorize])
        #expect(outcome.kind == .failure && outcome.reason == "invalidUpdate")
        #expect(merchant.payments.isEmpty)
        #expect(await session.transcript.first?.fields["problems"] != nil)
    }

    @Test("a zero total is allowed (Apple Pay JS v4)")
    func zeroTotal() async throws {
        var answers = RecordingMerchant.Answers()
        answers.coupon = { _ in CouponCodeUpdate(newTotal: Fixture.total("0.00")) }
        let session = try await makeSession(merchant: RecordingMerchant(answers: answers))
        let outcome = await session.run([.selectShippingContact(Fixture.jane), .enterCouponCode("ALL"), .authorize])
        #expect(outcome.kind == .success)
    }

    // MARK: Timeout

    @Test("a merchant slower than 30 seconds (virtual) ends the session as timedOut")
    func timeout() async throws {
        let clock = VirtualClock()
        let merchant = RecordingMerchant(delays: ["shippingmethodselected": .seconds(31)], clock: clock)
        let session = try await makeSession(merchant: merchant, clock: clock)
        let started = ContinuousClock.now
        let outcome = await session.run([
            .selectShippingContact(Fixture.jane), .selectShippingMethod(identifier: "express"), .authorize,
        ])
        #expect(outcome.kind == .timedOut)
        // The session ends at 30 s while the merchant's task is still moving the clock on to 31 s: let it finish.
        _ = await eventually { merchant.finishedDelays == 1 }
        // The timeout fired on virtual time: 31 seconds passed on the session's clock, far fewer in reality.
        #expect(clock.elapsed >= .seconds(31))
        #expect(ContinuousClock.now - started < clock.elapsed)
        #expect(merchant.calls == ["shippingcontactselected", "shippingmethodselected", "didFinish"])
        #expect(await session.eventNames == ["shippingcontactselected", "shippingmethodselected", "finished"])
    }

    @Test("29 seconds is in time")
    func inTime() async throws {
        let clock = VirtualClock()
        let merchant = RecordingMerchant(delays: ["shippingmethodselected": .seconds(29)], clock: clock)
        let session = try await makeSession(merchant: merchant, clock: clock)
        let outcome = await session.run([
            .selectShippingContact(Fixture.jane), .selectShippingMethod(identifier: "express"), .authorize,
        ])
        #expect(outcome.kind == .success)
        #expect(clock.elapsed == .seconds(29))
    }

    @Test("a merchant that never answers times out when the clock passes 30 seconds")
    func silentMerchant() async throws {
        let clock = VirtualClock()
        let merchant = RecordingMerchant(clock: clock, silentEvents: ["paymentauthorized"])
        let session = try await makeSession(merchant: merchant, clock: clock)
        try await session.begin()
        try await session.perform(.selectShippingContact(Fixture.jane))
        let authorizing = Task { try await session.perform(.authorize) }
        #expect(await eventually { clock.sleeperCount == 1 })
        await clock.advance(by: .seconds(20))
        #expect(await session.outcome == nil)
        await clock.advance(by: .seconds(11))
        try await authorizing.value
        #expect(await session.outcome?.kind == .timedOut)
        #expect(merchant.calls.last == "didFinish")
    }

    // MARK: didFinish

    @Test(
        "didFinish comes once and last on every path",
        arguments: [
            "success", "refused", "cancel", "cancelWhileWaiting", "timeout", "invalidUpdate", "merchantThrows",
            "scriptEnds",
        ])
    func didFinishOnce(path: String) async throws {
        let clock = VirtualClock()
        var answers = RecordingMerchant.Answers()
        if path == "refused" { answers.authorization = { _ in PaymentAuthorizationResult(status: .failure) } }
        if path == "invalidUpdate" {
            answers.shippingMethod = { _ in ShippingMethodUpdate(newTotal: Fixture.total("-5.00")) }
        }
        let gate = Gate()
        let merchant = RecordingMerchant(
            answers: answers, gates: path == "cancelWhileWaiting" ? ["shippingmethodselected": gate] : [:],
            delays: path == "timeout" ? ["shippingmethodselected": .seconds(45)] : [:], clock: clock)
        let delegate: any PaymentSheetDelegate = path == "merchantThrows" ? ThrowingMerchant(inner: merchant) : merchant
        let sandbox = try await SharedSandbox.get()
        let session = try PaymentSession(
            request: Fixture.request(), wallet: Fixture.wallet(), delegate: delegate,
            tokenIssuer: SandboxTokenIssuer(sandbox: sandbox), clock: clock)
        var script: [UserAction] = [.selectShippingContact(Fixture.jane), .selectShippingMethod(identifier: "express")]
        switch path {
        case "cancel": script.append(.cancel)
        case "scriptEnds": break
        default: script.append(.authorize)
        }
        if path == "cancelWhileWaiting" {
            let running = Task { await session.run(script) }
            #expect(await eventually { merchant.calls.last == "shippingmethodselected" })
            await session.cancel()
            gate.open()
            _ = await running.value
        } else {
            await session.run(script)
        }
        // Acting after the end is refused and reaches no merchant.
        await #expect(throws: PaymentSheetError(.finished, "")) { try await session.perform(.authorize) }
        await session.cancel()
        let calls = merchant.calls
        #expect(calls.filter { $0 == "didFinish" }.count == 1)
        #expect(calls.last == "didFinish")
        #expect(calls.first == "validatemerchant")
        let names = await session.eventNames
        #expect(names.last == "finished")
        #expect(names.filter { $0 == "finished" }.count == 1)
        let expected: [String: SessionOutcome.Kind] = [
            "success": .success, "refused": .failure, "cancel": .cancelled, "cancelWhileWaiting": .cancelled,
            "timeout": .timedOut, "invalidUpdate": .failure, "merchantThrows": .failure, "scriptEnds": .cancelled,
        ]
        #expect(merchant.outcomes.first?.kind == expected[path])
    }

    // MARK: Coupons

    @Test("an initial couponCode fires no change event")
    func initialCoupon() async throws {
        var request = Fixture.request()
        request.couponCode = "WELCOME10"
        let merchant = RecordingMerchant()
        let session = try await makeSession(request: request, merchant: merchant, initiative: .web, announces: true)
        try await session.begin()
        #expect(await session.couponCode == "WELCOME10")
        #expect(merchant.calls == ["validatemerchant", "paymentmethodselected", "shippingcontactselected"])
        #expect(!(await session.eventNames).contains("couponcodechanged"))
        try await session.perform(.enterCouponCode("FIVEOFF"))
        #expect(merchant.calls.last == "couponcodechanged")
    }

    @Test("a coupon needs supportsCouponCode; unknown cards and methods are refused")
    func refusals() async throws {
        let session = try await makeSession(request: Fixture.request(coupons: false), merchant: RecordingMerchant())
        try await session.begin()
        await #expect(throws: PaymentSheetError(.notOffered, "")) { try await session.perform(.enterCouponCode("X")) }
        await #expect(throws: PaymentSheetError(.unknownCard, "")) {
            try await session.perform(.selectCard(identifier: "Amex 0005"))
        }
        await #expect(throws: PaymentSheetError(.unknownShippingMethod, "")) {
            try await session.perform(.selectShippingMethod(identifier: "teleport"))
        }
        #expect(await session.outcome == nil)
    }

    @Test("a request that breaks the rules, or a wallet that cannot pay, opens no sheet")
    func cannotOpen() async throws {
        var bad = Fixture.request()
        bad.merchantCapabilities = [.supportsCredit]
        await #expect(throws: PaymentSheetError(.invalidRequest, "")) {
            try await makeSession(request: bad, merchant: RecordingMerchant())
        }
        await #expect(throws: PaymentSheetError(.cannotMakePayments, "")) {
            try await makeSession(
                wallet: Wallet(device: Device(canMakePayments: false), cards: [try Fixture.visa()]),
                merchant: RecordingMerchant())
        }
        var amexOnly = Fixture.request()
        amexOnly.supportedNetworks = [.amex]
        await #expect(throws: PaymentSheetError(.cannotMakePayments, "")) {
            try await makeSession(request: amexOnly, merchant: RecordingMerchant())
        }
    }

    // MARK: The token

    @Test("the token opens with the PaymentToken decryptor under the sandbox root, for the current total")
    func tokenOpens() async throws {
        var answers = RecordingMerchant.Answers()
        answers.shippingMethod = { _ in
            ShippingMethodUpdate(
                newTotal: Fixture.total("43.99"),
                newLineItems: [
                    PaymentSummaryItem(label: "House Blend × 2", amount: "29.00"),
                    PaymentSummaryItem(label: "Shipping", amount: "14.99"),
                ])
        }
        let merchant = RecordingMerchant(answers: answers)
        let clock = VirtualClock()
        let session = try await makeSession(merchant: merchant, clock: clock)
        let outcome = await session.run([
            .selectShippingContact(Fixture.jane), .selectShippingMethod(identifier: "express"),
            .selectCard(identifier: "Mastercard 1471"), .authorize,
        ])
        #expect(outcome.kind == .success)
        let payment = try #require(merchant.payments.first)
        let sandbox = try await SharedSandbox.get()
        let decryptor = try ScenarioRunner.decryptor(for: sandbox, clock: clock)
        let opened = try decryptor.decrypt(
            jsonData: JSONEncoder().encode(payment.token),
            expecting: PaymentTokenExpectations(
                applicationData: .bytes(Data("order-42".utf8)), amount: 4399, currencyCode: "USD"))
        #expect(opened.payload.applicationPrimaryAccountNumber == "5204247750001471")
        #expect(opened.payload.currencyCode == "840")
        #expect(opened.payload.transactionAmount == 4399)

        // The transcript names the transaction, never the number, the cryptogram or the token.
        let text = await session.transcript.map(\.jsonLine).joined(separator: "\n")
        #expect(!text.contains("5204247750001471"))
        #expect(!text.contains("paymentData"))
        #expect(!text.contains("onlinePaymentCryptogram"))
        let transaction = try #require(payment.token["transactionIdentifier"]?.stringValue)
        #expect(text.contains(transaction))
        #expect(text.contains("\"lastFour\":\"1471\""))
    }

    @Test("an RSA sandbox token opens as well")
    func rsaToken() async throws {
        let merchant = RecordingMerchant()
        let clock = VirtualClock()
        let sandbox = try await SharedSandbox.get()
        let session = try PaymentSession(
            request: Fixture.request(), wallet: Fixture.wallet(), delegate: merchant,
            tokenIssuer: SandboxTokenIssuer(sandbox: sandbox, version: .rsaV1), clock: clock,
            configuration: .init(initiative: .inApp, announcesInitialSelections: false))
        #expect(await session.run([.selectShippingContact(Fixture.jane), .authorize]).kind == .success)
        let payment = try #require(merchant.payments.first)
        let opened = try ScenarioRunner.decryptor(for: sandbox, clock: clock)
            .decrypt(jsonData: JSONEncoder().encode(payment.token), expecting: .init(amount: 3399, currencyCode: "USD"))
        #expect(opened.verification.version == .rsaV1)
    }
}

/// A merchant whose shipping method answer throws (a crashed server); every other call goes to `inner`.
struct ThrowingMerchant: PaymentSheetDelegate {
    let inner: RecordingMerchant
    struct Failure: Error {}

    func validateMerchant(_ event: MerchantValidationEvent) async throws -> MerchantSession {
        try await inner.validateMerchant(event)
    }
    func didSelectShippingContact(_ contact: Contact) async throws -> ShippingContactUpdate {
        try await inner.didSelectShippingContact(contact)
    }
    func didSelectShippingMethod(_ method: ShippingMethod) async throws -> ShippingMethodUpdate {
        _ = try await inner.didSelectShippingMethod(method)
        throw Failure()
    }
    func didAuthorizePayment(_ payment: Payment) async throws -> PaymentAuthorizationResult {
        try await inner.didAuthorizePayment(payment)
    }
    func didFinish(_ outcome: SessionOutcome) async { await inner.didFinish(outcome) }
}
