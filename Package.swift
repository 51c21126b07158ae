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
        .library(name: "ApplePayHummingbird", targets: ["ApplePayHummingbird"]),
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
        // Hummingbird's own dependencies, whose types ApplePayHummingbird converts (requests' fields, bodies, peers).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.6.0"),
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
        // swift-log's handler of the server: one sorted-key JSON object per line, written behind the caller.
        .target(
            name: "JSONLogging",
            dependencies: ["JSONCoding", "Foundations", .product(name: "Logging", package: "swift-log")]),

        // Swift wrappers: the only modules that import C.
        .target(name: "Cryptography", dependencies: ["COpenSSL", "Foundations"]),
        // One database protocol, dialect, query builder and migrator for the stores (Foundation only, no C).
        .target(name: "SQLCore"),
        .target(name: "SQLite", dependencies: ["CSQLite", "SQLCore", "Foundations"]),
        // HTTP without a server: messages, responders, the router and its groups, middleware, static resources, client
        // addresses. No C: the merchant API and the framework adapters stand on it.
        .target(name: "HTTPCore", dependencies: ["JSONCoding", "Foundations"]),
        // The libmicrohttpd server: serves any HTTPCore responder.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CGnuTLS", "HTTPCore", "Foundations"]),
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
            dependencies: ["Sandbox", "Cryptography", "HTTPCore", "HTTPServer", "HTTPClient", "Foundations"]),
        .target(
            name: "PaymentSheet", dependencies: ["ApplePay", "PaymentToken", "Sandbox", "HTTPClient", "Foundations"]),
        // docs/PROCESSOR-PROTOCOL.md: the JSON bodies, shared by the service and the merchant server's client.
        .target(name: "ProcessorAPI", dependencies: ["JSONCoding"]),
        .target(
            name: "ProcessorService",
            dependencies: [
                "ApplePay", "ProcessorAPI", "SQLite", "SQLCore", "HTTPCore", "HTTPServer", "Foundations",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The merchant server in layers (docs/ARCHITECTURE.md): each imports only those above it.
        // The domain and its use cases: catalog, checkout, pricing, plans, orders, payments, subscriptions; the
        // protocols of stores, processors, token opening and Apple's gateway. No I/O module.
        .target(
            name: "MerchantCore",
            dependencies: [
                "ApplePay", "PaymentToken", "Cryptography", "Foundations", "JSONCoding",
                .product(name: "Logging", package: "swift-log"),
            ]),
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
                "MerchantCore", "ApplePay", "PaymentToken", "Cryptography", "HTTPClient", "HTTPCore", "Foundations",
            ]),
        // Wallet orders: packages for the store's orders and their pushes.
        .target(
            name: "MerchantWallet",
            dependencies: [
                "MerchantCore", "ApplePay", "Cryptography", "WalletOrders", "Foundations", "HTTPClient",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The merchant's HTTP API: one route collection per feature, the web checkout page.
        .target(
            name: "MerchantHTTP",
            dependencies: [
                "MerchantCore", "MerchantIntegrations", "MerchantWallet", "ApplePay", "PaymentToken", "HTTPCore",
                "JSONCoding", "WalletOrders", "Foundations", "ProviderWebhooks",
                .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The web pages as files (Web/Assets/), compiled into the binary: nothing is read at run time.
            resources: [
                .embedInCode("Web/Assets/checkout.html"), .embedInCode("Web/Assets/checkout.css"),
                .embedInCode("Web/Assets/checkout.js"), .embedInCode("Web/Assets/subscription.html"),
                .embedInCode("Web/Assets/order.html"), .embedInCode("Web/Assets/page.html"),
            ]),
        // The merchant API (or parts of it) mounted in a Hummingbird 2 app's router, beside the app's own routes.
        .target(
            name: "ApplePayHummingbird",
            dependencies: [
                "MerchantHTTP", "HTTPCore", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        // The composition root: configuration, credentials, start-up and shutdown; plug-ins (sandbox mode).
        .target(
            name: "MerchantServer",
            dependencies: [
                "MerchantCore", "MerchantStore", "Processors", "MerchantIntegrations", "MerchantWallet", "MerchantHTTP",
                "ApplePay", "Cryptography", "PaymentToken", "HTTPCore", "HTTPServer", "HTTPClient", "Foundations",
                "ProviderWebhooks", "JSONLogging",
                // Its services under a ServiceGroup, whose logger is swift-log's.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Sandbox mode as a plug-in: the sandbox processor (in process or as a service), token minting, the
        // sandbox gateway trusted. Only the tool, InProcessMerchant, the fuzzers and the tests link it.
        .target(
            name: "MerchantSandbox",
            dependencies: [
                "MerchantServer", "MerchantHTTP", "MerchantCore", "Processors", "Sandbox", "ProcessorService",
                "PaymentSheet", "HTTPCore", "ApplePay", "Cryptography", "Foundations",
            ]),

        // The merchant server's API in process, for playing scenarios without a socket (`applepay simulate`).
        .target(
            name: "InProcessMerchant",
            dependencies: [
                "ApplePay", "Cryptography", "PaymentSheet", "MerchantServer", "MerchantSandbox", "MerchantCore",
                "MerchantHTTP", "MerchantStore", "MerchantIntegrations", "HTTPCore", "Sandbox",
                "Foundations",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The command-line tool.
        .executableTarget(
            name: "applepay",
            dependencies: [
                "ApplePay", "Cryptography", "PaymentToken", "Sandbox", "PaymentSheet", "MerchantServer",
                "MerchantSandbox", "MerchantCore", "MerchantStore", "MerchantWallet", "Processors", "InProcessMerchant",
                "ProcessorService", "ProcessorAPI", "SandboxGateway", "HTTPClient", "HTTPCore", "HTTPServer",
                "Foundations",
                "ProviderWebhooks", "JSONLogging",
                // Its command lines parsed by swift-argument-parser; the serving commands under a ServiceGroup that
                // traps SIGTERM and SIGINT.
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // jemalloc (Debian's libjemalloc-dev) in place of glibc's malloc for the whole process: the server's
            // tasks allocate on one thread and free on another, glibc's slow path (docs/PERFORMANCE.md).
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]),

        // What the fuzz targets share: libFuzzer's driver and the corpus replayer.
        .target(name: "FuzzSupport"),
        // The fuzz target for the token path (not a product): scripts/fuzz-token.sh builds it with libFuzzer; a
        // plain build makes a corpus replayer.
        .executableTarget(
            name: "FuzzPaymentToken", dependencies: ["PaymentToken", "Cryptography", "FuzzSupport", "Foundations"]),
        // The fuzz targets of issue 14 (payment request, store configuration, HTTP handling), built the same way by
        // scripts/fuzz-merchant.sh; CommandLineTests/FuzzMerchantCorpusTests replays their corpora.
        .executableTarget(
            name: "FuzzMerchant",
            dependencies: [
                "ApplePay", "MerchantServer", "MerchantSandbox", "MerchantCore", "MerchantHTTP", "MerchantStore",
                "MerchantIntegrations", "HTTPCore", "PaymentToken", "FuzzSupport", "Foundations",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The examples of docs/LIBRARY.md (not a product): uses only the library products, as another server would;
        // run by CommandLineTests/LibraryExamplesTests.
        .executableTarget(
            name: "LibraryExamples", dependencies: ["ApplePay", "PaymentToken", "Sandbox"],
            path: "Examples/LibraryExamples"),

        // A Hummingbird 2 app that adds Apple Pay with ApplePayHummingbird, on SQLite (docs/LIBRARY.md quotes it).
        .target(
            name: "HummingbirdShop",
            dependencies: [
                "ApplePayHummingbird", "MerchantHTTP", "MerchantCore", "MerchantIntegrations", "MerchantStore",
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Examples/HummingbirdShop/Sources"),
        // A Vapor 4 app that adds Apple Pay in a RouteCollection of its own over MerchantServices (docs/LIBRARY.md).
        .target(
            name: "VaporShop",
            dependencies: [
                "MerchantHTTP", "MerchantCore", "MerchantIntegrations", "MerchantStore", "ApplePay", "HTTPCore",
                "Foundations",
                .product(name: "Vapor", package: "vapor"),
            ],
            path: "Examples/VaporShop/Sources"),

        // Tests.
        .target(name: "TestSupport", dependencies: ["Foundations"], path: "Tests/Support"),
        .testTarget(name: "FoundationsTests", dependencies: ["Foundations"]),
        .testTarget(name: "ApplePayTests", dependencies: ["ApplePay", "TestSupport", "Foundations"]),
        .testTarget(name: "JSONCodingTests", dependencies: ["JSONCoding", "Foundations"]),
        .testTarget(
            name: "JSONLoggingTests",
            dependencies: ["JSONLogging", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "CryptographyTests", dependencies: ["Cryptography", "TestSupport", "Foundations"]),
        .testTarget(
            name: "ProviderWebhooksTests",
            dependencies: ["ProviderWebhooks", "MerchantCore", "ApplePay", "Foundations", "TestSupport"]),
        .testTarget(
            name: "PaymentTokenTests",
            dependencies: ["PaymentToken", "Cryptography", "ApplePay", "TestSupport", "Foundations"]),
        .testTarget(
            name: "SandboxTests",
            dependencies: ["Sandbox", "PaymentToken", "TestSupport", "ApplePay", "Cryptography", "Foundations"],
            exclude: ["python"]),
        .testTarget(
            name: "PaymentSheetTests",
            dependencies: [
                "PaymentSheet", "InProcessMerchant", "Sandbox", "TestSupport", "ApplePay", "Foundations",
                "PaymentToken",
            ]),
        .testTarget(
            name: "SandboxGatewayTests",
            dependencies: ["SandboxGateway", "Sandbox", "ApplePay", "Cryptography", "HTTPClient", "TestSupport"]),
        .testTarget(name: "SQLCoreTests", dependencies: ["SQLCore", "SQLite", "Postgres", "TestSupport"]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "SQLCore", "TestSupport"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "SQLCore", "TestSupport"]),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore"]),
        .testTarget(
            name: "ApplePayHummingbirdTests",
            dependencies: [
                "ApplePayHummingbird", "MerchantHTTP", "MerchantCore", "MerchantIntegrations", "MerchantSandbox",
                "MerchantStore", "HTTPCore", "PaymentToken", "Foundations", "MerchantTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "HTTPCore", "HTTPClient", "JSONCoding", "TestSupport", "Foundations"]),
        // What the merchant-side tests share: store fixtures, the server harness, test processors, clocks.
        .target(
            name: "MerchantTestSupport",
            dependencies: [
                "MerchantServer", "MerchantCore", "MerchantStore", "MerchantHTTP", "MerchantSandbox", "Processors",
                "ProcessorAPI", "ProcessorService", "SQLite", "SQLCore", "Postgres", "HTTPClient", "HTTPCore",
                "JSONLogging", "Sandbox", "Cryptography", "ApplePay", "Foundations", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/MerchantTestSupport"),
        // The merchant side's tests, one target per module under test; MerchantServerTests runs the assembled server.
        .testTarget(
            name: "MerchantCoreTests",
            dependencies: [
                "MerchantCore", "MerchantStore", "MerchantSandbox", "Processors", "ProcessorAPI", "ProcessorService",
                "HTTPClient", "ApplePay", "Foundations", "MerchantTestSupport", "TestSupport",
            ]),
        .testTarget(
            name: "MerchantStoreTests",
            dependencies: [
                "MerchantStore", "MerchantCore", "MerchantSandbox", "MerchantServer", "SQLite", "SQLCore", "Postgres",
                "JSONCoding", "ApplePay", "Foundations", "MerchantTestSupport", "TestSupport",
            ]),
        .testTarget(
            name: "ProcessorsTests",
            dependencies: [
                "Processors", "ProcessorAPI", "ProcessorService", "MerchantCore", "MerchantStore", "HTTPClient",
                "HTTPCore", "HTTPServer", "ApplePay", "Foundations", "MerchantTestSupport", "TestSupport",
            ]),
        .testTarget(
            name: "MerchantHTTPTests",
            dependencies: [
                "MerchantHTTP", "MerchantCore", "MerchantStore", "MerchantIntegrations", "MerchantSandbox",
                "MerchantServer", "HTTPCore", "HTTPServer", "JSONCoding", "PaymentSheet", "PaymentToken", "Sandbox",
                "ApplePay", "Foundations", "MerchantTestSupport", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .testTarget(
            name: "MerchantIntegrationsTests",
            dependencies: [
                "MerchantIntegrations", "MerchantCore", "MerchantServer", "HTTPClient", "HTTPCore", "Sandbox",
                "Cryptography", "Foundations", "MerchantTestSupport", "TestSupport",
            ], exclude: ["python"]),
        .testTarget(
            name: "MerchantWalletTests",
            dependencies: [
                "MerchantWallet", "WalletOrders", "MerchantCore", "MerchantServer", "HTTPClient", "HTTPCore",
                "HTTPServer", "Sandbox", "Cryptography", "ApplePay", "MerchantTestSupport", "TestSupport",
            ], exclude: ["python"]),
        .testTarget(
            name: "MerchantServerTests",
            dependencies: [
                "MerchantServer", "MerchantCore", "MerchantStore", "MerchantHTTP", "MerchantIntegrations",
                "MerchantSandbox", "MerchantWallet", "WalletOrders", "Processors", "ProcessorAPI", "ProcessorService",
                "ProviderWebhooks", "SandboxGateway", "Sandbox", "SQLite", "HTTPClient", "HTTPCore", "HTTPServer",
                "Cryptography", "ApplePay", "Foundations", "MerchantTestSupport", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "ProcessorServiceTests",
            dependencies: ["ProcessorService", "ProcessorAPI", "SQLite", "HTTPClient", "TestSupport", "Foundations"]),
        // The examples' tests: each pays a sandbox token through its framework's testing library.
        .testTarget(
            name: "HummingbirdShopTests",
            dependencies: [
                "HummingbirdShop", "MerchantCore", "MerchantHTTP", "MerchantIntegrations", "MerchantSandbox",
                "PaymentToken", "Sandbox", "ApplePay", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/HummingbirdShop/Tests"),
        .testTarget(
            name: "VaporShopTests",
            dependencies: [
                "VaporShop", "MerchantCore", "MerchantHTTP", "MerchantIntegrations", "MerchantSandbox", "PaymentToken",
                "Sandbox", "ApplePay", .product(name: "Vapor", package: "vapor"),
                .product(name: "VaporTesting", package: "vapor"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/VaporShop/Tests"),
        .testTarget(
            name: "CommandLineTests",
            dependencies: ["applepay", "LibraryExamples", "FuzzMerchant", "TestSupport", "Foundations"],
            exclude: ["python"]),
    ]
)

for target in package.targets where target.type != .system {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("MemberImportVisibility"), .enableUpcomingFeature("ExistentialAny"),
        ]
}
