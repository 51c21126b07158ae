import Cryptography
import Foundation
import Foundations

/// A Wallet order package (`.order`, MIME `application/vnd.apple.finance.order`): `order.json`, optional images,
/// `manifest.json` (each file's SHA-256 in hex) and `signature` (a detached CMS signature over `manifest.json` by
/// the Order Type ID certificate, with its intermediate), stored in a ZIP archive.
public enum OrderPackage {
    /// The package's media type, as the orders web service serves it (Apple's "Retrieve the latest version of an
    /// order").
    public static let mediaType = "application/vnd.apple.finance.order"

    /// Builds and signs a package.
    /// - Parameters:
    ///   - order: becomes `order.json` (sorted keys).
    ///   - files: more files, such as `logo.png`.
    ///   - signer: the Order Type ID certificate and key, with the Wallet intermediate as an additional certificate.
    ///   - signingTime: the CMS signing time.
    /// - Throws: `CryptographyError` when signing fails; `EncodingError` when the order cannot be encoded.
    public static func make(
        _ order: WalletOrder, files: [String: Data] = [:], signer: CMSSigner, signingTime: Date = Date()
    ) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        var contents = files
        contents["order.json"] = try encoder.encode(order)
        let manifest = Dictionary(uniqueKeysWithValues: contents.map { ($0.key, hex(Digest.sha256($0.value))) })
        let manifestData = try encoder.encode(manifest)
        let signature = try signer.signDetached(manifestData, signingTime: signingTime)
        var entries = contents.sorted { $0.key < $1.key }.map { (path: $0.key, data: $0.value) }
        entries.append((path: "manifest.json", data: manifestData))
        entries.append((path: "signature", data: signature))
        return ZIPArchive.make(entries)
    }

    /// What a device finds in a package.
    public struct Verification: Sendable {
        public var order: WalletOrder
        public var files: [String: Data]
        public var signer: Certificate
    }

    /// Why a package was refused.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The check that failed: `mediaType` is the download's (the web service's `Content-Type`), the others the
        /// package's own.
        public enum Check: String, Sendable, Codable {
            case mediaType, archive, missingFile, manifest, hash, signature, chain, orderTypeIdentifier, schema
        }
        public var check: Check
        public var message: String
        public init(check: Check, message: String) {
            self.check = check
            self.message = message
        }
        public var description: String { "\(check.rawValue): \(message)" }
    }

    /// Checks a package as Wallet does: the archive, every manifest hash (and no file left out), the signature over
    /// `manifest.json`, the signer's chain to one of `roots` at `date`, the signer's subject UID against the order's
    /// `orderTypeIdentifier`, and `order.json` against Apple's schema (``WalletOrderSchema``: every required field
    /// with its JSON type, the enums, `webServiceURL` https with an `authenticationToken` of 16 characters or more).
    /// Expected failures are returned, not thrown.
    public static func verify(_ package: Data, roots: TrustStore, at date: Date = Date()) -> Result<
        Verification, Refusal
    > {
        let files: [String: Data]
        do {
            files = try ZIPArchive.read(package)
        } catch {
            return .failure(Refusal(check: .archive, message: error.message))
        }
        for required in ["order.json", "manifest.json", "signature"] where files[required] == nil {
            return .failure(Refusal(check: .missingFile, message: "the package has no \(required)"))
        }
        guard let manifestData = files["manifest.json"], let signature = files["signature"],
            let manifest = try? JSONDecoder().decode([String: String].self, from: manifestData)
        else { return .failure(Refusal(check: .manifest, message: "manifest.json is not a map of paths to hashes")) }
        let covered = Set(files.keys).subtracting(["manifest.json", "signature"])
        guard Set(manifest.keys) == covered else {
            return .failure(
                Refusal(
                    check: .manifest,
                    message: "manifest.json lists \(manifest.keys.sorted()) but the package holds \(covered.sorted())"))
        }
        for (path, hash) in manifest.sorted(by: { $0.key < $1.key }) {
            guard let data = files[path], hex(Digest.sha256(data)) == hash.lowercased() else {
                return .failure(Refusal(check: .hash, message: "\(path) does not match its SHA-256 in manifest.json"))
            }
        }
        let signed: (signer: Certificate, certificates: [Certificate], signingTime: Date?)
        do {
            signed = try CMSSignedData.verifyDetached(signature, content: manifestData)
        } catch {
            return .failure(Refusal(check: .signature, message: "\(error)"))
        }
        do {
            _ = try roots.verify(
                signed.signer, intermediates: signed.certificates.filter { $0 != signed.signer }, at: date)
        } catch {
            return .failure(Refusal(check: .chain, message: "\(error)"))
        }
        let orderData = files["order.json", default: Data()]
        let problems = WalletOrderSchema.problems(in: orderData)
        guard problems.isEmpty else {
            return .failure(Refusal(check: .schema, message: problems.joined(separator: "; ")))
        }
        let order: WalletOrder
        do {
            order = try JSONDecoder().decode(WalletOrder.self, from: orderData)
        } catch {
            return .failure(
                Refusal(
                    check: .schema,
                    message: "order.json follows Apple's schema but this reader cannot show it: \(error)"))
        }
        guard signed.signer.subjectUID == order.orderTypeIdentifier else {
            return .failure(
                Refusal(
                    check: .orderTypeIdentifier,
                    message: "signed by \(signed.signer.subjectUID ?? "no UID"), not \(order.orderTypeIdentifier)"))
        }
        return .success(Verification(order: order, files: files, signer: signed.signer))
    }
}

/// Lowercase hexadecimal text of bytes.
func hex(_ bytes: Data) -> String { lowercaseHex(bytes) }
