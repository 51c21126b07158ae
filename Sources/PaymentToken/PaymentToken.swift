import Cryptography
import Foundation
import Foundations
import JSONCoding

/// An Apple Pay payment token as received: the `paymentData` fields decoded to bytes, and the surrounding
/// PKPaymentToken fields when the whole token was given. Parsing checks shape and encodings only; nothing here is
/// trusted until `PaymentTokenVerifier` or `PaymentTokenDecryptor` has checked it.
public struct PaymentToken: Sendable, CustomStringConvertible {
    /// The two token formats.
    public enum Version: String, Sendable, Hashable, Codable {
        /// ECDH P-256 + AES-256-GCM.
        case ecV1 = "EC_v1"
        /// RSA-OAEP-wrapped AES-128-GCM key.
        case rsaV1 = "RSA_v1"
    }

    /// `paymentMethod`, when the whole PKPaymentToken was given.
    public struct PaymentMethod: Sendable, Hashable, Codable {
        /// E.g. "Visa 0492".
        public var displayName: String?
        /// E.g. "Visa".
        public var network: String?
        /// debit, credit, prepaid, store or eMoney.
        public var type: String?
    }

    /// The largest token accepted, in bytes of JSON (real tokens are about 4 KB).
    public static let maximumJSONSize = 256 * 1024

    /// EC_v1 or RSA_v1.
    public let version: Version
    /// The ciphertext with its 16-byte GCM tag.
    public let data: [UInt8]
    /// The detached CMS signature (BER).
    public let signature: [UInt8]
    /// `header.ephemeralPublicKey` (EC_v1) or `header.wrappedKey` (RSA_v1), decoded.
    public let keyMaterial: [UInt8]
    /// `header.publicKeyHash`: SHA-256 of the merchant certificate's SubjectPublicKeyInfo.
    public let publicKeyHash: [UInt8]
    /// `header.transactionId`, decoded from hex.
    public let transactionId: [UInt8]
    /// `header.applicationData`, decoded from hex (a SHA-256 of the merchant's application data), when present.
    public let applicationData: [UInt8]?
    /// `paymentMethod`, when present.
    public let paymentMethod: PaymentMethod?
    /// `transactionIdentifier` of a whole PKPaymentToken, as given (not covered by the signature).
    public let transactionIdentifier: String?

    /// `header.transactionId` as lowercase hex.
    public var transactionIdHex: String { HexCoding.encode(transactionId) }

    /// Parses a token: the bare `paymentData` object or a PKPaymentToken with `paymentData` nested.
    /// - Throws: `PaymentTokenError` `.malformedToken` for anything that is not a token, `.unsupportedVersion`.
    public init(jsonData: some DataProtocol) throws(PaymentTokenError) {
        guard jsonData.count <= PaymentToken.maximumJSONSize else {
            throw PaymentTokenError(
                .malformedToken,
                "the token is \(jsonData.count) bytes; tokens are a few kilobytes (limit \(PaymentToken.maximumJSONSize))"
            )
        }
        // Read straight from the caller's bytes when they are contiguous (Data, [UInt8]): no copy of the document.
        let read = { (buffer: UnsafeBufferPointer<UInt8>) -> Result<PaymentToken, PaymentTokenError> in
            Result { () throws(PaymentTokenError) in try PaymentToken(scanning: buffer) }
        }
        let result: Result<PaymentToken, PaymentTokenError>
        if let contiguous = jsonData.withContiguousStorageIfAvailable(read) {
            result = contiguous
        } else if let data = jsonData as? Data {
            result = data.withUnsafeBytes { read($0.bindMemory(to: UInt8.self)) }
        } else {
            result = Array(jsonData).withUnsafeBufferPointer(read)
        }
        self = try result.get()
    }

