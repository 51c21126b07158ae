import ApplePay
import Cryptography
import Foundation
import Foundations
import MerchantCore
import WalletOrders

/// Sends an update notice for an order to every device registered for it (APNs in production).
public protocol OrderUpdatePushing: Sendable {
    /// Pushes to every registration; failures are logged, never thrown (the order change is already recorded).
    /// The admin API awaits it before it answers: a pusher that retries should queue and return, as
    /// `MerchantApplication`'s pushes service does.
    func orderDidChange(_ registrations: [DeviceRegistration]) async
}

/// Wallet orders for paid orders: `orderDetails` for the payment answer, the signed `.order` package, and the
/// per-order authentication token the orders web service checks.
public struct WalletOrdersService: Sendable {
    /// `order.com.example.shop`: the Order Type ID certificate's subject UID.
    public let orderTypeIdentifier: String
    /// Signs `manifest.json` with the Order Type ID certificate (and includes the Wallet intermediate).
    public let signer: CMSSigner
    /// The server's one public base URL (no trailing slash): the web service given to Wallet is `PUBLIC/wallet`
    /// (as `https`, which Apple requires, when PUBLIC is the server's own `http` address), each order's
    /// `orderManagementURL` is the customer's page `PUBLIC/orders/ID?secret=…`; nil: `http://<Host of the request>`
    /// (tests that build the service without a server).
    public let publicURL: String?
    /// Who tells devices about changes; nil: nobody is told (devices see changes on their next download).
    public let pusher: (any OrderUpdatePushing)?

    /// - Throws: `CryptographyError` when the key does not match the certificate.
    public init(
        orderTypeIdentifier: String, certificate: Certificate, privateKey: PrivateKey, intermediates: [Certificate],
        publicURL: String? = nil, pusher: (any OrderUpdatePushing)? = nil
    ) throws {
        self.orderTypeIdentifier = orderTypeIdentifier
        self.signer = try CMSSigner(
            certificate: certificate, privateKey: privateKey, additionalCertificates: intermediates)
        self.publicURL = publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.pusher = pusher
    }

    /// The order's `AppleOrder` token: SHA-256 of a label and the order's view secret, in hex. Derived, so nothing
    /// more is stored, and knowing it does not reveal the view secret.
    public func authenticationToken(for order: Order) -> String {
        lowercaseHex(Digest.sha256(Data("wallet-order-authentication-token:\(order.viewSecret)".utf8)))
    }

    /// The public base URL for a request that arrived with `host`.
    public func publicURL(host: String?) -> String { publicURL ?? "http://\(host ?? "127.0.0.1")" }

    /// The web service URL for a request that arrived with `host`: `PUBLIC/wallet`, always `https` (Apple refuses
    /// another scheme): the server's own `http://HOST:PORT` (no public URL configured: local and sandbox use) is
    /// published as `https://HOST:PORT`, which a TLS proxy in front of the server (or the sandbox Wallet's
    /// `connectTo`) answers.
    public func webServiceURL(host: String?) -> String {
        let base = publicURL(host: host)
        return (base.hasPrefix("http://") ? "https://" + base.dropFirst("http://".count) : base) + "/wallet"
    }

    /// The customer's order page (HTML, no login; the order's view secret makes the address unguessable):
    /// `PUBLIC/orders/ID?secret=…`.
    public func orderManagementURL(for order: Order, host: String?) -> String {
        "\(publicURL(host: host))/orders/\(order.id)?secret=\(order.viewSecret)"
    }

    /// `orderDetails` for a paid order's `ApplePayPaymentAuthorizationResult`.
    public func orderDetails(for order: Order, host: String?) -> PaymentOrderDetails {
        PaymentOrderDetails(
            orderTypeIdentifier: orderTypeIdentifier, orderIdentifier: order.id,
            webServiceURL: webServiceURL(host: host), authenticationToken: authenticationToken(for: order))
    }

