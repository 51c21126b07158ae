import MerchantCore
// The MerchantServer module: the merchant's side of Apple Pay, served over HTTP.
//
// - Store/       the catalog, shipping zones, coupons and tax (`StoreConfiguration`), checkouts and their pricing.
// - Orders/      the `OrderStore` protocol and its SQLite implementation (checkouts, orders, payments, events).
// - Processing/  `PaymentProcessor`, the sandbox processor, and `PaymentService` (charge once per transaction id).
// - HTTP/        the API (`MerchantAPI`, a `Responder`), token opening, merchant validation, logs and metrics,
//                server configuration and key loading, and `MerchantApplication`, which starts it all.
