internal import CSQLite
import Foundation

/// A VFS over SQLite's default one that gathers what a commit appends to a WAL file into one `pwrite`.
///
/// SQLite writes each frame of a commit as two writes: its 24-byte header, then the page. A group commit of 28 pages
/// was 56 system calls, each 4 KiB copy straddling two pages of the operating system's cache: 21.5 `pwrite` calls a
/// payment, 2.7 once gathered (docs/PERFORMANCE.md). Appends to a WAL file are kept in a buffer while they follow
/// one another, and written out:
/// - as soon as the buffer ends with a commit frame (a frame header whose "database size after commit" is not zero:
///   [the WAL format](https://www.sqlite.org/fileformat2.html#walformat)), before SQLite publishes the commit in the
///   WAL index where readers look: a reader never learns of a frame that is not in the file;
/// - before any other use of the file (read, sync, size, truncate, file control, close), and when a write does not
///   follow the buffered ones or does not fit.
///
/// A write that fails in the flush is reported by the write that called it (the commit frame's own, at the latest),
/// so a commit whose frames did not all reach the file fails as SQLite expects. Every other file is the default
/// VFS's, unchanged.
enum WALWriteGathering {
    /// The name connections open with (`sqlite3_open_v2`'s `zVfs`).
    static let name = "applepay-gathered-wal"

