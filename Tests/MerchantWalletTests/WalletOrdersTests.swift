import ApplePay
import Cryptography
import Foundation
import HTTPClient
import MerchantServer
import MerchantTestSupport
import MerchantWallet
import Sandbox
import TestSupport
import Testing
import WalletOrders

/// Wallet orders end to end: a paid checkout's `orderDetails`, the sandbox Wallet registering and downloading the
/// signed package, OpenSSL checking the signature on its own, fulfilment updates, 304 and 401.
@Suite("Wallet orders")
struct WalletOrdersTests {
    @Test(
        "pay, register, download and verify (also with openssl cms), ship and deliver with pushes, 304, 401",
        arguments: StoreBackend.available)
    func endToEnd(_ backend: StoreBackend) async throws {
        let location = try await backend.serverLocation()
        let sandbox = try await SharedSandbox.get()
        let folder = try TemporaryDirectory(prefix: "sandbox-apns")
        defer { folder.remove() }
        let (apns, authKey) = try sandbox.startAPNs(teamID: "SANDBOX001", in: folder)
        defer { apns.shutdown() }
        let rootPath = sandbox.folder.appendingPathComponent(Sandbox.File.root).path
        var apnsClientConfiguration = HTTPClient.Configuration(
            timeout: .seconds(20), trustedRootsPEM: Data(sandbox.rootCertificate.pemRepresentation.utf8))
        apnsClientConfiguration.http2 = true
        let apnsClient = HTTPClient(configuration: apnsClientConfiguration)

        let useSandboxAPNs: (inout MerchantServerConfiguration) -> Void = {
            location.apply(&$0)
            $0.walletOrders?.apns = APNsSettings(
                baseURL: apns.url, keyID: authKey.keyID, teamID: "SANDBOX001", keyPath: authKey.path,
                trustedRootsPath: rootPath)
        }
        try await ServerHarness.with(live: true, configure: useSandboxAPNs) { server in
            let (details, orderID) = try await server.payForOrderDetails()
            #expect(details.orderIdentifier == orderID)
            #expect(details.orderTypeIdentifier == server.sandbox.orderTypeIdentifier)
            // No public URL is configured: the server's own http address is published as https, which Apple requires.
            #expect(
                details.webServiceURL == server.base.replacingOccurrences(of: "http://", with: "https://") + "/wallet")
            #expect(details.authenticationToken.count == 64)

            let wallet = try SandboxWallet(
                details: details, roots: [server.sandbox.rootCertificate], connectTo: server.base)
            #expect(try await wallet.register() == 201)
            #expect(try await wallet.register() == 200)

            // The first download: valid, open, not shipped yet, the card's name and last four.
            guard case .order(let order, let package, let lastModified?) = try await wallet.download() else {
                Issue.record("the first download was not a valid order")
                return
            }
            #expect(order.status == "open")
            #expect(order.orderTypeIdentifier == details.orderTypeIdentifier)
            #expect(order.fulfillments.first?.status == "processing")
            let card = try #require(order.payment.paymentMethods.first)
            #expect(try /^[A-Za-z]+ [0-9]{4}$/.wholeMatch(in: card) != nil, "\(card)")
            #expect(order.payment.status == "paid")
            #expect(order.lineItems.first?.quantity == 2)
            // Wallet registers at the order's own webServiceURL with its own authenticationToken.
            #expect(order.webServiceURL == details.webServiceURL)
            #expect(order.authenticationToken == details.authenticationToken)

            // OpenSSL, on its own, accepts the signature over manifest.json with the sandbox root, and every hash
            // in the manifest matches its file.
            let folder = try TemporaryDirectory(prefix: "order-package")
            defer { folder.remove() }
            let files = try ZIPArchive.read(package)
            for (name, data) in files { try data.write(to: folder.url.appendingPathComponent(name)) }
            try server.sandbox.rootCertificate.pemRepresentation.write(
                toFile: folder.path("root.pem"), atomically: true, encoding: .utf8)
            let verify = try await Subprocess.run(
                "openssl",
                [
                    "cms", "-verify", "-binary", "-inform", "DER", "-in", folder.path("signature"), "-content",
                    folder.path("manifest.json"), "-CAfile", folder.path("root.pem"), "-purpose", "any", "-out",
                    "/dev/null",
                ])
            #expect(verify.status == 0, "\(verify.standardError)")
            #expect(verify.standardError.contains("Verification successful"))
            let manifest = try JSONDecoder().decode(
                [String: String].self, from: try files["manifest.json"].orThrow("m"))
            #expect(Set(manifest.keys) == Set(files.keys).subtracting(["manifest.json", "signature"]))
            for (name, hash) in manifest {
                let digest = try await Subprocess.run("openssl", ["dgst", "-sha256", "-r", folder.path(name)])
                #expect(digest.standardOutput.hasPrefix(hash), "\(name)")
            }

            // Nothing changed: 304.
            guard case .notModified = try await wallet.download(ifModifiedSince: lastModified) else {
                Issue.record("If-Modified-Since did not get 304")
                return
            }

            // Shipped, then delivered: each download after the change sees it.
            let shipped = try await server.admin(
                "POST", "/admin/v1/orders/\(orderID)/fulfillments",
                json: ["status": "shipped", "carrier": "UPS", "trackingNumber": "1Z999AA10123456784"])
            #expect(shipped.status == 200, "\(shipped.text)")
            #expect(shipped.json["devicesNotified"] as? Int == 1)
            #expect(try await wallet.waitForPushes(apns: apnsClient, url: apns.url, after: 0) == [1])
            guard
                case .order(let afterShipping, _, let shippedModified?) = try await wallet.download(
                    ifModifiedSince: lastModified)
            else {
                Issue.record("no new package after shipping")
                return
            }
            #expect(afterShipping.fulfillments.first?.status == "shipped")
            #expect(afterShipping.fulfillments.first?.carrier == "UPS")
            #expect(afterShipping.fulfillments.first?.trackingNumber == "1Z999AA10123456784")
            #expect(afterShipping.status == "open")

            let delivered = try await server.admin(
                "POST", "/admin/v1/orders/\(orderID)/fulfillments", json: ["status": "delivered"])
            #expect(delivered.status == 200, "\(delivered.text)")
            #expect(try await wallet.waitForPushes(apns: apnsClient, url: apns.url, after: 1) == [2])
            #expect(
                apns.pushes.allSatisfy { $0.topic == details.orderTypeIdentifier && $0.deviceToken == wallet.pushToken }
            )
            #expect(apns.pushes.map(\.payload) == ["{}", "{}"])
            guard case .order(let afterDelivery, _, _) = try await wallet.download(ifModifiedSince: shippedModified)
            else {
                Issue.record("no new package after delivery")
                return
            }
            #expect(afterDelivery.fulfillments.first?.status == "delivered")
            #expect(afterDelivery.status == "completed")

