import Foundations

/// Why bytes are not JSON (RFC 8259) within a reader's ``JSONLimits``: a stable ``code`` and the byte ``offset``
/// where reading stopped. Two errors are equal when their codes are.
public struct JSONGrammarError: CodedError {
    /// The stable identifier of a kind of failure.
    public struct Code: ErrorCode {
        public typealias Owner = JSONGrammarError
        /// The code as a string, e.g. `"unexpectedEnd"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The text ends inside a value.
        public static let unexpectedEnd = Code("unexpectedEnd")
        /// Something other than whitespace follows the value.
        public static let trailingCharacters = Code("trailingCharacters")
        /// A value is nested deeper than ``JSONLimits/maximumDepth``.
        public static let tooDeep = Code("tooDeep")
        /// The text is longer than ``JSONLimits/maximumBytes``.
        public static let tooLarge = Code("tooLarge")
        /// An object has no `"` where a member name must start.
        public static let expectedMemberName = Code("expectedMemberName")
        /// A member name is not followed by `:`.
        public static let expectedColon = Code("expectedColon")
        /// A member is followed by neither `,` nor `}`.
        public static let expectedCommaOrBrace = Code("expectedCommaOrBrace")
        /// An element is followed by neither `,` nor `]`.
        public static let expectedCommaOrBracket = Code("expectedCommaOrBracket")
        /// An object has more than ``JSONLimits/maximumMembers`` members.
        public static let tooManyMembers = Code("tooManyMembers")
        /// An object names a member twice (only with ``JSONLimits/rejectsDuplicateNames``).
        public static let duplicateMemberName = Code("duplicateMemberName")
        /// `t`, `f` or `n` that does not spell `true`, `false` or `null`.
        public static let invalidLiteral = Code("invalidLiteral")
        /// A byte that starts no value (a number without integer digits included).
        public static let invalidValue = Code("invalidValue")
        /// A number's integer part has a leading zero (`01`).
        public static let leadingZero = Code("leadingZero")
        /// A fraction or exponent without digits (`1.`, `1e+`).
        public static let invalidNumber = Code("invalidNumber")
        /// A number longer than ``JSONLimits/maximumNumberLength`` bytes.
        public static let numberTooLong = Code("numberTooLong")
        /// `\u` with fewer than four bytes left.
        public static let truncatedEscape = Code("truncatedEscape")
        /// `\u` not followed by four hexadecimal digits.
        public static let invalidUnicodeEscape = Code("invalidUnicodeEscape")
        /// A `\u` surrogate escape without its other half (a lone high or low surrogate).
        public static let unpairedSurrogate = Code("unpairedSurrogate")
        /// A backslash followed by a character that is not an escape.
        public static let invalidEscape = Code("invalidEscape")
        /// A byte below 0x20 inside a string.
        public static let controlCharacter = Code("controlCharacter")
        /// A string without its closing quote.
        public static let unterminatedString = Code("unterminatedString")
        /// Bytes inside a string that are not UTF-8 (overlong forms, surrogates, past U+10FFFF, truncated), with
        /// ``JSONLimits/validatesUTF8``.
        public static let invalidUTF8 = Code("invalidUTF8")

        /// Every code, for documentation and tests.
        public static let all: [Code] = [
            .unexpectedEnd, .trailingCharacters, .tooDeep, .tooLarge, .expectedMemberName, .expectedColon,
            .expectedCommaOrBrace, .expectedCommaOrBracket, .tooManyMembers, .duplicateMemberName, .invalidLiteral,
            .invalidValue, .leadingZero, .invalidNumber, .numberTooLong, .truncatedEscape, .invalidUnicodeEscape,
            .unpairedSurrogate, .invalidEscape, .controlCharacter, .unterminatedString, .invalidUTF8,
        ]
    }

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