    /// Registers the VFS once (not as the default) and answers its name; `nil` when the default VFS is missing.
    static let registeredName: String? = {
        guard let base = sqlite3_vfs_find(nil) else { return nil }
        baseVFS = base
        let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)  // lives as long as the process
        vfs.initialize(to: base.pointee)
        vfs.pointee.szOsFile = Int32(headerSize) + base.pointee.szOsFile
        vfs.pointee.zName = UnsafePointer(strdup(name))
        vfs.pointee.pNext = nil
        vfs.pointee.xOpen = open
        guard sqlite3_vfs_register(vfs, 0) == SQLITE_OK else { return nil }
        return name
    }()

    /// How many writes `file` (a WAL file opened through this VFS) received and how many reached the default VFS;
    /// `nil` for any other file.
    static func counts(of file: UnsafeMutablePointer<sqlite3_file>) -> (received: Int, written: Int)? {
        guard file.pointee.pMethods == UnsafePointer(walMethods),
            let buffer = header(file).pointee.buffer?.takeUnretainedValue()
        else { return nil }
        return (buffer.received, buffer.written)
    }

    nonisolated(unsafe) private static var baseVFS: UnsafeMutablePointer<sqlite3_vfs>!

    /// Our part of each file: the `sqlite3_file` SQLite sees, then the buffer (WAL files only); the default VFS's
    /// file follows.
    private struct Header {
        var file: sqlite3_file
        var buffer: Unmanaged<Buffer>?
    }

    private static let headerSize = (MemoryLayout<Header>.stride + 15) & ~15

    private static func header(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<Header> {
        UnsafeMutableRawPointer(file).assumingMemoryBound(to: Header.self)
    }

    private static func inner(_ file: UnsafeMutablePointer<sqlite3_file>?) -> UnsafeMutablePointer<sqlite3_file> {
        (UnsafeMutableRawPointer(file!) + headerSize).assumingMemoryBound(to: sqlite3_file.self)
    }

    private static func methods(_ file: UnsafeMutablePointer<sqlite3_file>) -> sqlite3_io_methods {
        file.pointee.pMethods.pointee
    }

    /// The appends waiting to be written, contiguous from `offset`.
    private final class Buffer {
        static let capacity = 1 << 20
        /// Allocated at the first append: readers open the WAL too, and never write it.
        private(set) lazy var bytes = UnsafeMutableRawPointer.allocate(byteCount: Buffer.capacity, alignment: 16)
        private var allocated = false
        var offset: Int64 = 0
        var count = 0
        /// The WAL's page size, from its header (written or read at offset 0); 0 until known: nothing is gathered
        /// before it is known.
        var pageSize = 0
        /// Writes received, and writes made to the default VFS's file (for tests).
        var received = 0
        var written = 0

        deinit { if allocated { bytes.deallocate() } }

        /// Appends `size` bytes at the end of the buffer.
        func append(_ data: UnsafeRawPointer, _ size: Int) {
            allocated = true
            (bytes + count).copyMemory(from: data, byteCount: size)
            count += size
        }

        var frameSize: Int { 24 + pageSize }

        /// Whether the buffered bytes end with a whole commit frame.
        var endsWithCommit: Bool {
            guard pageSize > 0, count >= frameSize else { return false }
            let end = offset + Int64(count)
            guard end >= 32 + Int64(frameSize), (end - 32) % Int64(frameSize) == 0 else { return false }
            let frame = bytes + (count - frameSize)
            return frame.loadUnaligned(fromByteOffset: 4, as: UInt32.self) != 0  // big-endian: nonzero either way
        }

        /// Learns the page size from the WAL header when `data` covers it.
        func notice(header data: UnsafeRawPointer, count: Int, at position: Int64) {
            guard position == 0, count >= 32 else { return }
            let size = Int(UInt32(bigEndian: data.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
            pageSize = size >= 512 && size <= 65536 && size & (size - 1) == 0 ? size : 0
        }
    }

    /// Writes out the buffered bytes, at most ``chunk`` a call: the default VFS writes a count modulo 128 KiB
    /// (`seekAndWrite` masks it with `0x1ffff`), so a larger write would come out short and fail as "disk full".
    private static func flush(_ file: UnsafeMutablePointer<sqlite3_file>) -> Int32 {
        guard let buffer = header(file).pointee.buffer?.takeUnretainedValue(), buffer.count > 0 else {
            return SQLITE_OK
        }
        let real = inner(file)
        var done = 0
        var status = SQLITE_OK
        while done < buffer.count && status == SQLITE_OK {
            let size = min(chunk, buffer.count - done)
            status = methods(real).xWrite(real, buffer.bytes + done, Int32(size), buffer.offset + Int64(done))
            buffer.written += 1
            done += size
        }
        buffer.count = 0
        return status
    }

    /// The most one write to the default VFS carries (31 pages of 4 KiB with their frame headers, and more).
    private static let chunk = 0x1F000

    private static let open:
        @convention(c) (
            UnsafeMutablePointer<sqlite3_vfs>?, UnsafePointer<CChar>?, UnsafeMutablePointer<sqlite3_file>?, Int32,
            UnsafeMutablePointer<Int32>?
        ) -> Int32 = { _, name, file, flags, outFlags in
            guard let file else { return SQLITE_MISUSE }
            let real = inner(file)
            header(file).initialize(to: Header(file: sqlite3_file(pMethods: nil), buffer: nil))
            real.pointee.pMethods = nil
            let status = baseVFS.pointee.xOpen(baseVFS, name, real, flags, outFlags)
            guard real.pointee.pMethods != nil else { return status }
            guard status == SQLITE_OK else {
                _ = methods(real).xClose(real)
                return status
            }
            if flags & SQLITE_OPEN_WAL != 0 {
                header(file).pointee.buffer = Unmanaged.passRetained(Buffer())
                header(file).pointee.file.pMethods = UnsafePointer(walMethods)
            } else {
                header(file).pointee.file.pMethods = UnsafePointer(plainMethods)
            }
            return SQLITE_OK
        }

    /// The default VFS's methods, called on its file: every file but WAL files.
    /// Written once, here, and only read after.
    nonisolated(unsafe) private static let plainMethods: UnsafeMutablePointer<sqlite3_io_methods> = {
        let table = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        table.initialize(to: forwarding)
        return table
    }()

    /// The WAL files' methods: writes gathered, every other call made after a flush.
    nonisolated(unsafe) private static let walMethods: UnsafeMutablePointer<sqlite3_io_methods> = {
        let table = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        var methods = forwarding
        methods.xClose = { file in
            let flushed = flush(file!)
            let real = inner(file)
            let closed = WALWriteGathering.methods(real).xClose(real)
            header(file!).pointee.buffer?.release()
            header(file!).pointee.buffer = nil
            return flushed != SQLITE_OK ? flushed : closed
        }
        methods.xRead = { file, data, count, position in
            let flushed = flush(file!)
            guard flushed == SQLITE_OK else { return flushed }
            let real = inner(file)
            let status = WALWriteGathering.methods(real).xRead(real, data, count, position)
            if status == SQLITE_OK, let data {
                header(file!).pointee.buffer?.takeUnretainedValue().notice(
                    header: data, count: Int(count), at: position)
            }
            return status
        }
        methods.xWrite = { file, data, count, position in
            guard let file, let data, let buffer = header(file).pointee.buffer?.takeUnretainedValue() else {
                return SQLITE_MISUSE
            }
            buffer.received += 1
            buffer.notice(header: data, count: Int(count), at: position)
            let size = Int(count)
            let follows = buffer.count > 0 && position == buffer.offset + Int64(buffer.count)
            if !follows || buffer.count + size > Buffer.capacity {
                let flushed = flush(file)
                guard flushed == SQLITE_OK else { return flushed }
            }
            guard buffer.pageSize > 0, size <= chunk else {
                let real = inner(file)
                buffer.written += 1
                return WALWriteGathering.methods(real).xWrite(real, data, count, position)
            }
            if buffer.count == 0 { buffer.offset = position }
            buffer.append(data, size)
            return buffer.endsWithCommit ? flush(file) : SQLITE_OK
        }
        methods.xTruncate = { file, size in
            let flushed = flush(file!)
            guard flushed == SQLITE_OK else { return flushed }
            let real = inner(file)
            return WALWriteGathering.methods(real).xTruncate(real, size)
        }
        methods.xSync = { file, flags in
            let flushed = flush(file!)
            guard flushed == SQLITE_OK else { return flushed }
            let real = inner(file)
            return WALWriteGathering.methods(real).xSync(real, flags)
        }
        methods.xFileSize = { file, size in
            let flushed = flush(file!)
            guard flushed == SQLITE_OK else { return flushed }
            let real = inner(file)
            return WALWriteGathering.methods(real).xFileSize(real, size)
        }
        methods.xFileControl = { file, operation, argument in
            let flushed = flush(file!)
            guard flushed == SQLITE_OK else { return flushed }
            let real = inner(file)
            return WALWriteGathering.methods(real).xFileControl(real, operation, argument)
        }
        table.initialize(to: methods)
        return table
    }()

    /// Every method passed through to the default VFS's file (version 3: shared memory and memory-mapped reads
    /// included, when that file has them).
    private static let forwarding: sqlite3_io_methods = {
        sqlite3_io_methods(
            iVersion: 3,
            xClose: { file in
                let real = inner(file)
                return methods(real).xClose(real)
            },
            xRead: { file, data, count, position in
                let real = inner(file)
                return methods(real).xRead(real, data, count, position)
            },
            xWrite: { file, data, count, position in
                let real = inner(file)
                return methods(real).xWrite(real, data, count, position)
            },
            xTruncate: { file, size in
                let real = inner(file)
                return methods(real).xTruncate(real, size)
            },
            xSync: { file, flags in
                let real = inner(file)
                return methods(real).xSync(real, flags)
            },
            xFileSize: { file, size in
                let real = inner(file)
                return methods(real).xFileSize(real, size)
            },
            xLock: { file, lock in
                let real = inner(file)
                return methods(real).xLock(real, lock)
            },
            xUnlock: { file, lock in
                let real = inner(file)
                return methods(real).xUnlock(real, lock)
            },
            xCheckReservedLock: { file, result in
                let real = inner(file)
                return methods(real).xCheckReservedLock(real, result)
            },
            xFileControl: { file, operation, argument in
                let real = inner(file)
                return methods(real).xFileControl(real, operation, argument)
            },
            xSectorSize: { file in
                let real = inner(file)
                return methods(real).xSectorSize(real)
            },
            xDeviceCharacteristics: { file in
                let real = inner(file)
                return methods(real).xDeviceCharacteristics(real)
            },
            xShmMap: { file, region, size, extend, pointer in
                let real = inner(file)
                guard methods(real).iVersion >= 2, let map = methods(real).xShmMap else { return SQLITE_IOERR }
                return map(real, region, size, extend, pointer)
            },
            xShmLock: { file, offset, count, flags in
                let real = inner(file)
                guard methods(real).iVersion >= 2, let lock = methods(real).xShmLock else { return SQLITE_IOERR }
                return lock(real, offset, count, flags)
            },
            xShmBarrier: { file in
                let real = inner(file)
                guard methods(real).iVersion >= 2, let barrier = methods(real).xShmBarrier else { return }
                barrier(real)
            },
            xShmUnmap: { file, delete in
                let real = inner(file)
                guard methods(real).iVersion >= 2, let unmap = methods(real).xShmUnmap else { return SQLITE_OK }
                return unmap(real, delete)
            },
            xFetch: { file, position, count, pointer in
                let real = inner(file)
                guard methods(real).iVersion >= 3, let fetch = methods(real).xFetch else {
                    pointer?.pointee = nil
                    return SQLITE_OK
                }
                return fetch(real, position, count, pointer)
            },
            xUnfetch: { file, position, pointer in
                let real = inner(file)
                guard methods(real).iVersion >= 3, let unfetch = methods(real).xUnfetch else { return SQLITE_OK }
                return unfetch(real, position, pointer)
            })
    }()
}
