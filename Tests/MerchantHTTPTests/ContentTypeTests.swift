import Testing

@testable import MerchantHTTP

@Suite("RequireJSONContentType: which Content-Type values are JSON")
struct ContentTypeTests {
    @Test("application/json in any case, with parameters and optional whitespace")
    func accepted() {
        for value in [
            "application/json", "Application/JSON", "APPLICATION/JSON", "application/json; charset=utf-8",
            "application/json;charset=UTF-8", " application/json ", "\tapplication/json\t; q=1", "application/json;",
        ] {
            #expect(RequireJSONContentType.isJSON(value), "\(value)")
        }
    }

    @Test("anything else is not JSON, a look-alike or a longer or shorter type included")
    func refused() {
        for value in [
            nil, "", ";", "text/plain", "application/jsonp", "application/jso", "application/json+ld",
            "application/x-www-form-urlencoded", "application /json", "application\\json", "applicationXjson",
            "application/json\u{00A0}", "\u{00A0}application/json", "multipart/form-data; boundary=application/json",
            "appl\u{0}cation/json", "APPLICATION/JSON\u{7F}",
        ] {
            #expect(!RequireJSONContentType.isJSON(value), "\(value ?? "nil")")
        }
    }
}