    /// Reads a token with `TokenScanner`: the same checks and errors as reading a `TokenJSON` tree
    /// (`init(treeReadingJSONData:)`), without building one.
    private init(scanning buffer: UnsafeBufferPointer<UInt8>) throws(PaymentTokenError) {
        let scan: TokenScanner
        do {
            scan = try TokenScanner.scan(buffer)
        } catch {
            throw PaymentTokenError(.malformedToken, "the token is not valid JSON: \(error.message)")
        }
        guard scan.rootIsObject else {
            throw PaymentTokenError(
                .malformedToken, "the token must be a JSON object (paymentData or a whole PKPaymentToken)")
        }
        func string(_ value: TokenScanner.Value) -> String? {
            guard case .string(let text) = value else { return nil }
            return scan.withBytes(text, TokenJSON.validatedString)
        }
        var paymentData = TokenScanner.Scope.top
        var header = TokenScanner.Scope.topHeader
        var method: PaymentMethod? = nil
        var identifier: String? = nil
        switch scan[.top, .paymentData] {
        case .absent: break
        case .object:
            paymentData = .paymentData
            header = .paymentDataHeader
            if case .object = scan[.top, .paymentMethod] {
                method = PaymentMethod(
                    displayName: string(scan[.paymentMethod, .displayName]),
                    network: string(scan[.paymentMethod, .network]), type: string(scan[.paymentMethod, .type]))
            }
            identifier = string(scan[.top, .transactionIdentifier])
        default:
            throw PaymentTokenError(.malformedToken, "paymentData must be an object")
        }
        let version: Version
        switch scan[paymentData, .version] {
        case .string(let text):
            let known = scan.withBytes(text) { bytes -> Version? in
                if bytes.elementsEqual("EC_v1".utf8) { return .ecV1 }
                if bytes.elementsEqual("RSA_v1".utf8) { return .rsaV1 }
                return nil
            }
            if let known {
                version = known
            } else if let versionText = string(.string(text)) {
                throw PaymentTokenError(
                    .unsupportedVersion, "version \"\(versionText.prefix(32))\" is not supported: use EC_v1 or RSA_v1")
            } else {
                throw PaymentToken.missingVersion
            }
        default:
            throw PaymentToken.missingVersion
        }
        guard case .object = scan[paymentData, .header] else {
            throw PaymentTokenError(.malformedToken, "paymentData.header is missing or not an object")
        }
        func bytes(_ value: TokenScanner.Value, _ name: String, _ encoding: TokenFieldEncoding)
            throws(PaymentTokenError) -> [UInt8]
        {
            guard case .string(let text) = value else { throw TokenFieldEncoding.missing(name) }
            return try encoding.bytes(scan.withBytes(text) { encoding.decode($0) }, field: name)
        }
        func base64(_ value: TokenScanner.Value, _ name: String) throws(PaymentTokenError) -> [UInt8] {
            try bytes(value, name, .base64)
        }
        func hex(_ value: TokenScanner.Value, _ name: String) throws(PaymentTokenError) -> [UInt8] {
            try bytes(value, name, .hexadecimal)
        }
        let applicationData: TokenScanner.Value
        switch scan[header, .applicationData] {
        case .absent, .null: applicationData = .absent
        case let present: applicationData = present
        }
        try self.init(
            version: version, data: base64(scan[paymentData, .data], "paymentData.data"),
            signature: base64(scan[paymentData, .signature], "paymentData.signature"),
            keyMaterial: version == .ecV1
                ? base64(scan[header, .ephemeralPublicKey], "header.ephemeralPublicKey")
                : base64(scan[header, .wrappedKey], "header.wrappedKey"),
            publicKeyHash: base64(scan[header, .publicKeyHash], "header.publicKeyHash"),
            transactionId: hex(scan[header, .transactionId], "header.transactionId"),
            applicationData: applicationData.isAbsent ? nil : hex(applicationData, "header.applicationData"),
            paymentMethod: method, transactionIdentifier: identifier)
    }

    static let missingVersion = PaymentTokenError(
        .malformedToken, "paymentData.version is missing: is this an Apple Pay token?")