    /// `order.json` for an order and its fulfilment steps.
    public func walletOrder(
        for order: Order, fulfillments: [FulfillmentStep], configuration: StoreConfiguration, host: String?
    ) -> WalletOrder {
        let currency = Currency(code: order.currencyCode) ?? .usDollar
        func money(_ minor: Int64) -> WalletOrder.CurrencyAmount {
            WalletOrder.CurrencyAmount(
                amount: Money(minorUnits: minor, currency: currency).amountString, currency: currency.code)
        }
        let base = publicURL(host: host)
        let summary = Self.summary(of: order).map { WalletOrder.SummaryItem(label: $0.label, value: money($0.amount)) }
        let latest = fulfillments.last
        let carrier = fulfillments.last(where: { $0.carrier != nil })?.carrier
        let tracking = fulfillments.last(where: { $0.trackingNumber != nil })?.trackingNumber
        let status = Self.orderStatus(order, latest: latest?.status)
        let fulfillment = WalletOrder.Fulfillment(
            fulfillmentIdentifier: "\(order.id)-shipping",
            status: latest?.status.rawValue ?? (status == "cancelled" ? "cancelled" : "processing"),
            carrier: carrier, trackingNumber: tracking,
            deliveredAt: latest?.status == .delivered ? latest.map { WalletOrder.timestamp($0.at) } : nil)
        return WalletOrder(
            orderTypeIdentifier: orderTypeIdentifier, orderIdentifier: order.id,
            orderNumber: String(order.id.uppercased().suffix(12)), status: status,
            merchant: WalletOrder.Merchant(
                merchantIdentifier: configuration.merchantIdentifier, displayName: configuration.storeName,
                url: base),
            createdAt: order.createdAt, updatedAt: order.updatedAt,
            orderManagementURL: orderManagementURL(for: order, host: host),
            lineItems: order.lines.map {
                WalletOrder.LineItem(title: $0.name, quantity: $0.quantity, price: money($0.unitPrice), sku: $0.sku)
            },
            payment: WalletOrder.Payment(
                total: money(order.totals.total), status: Self.paymentStatus(order.status), summaryItems: summary,
                paymentMethods: [
                    [order.paymentNetwork ?? "Card", order.panLastFour].compactMap { $0 }.joined(separator: " ")
                ]),
            fulfillments: [fulfillment], webServiceURL: webServiceURL(host: host),
            authenticationToken: authenticationToken(for: order))
    }

    /// The lines under an order's items, in minor units: subtotal, discount (negative), shipping, tax, fee and what
    /// was refunded (negative), the zero discount, fee and refund left out. `order.json` and the order page show them.
    public static func summary(of order: Order) -> [(label: String, amount: Int64)] {
        var lines: [(label: String, amount: Int64)] = [("Subtotal", order.totals.subtotal)]
        if order.totals.discount > 0 { lines.append(("Discount", -order.totals.discount)) }
        lines.append((order.shippingMethod?.label ?? "Shipping", order.totals.shipping))
        lines.append(("Tax", order.totals.tax))
        if order.totals.fee > 0 { lines.append(("Fee", order.totals.fee)) }
        if order.refunded > 0 { lines.append(("Refunded", -order.refunded)) }
        return lines
    }

    /// The order's `status` in Apple's values: `cancelled` once refunded in full, voided or declined, `completed`
    /// once delivered, else `open`.
    public static func orderStatus(_ order: Order, latest: FulfillmentStep.Status?) -> String {
        switch (order.status, latest) {
        case (.refunded, _), (.voided, _), (.declined, _): "cancelled"
        case (_, .delivered?): "completed"
        default: "open"
        }
    }

    /// `payment.status` in Apple's values (`pending`, `authorized`, `paid`, `refunded`, `declined`, `voided`): Apple
    /// has no partial refund, so a partly refunded order stays `paid` and shows the refund as a summary item; an
    /// outcome not known yet is `pending`.
    public static func paymentStatus(_ status: OrderStatus) -> String {
        switch status {
        case .paid, .partiallyRefunded: "paid"
        case .refunded: "refunded"
        case .voided: "voided"
        case .declined: "declined"
        case .pending, .unknown, .processing: "pending"
        }
    }

    /// The signed `.order` package.
    /// - Throws: `CryptographyError` when signing fails.
    public func package(
        for order: Order, fulfillments: [FulfillmentStep], configuration: StoreConfiguration, host: String?,
        now: Date = Date()
    ) throws -> Data {
        try OrderPackage.make(
            walletOrder(for: order, fulfillments: fulfillments, configuration: configuration, host: host),
            signer: signer, signingTime: now)
    }
}
