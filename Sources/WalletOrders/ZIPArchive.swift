import Foundation

/// A minimal ZIP archive (PKWARE APPNOTE 6.3): stored (uncompressed) entries with CRC-32, enough for Wallet order
/// packages. Reading accepts only stored entries and checks each CRC-32.
public enum ZIPArchive {
    /// Why an archive could not be read.
    public struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Writes `entries` (path, bytes) in order, with a fixed modification time (1980-01-01) so the same files
    /// give the same bytes.
    public static func make(_ entries: [(path: String, data: Data)]) -> Data {
        var output = Data()
        var central = Data()
        for entry in entries {
            let name = Data(entry.path.utf8)
            let crc = CRC32.checksum(entry.data)
            let offset = UInt32(output.count)
            output.append(le32(0x0403_4b50))
            output.append(le16(20))  // version needed
            output.append(le16(0x0800))  // UTF-8 names
            output.append(le16(0))  // stored
            output.append(le16(0))  // time
            output.append(le16(0x21))  // date: 1980-01-01
            output.append(le32(crc))
            output.append(le32(UInt32(entry.data.count)))
            output.append(le32(UInt32(entry.data.count)))
            output.append(le16(UInt16(name.count)))
            output.append(le16(0))
            output.append(name)
            output.append(entry.data)

            central.append(le32(0x0201_4b50))
            central.append(le16(20))  // made by
            central.append(le16(20))
            central.append(le16(0x0800))
            central.append(le16(0))
            central.append(le16(0))
            central.append(le16(0x21))
            central.append(le32(crc))
            central.append(le32(UInt32(entry.data.count)))
            central.append(le32(UInt32(entry.data.count)))
            central.append(le16(UInt16(name.count)))
            central.append(le16(0))  // extra
            central.append(le16(0))  // comment
            central.append(le16(0))  // disk
            central.append(le16(0))  // internal attributes
            central.append(le32(0))  // external attributes
            central.append(le32(offset))
            central.append(name)
        }
        let centralOffset = UInt32(output.count)
        output.append(central)
        output.append(le32(0x0605_4b50))
        output.append(le16(0))
        output.append(le16(0))
        output.append(le16(UInt16(entries.count)))
        output.append(le16(UInt16(entries.count)))
        output.append(le32(UInt32(central.count)))
        output.append(le32(centralOffset))
        output.append(le16(0))
        return output
    }

    /// Reads every entry through the central directory.
    /// - Throws: ``ReadError`` for a truncated or malformed archive, a compressed entry, a CRC mismatch, a
    ///   duplicate or unsafe path (absolute, `..`).
    public static func read(_ archive: Data) throws(ReadError) -> [String: Data] {
        let bytes = [UInt8](archive)
        func u16(_ at: Int) throws(ReadError) -> Int {
            guard at >= 0, at + 2 <= bytes.count else { throw ReadError(message: "the archive is truncated") }
            return Int(bytes[at]) | Int(bytes[at + 1]) << 8
        }
        func u32(_ at: Int) throws(ReadError) -> Int {
            let low = try u16(at)
            let high = try u16(at + 2)
            return low | high << 16
        }
        // The end-of-central-directory record: 22 bytes plus a comment of up to 65535.
        var end = -1
        var position = bytes.count - 22
        while position >= max(0, bytes.count - 22 - 65_535) {
            if try u32(position) == 0x0605_4b50 {
                end = position
                break
            }
            position -= 1
        }
        guard end >= 0 else { throw ReadError(message: "not a ZIP archive (no end of central directory)") }
        let count = try u16(end + 10)
        var cursor = try u32(end + 16)
        var files: [String: Data] = [:]
        for _ in 0..<count {
            guard try u32(cursor) == 0x0201_4b50 else { throw ReadError(message: "bad central directory entry") }
            let method = try u16(cursor + 10)
            let crc = UInt32(try u32(cursor + 16))
            let compressed = try u32(cursor + 20)
            let size = try u32(cursor + 24)
            let nameLength = try u16(cursor + 28)
            let extraLength = try u16(cursor + 30)
            let commentLength = try u16(cursor + 32)
            let local = try u32(cursor + 42)
            guard cursor + 46 + nameLength <= bytes.count else { throw ReadError(message: "the archive is truncated") }
            let name = String(decoding: bytes[(cursor + 46)..<(cursor + 46 + nameLength)], as: UTF8.self)
            guard method == 0, compressed == size else {
                throw ReadError(message: "\(name) is compressed (method \(method)); only stored entries are read")
            }
            guard !name.hasPrefix("/"), !name.split(separator: "/").contains(".."), files[name] == nil else {
                throw ReadError(message: "unsafe or duplicate path \(name)")
            }
            guard try u32(local) == 0x0403_4b50 else { throw ReadError(message: "bad local header for \(name)") }
            let nameSize = try u16(local + 26)
            let extraSize = try u16(local + 28)
            let start = local + 30 + nameSize + extraSize
            guard start + size <= bytes.count else { throw ReadError(message: "\(name) is truncated") }
            let data = Data(bytes[start..<(start + size)])
            guard CRC32.checksum(data) == crc else { throw ReadError(message: "\(name) fails its CRC-32") }
            if !name.hasSuffix("/") { files[name] = data }
            cursor += 46 + nameLength + extraLength + commentLength
        }
        return files
    }

    private static func le16(_ value: UInt16) -> Data { Data([UInt8(value & 0xFF), UInt8(value >> 8)]) }
    private static func le32(_ value: UInt32) -> Data {
        Data([UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)])
    }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), as ZIP uses it.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// The checksum of `data` (`"123456789"` → `0xCBF43926`).
    public static func checksum(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