    /// The checks both readers share, on the decoded fields.
    private init(
        version: Version, data: [UInt8], signature: [UInt8], keyMaterial: [UInt8], publicKeyHash: [UInt8],
        transactionId: [UInt8], applicationData: [UInt8]?, paymentMethod: PaymentMethod?,
        transactionIdentifier: String?
    ) throws(PaymentTokenError) {
        guard publicKeyHash.count == 32 else {
            throw PaymentTokenError(.malformedToken, "header.publicKeyHash must be a base64 SHA-256 (32 bytes)")
        }
        // The signature covers the fields concatenated without lengths, so their boundaries must be fixed: with a
        // variable-length transactionId, bytes could be moved between it and applicationData (or the end of data)
        // and the signature would still verify, giving the same payment a new replay key. Apple's transactionId
        // is 32 bytes and applicationData a SHA-256.
        guard transactionId.count == 32 else {
            throw PaymentTokenError(
                .malformedToken,
                "header.transactionId must be 64 hex digits (32 bytes), not \(transactionId.count) bytes")
        }
        if let applicationData, applicationData.count != 32 {
            throw PaymentTokenError(
                .malformedToken,
                "header.applicationData must be a hex SHA-256 (32 bytes), not \(applicationData.count) bytes")
        }
        self.version = version
        self.data = data
        self.signature = signature
        self.keyMaterial = keyMaterial
        self.publicKeyHash = publicKeyHash
        self.transactionId = transactionId
        self.applicationData = applicationData
        self.paymentMethod = paymentMethod
        self.transactionIdentifier = transactionIdentifier
    }

    /// Parses a token by building a `TokenJSON` tree first: the reader `init(jsonData:)` replaced, kept so that
    /// tests can check the scanner against it (same token, or same error code, for any input).
    @_spi(Testing)
    public init(treeReadingJSONData jsonData: some DataProtocol) throws(PaymentTokenError) {
        guard jsonData.count <= PaymentToken.maximumJSONSize else {
            throw PaymentTokenError(
                .malformedToken,
                "the token is \(jsonData.count) bytes; tokens are a few kilobytes (limit \(PaymentToken.maximumJSONSize))"
            )
        }
        let root: TokenJSON
        do {
            root = try TokenJSON.parse(PaymentToken.contiguousBytes(jsonData))
        } catch {
            throw PaymentTokenError(.malformedToken, "the token is not valid JSON: \(error.message)")
        }
        guard case .object(let top) = root else {
            throw PaymentTokenError(
                .malformedToken, "the token must be a JSON object (paymentData or a whole PKPaymentToken)")
        }
        var paymentData = top
        var method: PaymentMethod? = nil
        var identifier: String? = nil
        if let nested = top["paymentData"] {
            guard case .object(let inner) = nested else {
                throw PaymentTokenError(.malformedToken, "paymentData must be an object")
            }
            paymentData = inner
            if let methodObject = top["paymentMethod"]?.object {
                method = PaymentMethod(
                    displayName: methodObject["displayName"]?.string, network: methodObject["network"]?.string,
                    type: methodObject["type"]?.string)
            }
            identifier = top["transactionIdentifier"]?.string
        }
        guard let versionText = paymentData["version"]?.string else {
            throw PaymentTokenError(.malformedToken, "paymentData.version is missing: is this an Apple Pay token?")
        }
        guard let version = Version(rawValue: versionText) else {
            throw PaymentTokenError(
                .unsupportedVersion, "version \"\(versionText.prefix(32))\" is not supported: use EC_v1 or RSA_v1")
        }
        guard let header = paymentData["header"]?.object else {
            throw PaymentTokenError(.malformedToken, "paymentData.header is missing or not an object")
        }
        func bytes(_ value: TokenJSON?, _ name: String, _ encoding: TokenFieldEncoding)
            throws(PaymentTokenError) -> [UInt8]
        {
            guard let text = value?.stringBytes else { throw TokenFieldEncoding.missing(name) }
            return try encoding.bytes(encoding.decode(text), field: name)
        }
        func base64(_ value: TokenJSON?, _ name: String) throws(PaymentTokenError) -> [UInt8] {
            try bytes(value, name, .base64)
        }
        func hex(_ value: TokenJSON?, _ name: String) throws(PaymentTokenError) -> [UInt8] {
            try bytes(value, name, .hexadecimal)
        }
        self.version = version
        self.data = try base64(paymentData["data"], "paymentData.data")
        self.signature = try base64(paymentData["signature"], "paymentData.signature")
        switch version {
        case .ecV1:
            keyMaterial = try base64(header["ephemeralPublicKey"], "header.ephemeralPublicKey")
        case .rsaV1:
            keyMaterial = try base64(header["wrappedKey"], "header.wrappedKey")
        }
        publicKeyHash = try base64(header["publicKeyHash"], "header.publicKeyHash")
        guard publicKeyHash.count == 32 else {
            throw PaymentTokenError(.malformedToken, "header.publicKeyHash must be a base64 SHA-256 (32 bytes)")
        }
        // The signature covers the fields concatenated without lengths, so their boundaries must be fixed: with a
        // variable-length transactionId, bytes could be moved between it and applicationData (or the end of data)
        // and the signature would still verify, giving the same payment a new replay key. Apple's transactionId
        // is 32 bytes and applicationData a SHA-256.
        transactionId = try hex(header["transactionId"], "header.transactionId")
        guard transactionId.count == 32 else {
            throw PaymentTokenError(
                .malformedToken,
                "header.transactionId must be 64 hex digits (32 bytes), not \(transactionId.count) bytes")
        }
        if let application = header["applicationData"], !application.isNull {
            let bytes = try hex(application, "header.applicationData")
            guard bytes.count == 32 else {
                throw PaymentTokenError(
                    .malformedToken, "header.applicationData must be a hex SHA-256 (32 bytes), not \(bytes.count) bytes"
                )
            }
            applicationData = bytes
        } else {
            applicationData = nil
        }
        paymentMethod = method
        transactionIdentifier = identifier
    }

