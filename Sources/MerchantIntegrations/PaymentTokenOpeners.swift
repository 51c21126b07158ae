import MerchantCore
import PaymentToken

/// Public ways to make a ``PaymentTokenOpening`` without a running ``MerchantApplication``: for a `MerchantAPI`
/// built in process (the `applepay` tool plays scenarios against one).
public enum PaymentTokenOpeners {
    /// The opener `MerchantApplication` uses, around a decryptor the caller made (its merchant keys, trusted roots
    /// and clock).
    public static func decrypting(with decryptor: PaymentTokenDecryptor) -> any PaymentTokenOpening {
        DecryptingTokenOpener(decryptor: decryptor)
    }
}
