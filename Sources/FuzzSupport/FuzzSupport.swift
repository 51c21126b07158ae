// What the fuzz targets share: libFuzzer's driver (a `-DFUZZING` build) and the corpus replayer (a plain build).
// Each target keeps its own `LLVMFuzzerTestOneInput` and `<module>_main` symbols, which must live in its executable.
import Foundation

#if FUZZING
    /// libFuzzer's driver (`int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*)(const uint8_t *, size_t))`).
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// Hands the process to libFuzzer's driver, which calls `testOneInput` for every input it generates. SwiftPM
    /// links executables on Linux with `main` aliased to `<module>_main`; a target's `<module>_main` calls this.
    public func runLibFuzzer(
        _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
        _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt {
        var count = argc
        var arguments = argv
        return runFuzzerDriver(&count, &arguments, testOneInput)
    }
#endif

/// The corpus replayer of a plain build: runs each input through the target's harness.
public enum FuzzCorpus {
    /// The files the arguments name: a file as is, a folder's entries sorted by name.
    public static func files(_ arguments: some Sequence<String>) -> [URL] {
        var files: [URL] = []
        for argument in arguments {
            let url = URL(fileURLWithPath: argument)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
                files += names.sorted().map { url.appendingPathComponent($0) }
            } else {
                files.append(url)
            }
        }
        return files
    }

    /// Runs every file through `run` (a finding, or nil), prints each finding and a count, then exits: 1 if any
    /// input is a finding, 66 if one cannot be read, 0 otherwise.
    public static func replay(_ files: [URL], _ run: (URL, Data) -> String?) -> Never {
        var findings = 0
        for file in files {
            guard let data = FileManager.default.contents(atPath: file.path) else {
                FileHandle.standardError.write(Data("cannot read \(file.path)\n".utf8))
                exit(66)
            }
            if let finding = run(file, data) {
                findings += 1
                print("\(file.lastPathComponent): \(finding)")
            }
        }
        print("replayed \(files.count) input(s), \(findings) finding(s)")
        exit(findings == 0 ? 0 : 1)
    }

    /// Prints `usage` on standard error and exits 64.
    public static func usage(_ usage: String) -> Never {
        FileHandle.standardError.write(Data("usage: \(usage)\n".utf8))
        exit(64)
    }
}