    /// The bytes as an array: one copy with `memcpy` when they are contiguous (`Data`, `[UInt8]` without a copy at
    /// all), not a generic element-by-element one.
    static func contiguousBytes(_ input: some DataProtocol) -> [UInt8] {
        if let array = input as? [UInt8] { return array }
        let copied = input.withContiguousStorageIfAvailable { buffer in
            [UInt8](unsafeUninitializedCapacity: buffer.count) { out, initialized in
                if let base = buffer.baseAddress, let target = out.baseAddress, !buffer.isEmpty {
                    target.initialize(from: base, count: buffer.count)
                }
                initialized = buffer.count
            }
        }
        if let copied { return copied }
        if let data = input as? Data {
            return data.withUnsafeBytes { raw in
                [UInt8](unsafeUninitializedCapacity: raw.count) { out, initialized in
                    if let base = raw.baseAddress, let target = out.baseAddress, raw.count > 0 {
                        UnsafeMutableRawPointer(target).copyMemory(from: base, byteCount: raw.count)
                    }
                    initialized = raw.count
                }
            }
        }
        return Array(input)
    }

    /// SHA-256 of the bytes the signature covers (key material ‖ data ‖ transactionId ‖ applicationData), hashed
    /// in place without concatenating them first.
    var signedContentDigest: Data {
        Digest.sha256(concatenating: [keyMaterial, data, transactionId, applicationData ?? []])
    }

    /// The bytes the signature covers: key material ‖ data ‖ transactionId ‖ applicationData.
    var signedContent: [UInt8] {
        var content: [UInt8] = []
        content.reserveCapacity(keyMaterial.count + data.count + transactionId.count + (applicationData?.count ?? 0))
        content += keyMaterial
        content += data
        content += transactionId
        if let applicationData { content += applicationData }
        return content
    }

    /// Names the version and the transaction only.
    public var description: String { "PaymentToken(\(version.rawValue), transaction \(transactionIdHex.prefix(16))…)" }
}

/// How a token field's text encodes its bytes, and the refusals of a field that is not what it should be: the one
/// home of both token readers' field checks.
enum TokenFieldEncoding {
    case base64, hexadecimal

    func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        self == .base64 ? Base64.decode(utf8: text) : HexCoding.decode(utf8: text)
    }

    func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        self == .base64 ? Base64.decode(utf8: text) : HexCoding.decode(utf8: text)
    }

    /// The field's decoded bytes; `malformedToken` naming the field when they are not valid (nil) or empty.
    func bytes(_ decoded: [UInt8]?, field name: String) throws(PaymentTokenError) -> [UInt8] {
        guard let decoded, !decoded.isEmpty else {
            throw PaymentTokenError(
                .malformedToken, "\(name) is not valid \(self == .base64 ? "base64" : "hexadecimal")")
        }
        return decoded
    }

    /// `malformedToken`: the field is missing or not a string.
    static func missing(_ name: String) -> PaymentTokenError {
        PaymentTokenError(.malformedToken, "\(name) is missing or not a string")
    }
}
