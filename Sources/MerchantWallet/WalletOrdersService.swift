import ApplePay
import Cryptography
import Foundation
import Foundations
import MerchantCore
import WalletOrders

/// Sends an update notice for an order to every device registered for it (APNs in production).
public protocol OrderUpdatePushing: Sendable {
    /// Pushes to every registration; failures are logged, never thrown (the order change is already recorded).
    func orderDidChange(_ registrations: [DeviceRegistration]) async
}

/// Wallet orders for paid orders: `orderDetails` for the payment answer, the signed `.order` package, and the
/// per-order authentication token the orders web service checks.
public struct WalletOrdersService: Sendable {
    /// `order.com.example.shop`: the Order Type ID certificate's subject UID.
    public let orderTypeIdentifier: String
    /// Signs `manifest.json` with the Order Type ID certificate (and includes the Wallet intermediate).
    public let signer: CMSSigner
    /// The server's one public base URL (no trailing slash): the web service given to Wallet is `PUBLIC/wallet`,
    /// each order's `orderManagementURL` is `PUBLIC/v1/orders/ID`; nil: `http://<Host of the request>` (tests that
    /// build the service without a server).
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

    /// The web service URL for a request that arrived with `host`: `PUBLIC/wallet`.
    public func webServiceURL(host: String?) -> String { publicURL(host: host) + "/wallet" }

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
        var summary = [WalletOrder.SummaryItem(label: "Subtotal", value: money(order.totals.subtotal))]
        if order.totals.discount > 0 {
            summary.append(.init(label: "Discount", value: money(-order.totals.discount)))
        }
        summary.append(.init(label: order.shippingMethod?.label ?? "Shipping", value: money(order.totals.shipping)))
        summary.append(.init(label: "Tax", value: money(order.totals.tax)))
        if order.totals.fee > 0 { summary.append(.init(label: "Fee", value: money(order.totals.fee))) }
        let paymentStatus: String
        switch order.status {
        case .refunded: paymentStatus = "refunded"
        case .partiallyRefunded: paymentStatus = "partiallyRefunded"
        case .voided, .declined: paymentStatus = "cancelled"
        case .pending, .unknown: paymentStatus = "pending"
        case .paid: paymentStatus = "paid"
        }
        let latest = fulfillments.last
        let carrier = fulfillments.last(where: { $0.carrier != nil })?.carrier
        let tracking = fulfillments.last(where: { $0.trackingNumber != nil })?.trackingNumber
        let fulfillment = WalletOrder.Fulfillment(
            fulfillmentIdentifier: "\(order.id)-shipping", status: latest?.status.rawValue ?? "processing",
            carrier: carrier, trackingNumber: tracking,
            deliveredAt: latest?.status == .delivered ? latest.map { WalletOrder.timestamp($0.at) } : nil)
        let status: String
        switch (order.status, latest?.status) {
        case (.refunded, _), (.voided, _), (.declined, _): status = "cancelled"
        case (_, .delivered?): status = "completed"
        default: status = "open"
        }
        return WalletOrder(
            orderTypeIdentifier: orderTypeIdentifier, orderIdentifier: order.id,
            orderNumber: String(order.id.uppercased().suffix(12)), status: status,
            merchant: WalletOrder.Merchant(
                merchantIdentifier: configuration.merchantIdentifier, displayName: configuration.storeName,
                url: base),
            createdAt: order.createdAt, updatedAt: order.updatedAt,
            orderManagementURL: "\(base)/v1/orders/\(order.id)",
            lineItems: order.lines.map {
                WalletOrder.LineItem(title: $0.name, quantity: $0.quantity, price: money($0.unitPrice), sku: $0.sku)
            },
            payment: WalletOrder.Payment(
                total: money(order.totals.total), status: paymentStatus, summaryItems: summary,
                paymentMethods: [
                    WalletOrder.PaymentMethod(displayName: order.paymentNetwork ?? "Card", suffix: order.panLastFour)
                ]),
            fulfillments: [fulfillment])
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
