import Foundations

/// Why bytes are not JSON (RFC 8259) within a reader's ``JSONLimits``: a stable ``code`` and the byte ``offset``
/// where reading stopped. Two errors are equal when their codes are.
public struct JSONGrammarError: CodedError {
    /// What kind of failure this is.
    public let code: Code
    /// The offset in the text of the byte where reading stopped.
    public let offset: Int
    /// What went wrong, without the offset (e.g. `unexpected end of JSON`).
    public let message: String

    /// An error of `code` at `offset`; the message is the code's own unless one is given.
    public init(_ code: Code, offset: Int, message: String? = nil) {
        self.code = code
        self.offset = offset
        self.message = message ?? JSONGrammarError.message(for: code)
    }

    /// `code at byte N: message`.
    public var description: String { "\(code) at byte \(offset): \(message)" }

    static func message(for code: Code) -> String {
        switch code {
        case .unexpectedEnd: "unexpected end of JSON"
        case .trailingCharacters: "trailing characters after the JSON value"
        case .tooDeep: "JSON nested too deeply"
        case .tooLarge: "JSON text too large"
        case .expectedMemberName: "expected a member name"
        case .expectedColon: "expected ':'"
        case .expectedCommaOrBrace: "expected ',' or '}'"
        case .expectedCommaOrBracket: "expected ',' or ']'"
        case .tooManyMembers: "a JSON object has too many members"
        case .duplicateMemberName: "a member appears twice"
        case .invalidLiteral: "invalid JSON literal"
        case .invalidValue: "invalid JSON value"
        case .leadingZero: "leading zero in a JSON number"
        case .invalidNumber: "invalid JSON number"
        case .numberTooLong: "JSON number too long"
        case .truncatedEscape: "truncated \\u escape"
        case .invalidUnicodeEscape: "invalid \\u escape"
        case .unpairedSurrogate: "unpaired surrogate in a JSON string"
        case .invalidEscape: "invalid escape in a JSON string"
        case .controlCharacter: "control character in a JSON string"
        case .unterminatedString: "unterminated JSON string"
        case .invalidUTF8: "invalid UTF-8 in a JSON string"
        default: code.rawValue
        }
    }
}

/// The stable codes of ``JSONGrammarError``.
extension ErrorCode<JSONGrammarError> {
    /// The text ends inside a value.
    public static var unexpectedEnd: Self { Self("unexpectedEnd") }
    /// Something other than whitespace follows the value.
    public static var trailingCharacters: Self { Self("trailingCharacters") }
    /// A value is nested deeper than ``JSONLimits/maximumDepth``.
    public static var tooDeep: Self { Self("tooDeep") }
    /// The text is longer than ``JSONLimits/maximumBytes``.
    public static var tooLarge: Self { Self("tooLarge") }
    /// An object has no `"` where a member name must start.
    public static var expectedMemberName: Self { Self("expectedMemberName") }
    /// A member name is not followed by `:`.
    public static var expectedColon: Self { Self("expectedColon") }
    /// A member is followed by neither `,` nor `}`.
    public static var expectedCommaOrBrace: Self { Self("expectedCommaOrBrace") }
    /// An element is followed by neither `,` nor `]`.
    public static var expectedCommaOrBracket: Self { Self("expectedCommaOrBracket") }
    /// An object has more than ``JSONLimits/maximumMembers`` members.
    public static var tooManyMembers: Self { Self("tooManyMembers") }
    /// An object names a member twice (only with ``JSONLimits/rejectsDuplicateNames``).
    public static var duplicateMemberName: Self { Self("duplicateMemberName") }
    /// `t`, `f` or `n` that does not spell `true`, `false` or `null`.
    public static var invalidLiteral: Self { Self("invalidLiteral") }
    /// A byte that starts no value (a number without integer digits included).
    public static var invalidValue: Self { Self("invalidValue") }
    /// A number's integer part has a leading zero (`01`).
    public static var leadingZero: Self { Self("leadingZero") }
    /// A fraction or exponent without digits (`1.`, `1e+`).
    public static var invalidNumber: Self { Self("invalidNumber") }
    /// A number longer than ``JSONLimits/maximumNumberLength`` bytes.
    public static var numberTooLong: Self { Self("numberTooLong") }
    /// `\u` with fewer than four bytes left.
    public static var truncatedEscape: Self { Self("truncatedEscape") }
    /// `\u` not followed by four hexadecimal digits.
    public static var invalidUnicodeEscape: Self { Self("invalidUnicodeEscape") }
    /// A `\u` surrogate escape without its other half (a lone high or low surrogate).
    public static var unpairedSurrogate: Self { Self("unpairedSurrogate") }
    /// A backslash followed by a character that is not an escape.
    public static var invalidEscape: Self { Self("invalidEscape") }
    /// A byte below 0x20 inside a string.
    public static var controlCharacter: Self { Self("controlCharacter") }
    /// A string without its closing quote.
    public static var unterminatedString: Self { Self("unterminatedString") }
    /// Bytes inside a string that are not UTF-8 (overlong forms, surrogates, past U+10FFFF, truncated), with
    /// ``JSONLimits/validatesUTF8``.
    public static var invalidUTF8: Self { Self("invalidUTF8") }

    /// Every code, for documentation and tests.
    public static var all: [Self] {
        [
            .unexpectedEnd, .trailingCharacters, .tooDeep, .tooLarge, .expectedMemberName, .expectedColon,
            .expectedCommaOrBrace, .expectedCommaOrBracket, .tooManyMembers, .duplicateMemberName, .invalidLiteral,
            .invalidValue, .leadingZero, .invalidNumber, .numberTooLong, .truncatedEscape, .invalidUnicodeEscape,
            .unpairedSurrogate, .invalidEscape, .controlCharacter, .unterminatedString, .invalidUTF8,
        ]
    }
}