            // The device's registrations, and changes since a point.
            let listPath = "/wallet/v1/devices/\(wallet.deviceIdentifier)/registrations/\(details.orderTypeIdentifier)"
            let list = try await server.get(listPath)
            #expect(list.status == 200)
            #expect(list.json["orderIdentifiers"] as? [String] == [orderID])
            let since = try (list.json["lastModified"] as? String).orThrow("lastModified")
            #expect(try await server.get(listPath + "?ordersModifiedSince=\(since)").status == 204)

            // Tokens and unknown orders.
            let orderPath = "/wallet/v1/orders/\(details.orderTypeIdentifier)/\(orderID)"
            #expect(try await server.get(orderPath).status == 401)
            #expect(
                try await server.send("GET", orderPath, headers: [("Authorization", "AppleOrder wrong-token")]).status
                    == 401)
            #expect(
                try await server.send(
                    "GET", orderPath, headers: [("Authorization", "Bearer \(details.authenticationToken)")]
                )
                .status == 401)
            let right = [(name: "Authorization", value: "AppleOrder \(details.authenticationToken)")]
            #expect(
                try await server.send(
                    "GET", "/wallet/v1/orders/\(details.orderTypeIdentifier)/ord_unknown", headers: right
                )
                .status == 401)
            #expect(
                try await server.send("GET", "/wallet/v1/orders/order.com.other/\(orderID)", headers: right).status
                    == 401)
            let registration =
                "/wallet/v1/devices/dev2/registrations/\(details.orderTypeIdentifier)/\(orderID)"
            #expect(
                try await server.send(
                    "POST", registration, headers: [("Content-Type", "application/json")],
                    body: Data(#"{"pushToken":"abc"}"#.utf8)
                ).status == 401)
            // Apple lists 200 (unregistered) and 401 only: removing what is not there is still 200.
            #expect(try await server.send("DELETE", registration, headers: right).status == 200)
            #expect(
                try await server.send(
                    "POST", "/wallet/v1/log", headers: [("Content-Type", "application/json")],
                    body: Data(#"{"logs":["device says hello"]}"#.utf8)
                ).status == 200)
        }
    }

    @Test("the sandbox APNs speaks HTTP/2 and refuses missing, forged or stale provider tokens and wrong topics")
    func sandboxAPNsChecks() async throws {
        let sandbox = try await SharedSandbox.get()
        let folder = try TemporaryDirectory(prefix: "sandbox-apns")
        defer { folder.remove() }
        let (apns, authKey) = try sandbox.startAPNs(teamID: "TEAM", in: folder)
        defer { apns.shutdown() }
        var configuration = HTTPClient.Configuration(
            timeout: .seconds(20), trustedRootsPEM: Data(sandbox.rootCertificate.pemRepresentation.utf8))
        configuration.http2 = true
        let client = HTTPClient(configuration: configuration)
        func push(_ token: String?, topic: String? = sandbox.orderTypeIdentifier) async throws -> (Int, String, Int) {
            var headers: [(name: String, value: String)] = []
            if let token { headers.append(("authorization", "bearer \(token)")) }
            if let topic { headers.append(("apns-topic", topic)) }
            let response = try await client.send(
                HTTPClientRequest(
                    method: "POST", url: apns.url + "/3/device/abcdef", headers: headers, body: Data("{}".utf8)))
            return (response.status, String(decoding: response.body, as: UTF8.self), response.httpVersion)
        }
        func jwt(kid: String = authKey.keyID, iss: String = "TEAM", iat: Date = Date(), key: PrivateKey = authKey.key)
            throws -> String
        {
            try JSONWebToken.es256(
                header: ["alg": "ES256", "kid": kid],
                claims: ["iss": .string(iss), "iat": .number(Int(iat.timeIntervalSince1970))], key: key)
        }
        let good = try await push(try jwt())
        #expect(good.0 == 200)
        #expect(good.2 == 2)
        #expect(try await push(nil).1.contains("MissingProviderToken"))
        #expect(try await push(try jwt(kid: "OTHER")).1.contains("InvalidProviderToken"))
        #expect(try await push(try jwt(iss: "OTHER")).1.contains("InvalidProviderToken"))
        #expect(try await push(try jwt(key: try PrivateKey.generate(.p256))).1.contains("InvalidProviderToken"))
        #expect(try await push(try jwt(iat: Date() - 7200)).1.contains("ExpiredProviderToken"))
        #expect(try await push(try jwt(), topic: "order.com.other").1.contains("BadTopic"))
        #expect(apns.pushes.count == 1)
    }

    /// The sandbox's Order Type ID signer, with the Wallet intermediate.
    static func signer(_ sandbox: Sandbox) throws -> CMSSigner {
        try CMSSigner(
            certificate: sandbox.orderTypeID.certificate, privateKey: sandbox.orderTypeID.privateKey,
            additionalCertificates: [sandbox.walletCA.certificate])
    }

    /// A small valid order of the sandbox's order type.
    static func sampleOrder(_ sandbox: Sandbox) -> WalletOrder {
        WalletOrder(
            orderTypeIdentifier: sandbox.orderTypeIdentifier, orderIdentifier: "ord_1", orderNumber: "1",
            status: "open",
            merchant: .init(merchantIdentifier: sandbox.merchantIdentifier, displayName: "Shop", url: "https://shop"),
            createdAt: Date(), updatedAt: Date(), orderManagementURL: "https://shop/orders/1",
            lineItems: [.init(title: "Mug", quantity: 1, price: .init(amount: "9.00", currency: "USD"), sku: "MUG")],
            payment: .init(
                total: .init(amount: "9.00", currency: "USD"), status: "paid", summaryItems: [],
                paymentMethods: ["Visa 0492"]),
            fulfillments: [], webServiceURL: "https://shop/wallet", authenticationToken: "0123456789abcdef")
    }

    @Test("a package with a changed file, or signed by another key, is refused by the verifier")
    func tamperedPackages() async throws {
        let sandbox = try await SharedSandbox.get()
        let order = Self.sampleOrder(sandbox)
        let signer = try Self.signer(sandbox)
        let trust = try TrustStore(roots: [sandbox.rootCertificate])
        let package = try OrderPackage.make(order, signer: signer)
        guard case .success(let verified) = OrderPackage.verify(package, roots: trust) else {
            Issue.record("a good package was refused")
            return
        }
        #expect(verified.order == order)

        var files = try ZIPArchive.read(package)
        files["order.json"] = Data(
            String(decoding: files["order.json"]!, as: UTF8.self).replacingOccurrences(
                of: "9.00", with: "0.01"
            ).utf8)
        let tampered = ZIPArchive.make(files.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        guard case .failure(let refusal) = OrderPackage.verify(tampered, roots: trust) else {
            Issue.record("a tampered package was accepted")
            return
        }
        #expect(refusal.check == .hash)

        // Signed by a certificate that does not chain to the sandbox root.
        let otherKey = try PrivateKey.generate(.p256)
        var builder = CertificateBuilder(
            subject: DistinguishedName(userID: sandbox.orderTypeIdentifier, commonName: "Order Type ID: fake"),
            publicKey: otherKey.publicKey, notBefore: Date() - 60, notAfter: Date() + 3600)
        builder.keyUsage = [.digitalSignature]
        let selfSigned = try builder.selfSigned(with: otherKey)
        let forged = try OrderPackage.make(order, signer: try CMSSigner(certificate: selfSigned, privateKey: otherKey))
        guard case .failure(let chain) = OrderPackage.verify(forged, roots: trust) else {
            Issue.record("a package signed outside the sandbox was accepted")
            return
        }
        #expect(chain.check == .chain)
    }

    @Test("CRC-32 and stored ZIP round trip")
    func zip() throws {
        #expect(CRC32.checksum(Data("123456789".utf8)) == 0xCBF4_3926)
        let archive = ZIPArchive.make([("a.txt", Data("hello".utf8)), ("dir/b.json", Data("{}".utf8))])
        #expect(try ZIPArchive.read(archive) == ["a.txt": Data("hello".utf8), "dir/b.json": Data("{}".utf8)])
        var corrupt = archive
        corrupt[corrupt.startIndex + 30 + 5] ^= 0xFF  // a byte of a.txt's data
        #expect(throws: ZIPArchive.ReadError.self) { try ZIPArchive.read(corrupt) }
    }
}
