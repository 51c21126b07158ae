// swift-tools-version:6.0
import PackageDescription

// Apple Pay for the merchant side, on Linux. See docs/ARCHITECTURE.md for the map.
let package = Package(
    name: "ApplePayServer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "applepay", targets: ["applepay"]),
        .library(name: "ApplePay", targets: ["ApplePay"]),
        .library(name: "PaymentToken", targets: ["PaymentToken"]),
        .library(name: "Sandbox", targets: ["Sandbox"]),
        .library(name: "PaymentSheet", targets: ["PaymentSheet"]),
        .library(name: "MerchantServer", targets: ["MerchantServer"]),
        .library(name: "MerchantSandbox", targets: ["MerchantSandbox"]),
    ],
    // The Swift server ecosystem by its public URLs, each from the release `../shared/swiftpm-mirrors` holds
    // (scripts/setup.sh points SwiftPM at those mirrors when they are there; with internet, GitHub answers).
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.14.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.10.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.11.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.26.0"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.0"),
    ],
    targets: [
        // C libraries from Debian, each behind a thin system-library target.
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]),
        // GnuTLS, which libmicrohttpd serves HTTPS with: only to read a client's certificate from the session.
        .systemLibrary(
            name: "CGnuTLS", path: "Sources/CGnuTLS", pkgConfig: "gnutls",
            providers: [.apt(["libgnutls28-dev"]), .brew(["gnutls"])]),
        .systemLibrary(
            name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        .systemLibrary(
            name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),

        .systemLibrary(
            name: "CNGHTTP2", path: "Sources/CNGHTTP2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev", "libssl-dev"]), .brew(["nghttp2", "openssl@3"])]),

        // Shared primitives: the JSON grammar and encoder every layer uses.
        .target(name: "JSONCoding", dependencies: ["Foundations"]),
        // Hex, base64url, constant-time comparison, Unix milliseconds: one home each.
        .target(name: "Foundations"),

        // Swift wrappers: the only modules that import C.
        .target(name: "Cryptography", dependencies: ["COpenSSL", "Foundations"]),
        // One database protocol, dialect, query builder and migrator for the stores (Foundation only, no C).
        .target(name: "SQLCore"),
        .target(name: "SQLite", dependencies: ["CSQLite", "SQLCore", "Foundations"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CGnuTLS", "JSONCoding", "Foundations"]),
        .target(name: "HTTPClient", dependencies: ["CCurl", "Foundations"]),
        // HTTP/2 over TLS (nghttp2 + libssl, ALPN h2) for the sandbox APNs.
        .target(name: "HTTP2Server", dependencies: ["CNGHTTP2"]),
        .target(name: "Postgres", dependencies: ["CPostgres", "SQLCore", "Foundations"]),

        // The domain.
        .target(name: "ApplePay", dependencies: ["Foundations"]),
        .target(name: "PaymentToken", dependencies: ["ApplePay", "Cryptography", "JSONCoding", "Foundations"]),
        // Wallet orders: order.json, manifest, CMS signature, the .order ZIP; building and verifying packages.
        .target(name: "WalletOrders", dependencies: ["ApplePay", "Cryptography", "Foundations"]),
        .target(
            name: "Sandbox",
            dependencies: ["ApplePay", "Cryptography", "WalletOrders", "HTTPClient", "HTTP2Server", "Foundations"]),
        // Apple's payment-session endpoint played by the sandbox, over HTTPS (`applepay sandbox gateway`).
        .target(
            name: "SandboxGateway",
            dependencies: ["Sandbox", "Cryptography", "HTTPServer", "HTTPClient", "Foundations"]),
        .target(
            name: "PaymentSheet", dependencies: ["ApplePay", "PaymentToken", "Sandbox", "HTTPClient", "Foundations"]),
        // docs/PROCESSOR-PROTOCOL.md: the JSON bodies, shared by the service and the merchant server's client.
        .target(name: "ProcessorAPI", dependencies: ["JSONCoding"]),
        .target(
            name: "ProcessorService",
            dependencies: ["ApplePay", "ProcessorAPI", "SQLite", "SQLCore", "HTTPServer", "Foundations"]),
        // The merchant server in layers (docs/ARCHITECTURE.md): each imports only those above it.
        // The domain and its use cases: catalog, checkout, pricing, plans, orders, payments, subscriptions; the
        // protocols of stores, processors, token opening and Apple's gateway. No I/O module.
        .target(
            name: "MerchantCore",
            dependencies: ["ApplePay", "PaymentToken", "Cryptography", "JSONCoding", "Foundations"]),
        // The order, subscription and Wallet stores on SQLite and PostgreSQL.
        .target(
            name: "MerchantStore",
            dependencies: ["MerchantCore", "ApplePay", "SQLCore", "SQLite", "Postgres", "JSONCoding", "Foundations"]),
        // Payment processors behind MerchantCore's protocol: today the protocol of docs/PROCESSOR-PROTOCOL.md.
        .target(
            name: "Processors", dependencies: ["MerchantCore", "ApplePay", "HTTPClient", "ProcessorAPI", "Foundations"]),
        // The providers' webhooks: signature checks (Stripe, Adyen, Checkout.com) and their events read for MerchantCore.
        .target(
            name: "ProviderWebhooks",
            dependencies: ["MerchantCore", "ApplePay", "Cryptography", "JSONCoding", "Foundations"]),
        // Apple and the device's side: token opening, merchant validation, the merchant-token API, APNs.
        .target(
            name: "MerchantIntegrations",
            dependencies: [
                "MerchantCore", "ApplePay", "PaymentToken", "Cryptography", "HTTPClient", "HTTPServer", "Foundations",
            ]),
        // Wallet orders: packages for the store's orders and their pushes.
        .target(
            name: "MerchantWallet",
            dependencies: [
                "MerchantCore", "ApplePay", "Cryptography", "WalletOrders", "Foundations", "HTTPClient",
            ]),
        // The merchant's HTTP API: one route collection per feature, the web checkout page.
        .target(
            name: "MerchantHTTP",
            dependencies: [
                "MerchantCore", "MerchantIntegrations", "MerchantWallet", "ApplePay", "PaymentToken", "HTTPServer",
                "JSONCoding", "WalletOrders", "Foundations", "ProviderWebhooks",
            ],
            // The web pages as files (Web/Assets/), compiled into the binary: nothing is read at run time.
            resources: [
                .embedInCode("Web/Assets/checkout.html"), .embedInCode("Web/Assets/checkout.css"),
                .embedInCode("Web/Assets/checkout.js"), .embedInCode("Web/Assets/subscription.html"),
                .embedInCode("Web/Assets/order.html"), .embedInCode("Web/Assets/page.html"),
            ]),
        // The composition root: configuration, credentials, start-up and shutdown; plug-ins (sandbox mode).
        .target(
            name: "MerchantServer",
            dependencies: [
                "MerchantCore", "MerchantStore", "Processors", "MerchantIntegrations", "MerchantWallet", "MerchantHTTP",
                "ApplePay", "Cryptography", "PaymentToken", "HTTPServer", "HTTPClient", "Foundations",
                "ProviderWebhooks",
            ]),
        // Sandbox mode as a plug-in: the sandbox processor (in process or as a service), token minting, the
        // sandbox gateway trusted. Only the tool, InProcessMerchant, the fuzzers and the tests link it.
        .target(
            name: "MerchantSandbox",
            dependencies: [
                "MerchantServer", "MerchantHTTP", "MerchantCore", "Processors", "Sandbox", "ProcessorService",
                "PaymentSheet", "HTTPServer", "ApplePay", "Cryptography", "Foundations",
            ]),

        // The merchant server's API in process, for playing scenarios without a socket (`applepay simulate`).
        .target(
            name: "InProcessMerchant",
            dependencies: [
                "ApplePay", "Cryptography", "PaymentSheet", "MerchantServer", "MerchantSandbox", "MerchantCore",
                "MerchantHTTP", "MerchantStore", "MerchantIntegrations", "HTTPServer", "Sandbox", "Foundations",
            ]),

        // The command-line tool.
        .executableTarget(
            name: "applepay",
            dependencies: [
                "ApplePay", "Cryptography", "PaymentToken", "Sandbox", "PaymentSheet", "MerchantServer",
                "MerchantSandbox", "MerchantCore", "MerchantStore", "MerchantWallet", "Processors", "InProcessMerchant",
                "ProcessorService", "ProcessorAPI", "SandboxGateway", "HTTPClient", "HTTPServer", "Foundations",
                "ProviderWebhooks",
            ]),

        // What the fuzz targets share: libFuzzer's driver and the corpus replayer.
        .target(name: "FuzzSupport"),
        // The fuzz target for the token path (not a product): scripts/fuzz-token.sh builds it with libFuzzer; a
        // plain build makes a corpus replayer.
        .executableTarget(
            name: "FuzzPaymentToken", dependencies: ["PaymentToken", "Cryptography", "FuzzSupport", "Foundations"]),
        // The fuzz targets of issue 14 (payment request, store configuration, HTTP handling), built the same way by
        // scripts/fuzz-merchant.sh; MerchantServerTests/FuzzCorporaTests replays their corpora.
        .executableTarget(
            name: "FuzzMerchant",
            dependencies: [
                "ApplePay", "MerchantServer", "MerchantSandbox", "MerchantCore", "MerchantHTTP", "MerchantStore",
                "MerchantIntegrations", "HTTPServer", "PaymentToken", "FuzzSupport", "Foundations",
            ]),

        // The examples of docs/LIBRARY.md (not a product): uses only the library products, as another server would;
        // run by CommandLineTests/LibraryExamplesTests.
        .executableTarget(
            name: "LibraryExamples", dependencies: ["ApplePay", "PaymentToken", "Sandbox"],
            path: "Examples/LibraryExamples"),

        // Tests.
        .target(name: "TestSupport", dependencies: ["Foundations"], path: "Tests/Support"),
        .testTarget(name: "FoundationsTests", dependencies: ["Foundations"]),
        .testTarget(name: "ApplePayTests", dependencies: ["ApplePay", "TestSupport"]),
        .testTarget(name: "JSONCodingTests", dependencies: ["JSONCoding", "Foundations", "TestSupport"]),
        .testTarget(name: "CryptographyTests", dependencies: ["Cryptography", "TestSupport"]),
        .testTarget(
            name: "ProviderWebhooksTests",
            dependencies: [
                "ProviderWebhooks", "MerchantCore", "ApplePay", "Cryptography", "Foundations", "TestSupport",
            ]),
        .testTarget(
            name: "PaymentTokenTests", dependencies: ["PaymentToken", "Cryptography", "ApplePay", "TestSupport"]),
        .testTarget(
            name: "SandboxTests", dependencies: ["Sandbox", "PaymentToken", "TestSupport"], exclude: ["python"]),
        .testTarget(
            name: "PaymentSheetTests", dependencies: ["PaymentSheet", "InProcessMerchant", "Sandbox", "TestSupport"]),
        .testTarget(
            name: "SandboxGatewayTests",
            dependencies: [
                "SandboxGateway", "Sandbox", "ApplePay", "Cryptography", "HTTPClient", "HTTPServer", "TestSupport",
            ]),
        .testTarget(name: "SQLCoreTests", dependencies: ["SQLCore", "SQLite", "Postgres", "TestSupport"]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "SQLCore", "TestSupport"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "HTTPClient", "JSONCoding", "TestSupport"]),
        .testTarget(
            name: "MerchantServerTests",
            dependencies: [
                "MerchantServer", "MerchantSandbox", "MerchantCore", "MerchantStore", "MerchantHTTP",
                "MerchantIntegrations",
                "MerchantWallet", "Processors", "JSONCoding", "Foundations", "Sandbox", "PaymentSheet", "PaymentToken",
                "HTTPClient",
                "TestSupport",
                "ProcessorService", "ProcessorAPI", "WalletOrders", "SandboxGateway", "Cryptography", "Postgres",
                "SQLite", "SQLCore", "ProviderWebhooks",
            ],
            exclude: ["python"]),
        .testTarget(
            name: "ProcessorServiceTests",
            dependencies: ["ProcessorService", "ProcessorAPI", "SQLite", "HTTPClient", "TestSupport"]),
        .testTarget(
            name: "CommandLineTests", dependencies: ["applepay", "LibraryExamples", "FuzzMerchant", "TestSupport"],
            exclude: ["python"]),
    ]
)

for target in package.targets where target.type != .system {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("MemberImportVisibility"), .enableUpcomingFeature("ExistentialAny"),
        ]
}
