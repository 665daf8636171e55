import Foundation

/// NumPy's .npy format (version 1 to 3) for float32 tensors: the plain way to move tensors
/// between Kiroku and any other runtime.
public enum NumpyFile {
    private static let magic: [UInt8] = [0x93] + Array("NUMPY".utf8)

    /// Reads a little-endian float32, C-order .npy file.
    public static func read(_ bytes: [UInt8]) throws(InferenceError) -> Tensor {
        guard bytes.count >= 10, Array(bytes[0..<6]) == magic else {
            throw InferenceError(.invalidTensorFile, "not a .npy file (no \\x93NUMPY magic)")
        }
        let major = bytes[6]
        let headerLengthSize = major == 1 ? 2 : 4
        guard major >= 1 && major <= 3, bytes.count >= 8 + headerLengthSize else {
            throw InferenceError(.invalidTensorFile, ".npy version \(major) is not supported")
        }
        let headerLength = bytes[8..<(8 + headerLengthSize)].reversed().reduce(0) { $0 << 8 | Int($1) }
        let headerStart = 8 + headerLengthSize
        guard bytes.count >= headerStart + headerLength else {
            throw InferenceError(.invalidTensorFile, "truncated .npy header")
        }
        let header = String(decoding: bytes[headerStart..<(headerStart + headerLength)], as: UTF8.self)
        guard let descr = field("descr", in: header), descr == "'<f4'" || descr == "'float32'" else {
            throw InferenceError(.invalidTensorFile, "the tensor is \(field("descr", in: header) ?? "of unknown type"), not float32 ('<f4')")
        }
        guard field("fortran_order", in: header) == "False" else {
            throw InferenceError(.invalidTensorFile, "Fortran-order arrays are not supported; save a C-order array")
        }
        guard let shapeText = field("shape", in: header) else {
            throw InferenceError(.invalidTensorFile, "the .npy header has no shape")
        }
        let shape = try shapeText.trimmingCharacters(in: CharacterSet(charactersIn: "() "))
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .map { text throws(InferenceError) -> Int in
                guard let value = Int(text), value >= 0 else { throw InferenceError(.invalidTensorFile, "bad dimension '\(text)' in .npy shape") }
                return value
            }
        guard let count = ShapeMath.count(shape) else {
            throw InferenceError(.invalidTensorFile, "the .npy shape \(shape) is too large")
        }
        let dataStart = headerStart + headerLength
        guard bytes.count - dataStart == count * 4 else {
            throw InferenceError(.invalidTensorFile, "the .npy data holds \(bytes.count - dataStart) bytes; shape \(shape) needs \(count * 4)")
        }
        var data = [Float](repeating: 0, count: count)
        data.withUnsafeMutableBytes { destination in
            bytes.withUnsafeBytes { source in
                destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[dataStart...]))
            }
        }
        return Tensor(shape: shape, data: data.map { Float(bitPattern: UInt32(littleEndian: $0.bitPattern)) })
    }

    /// Writes a tensor as a version 1.0 .npy file.
    public static func write(_ tensor: Tensor) -> [UInt8] {
        let shapeText = tensor.shape.count == 1 ? "(\(tensor.shape[0]),)" : "(" + tensor.shape.map(String.init).joined(separator: ", ") + ")"
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': \(shapeText), }"
        let unpadded = 10 + header.utf8.count + 1
        header += String(repeating: " ", count: (64 - unpadded % 64) % 64) + "\n"
        let length = UInt16(header.utf8.count)
        var bytes = magic + [1, 0, UInt8(length & 0xFF), UInt8(length >> 8)] + Array(header.utf8)
        bytes += tensor.data.map { $0.bitPattern.littleEndian }.withUnsafeBytes(Array.init)
        return bytes
    }

    private static func field(_ name: String, in header: String) -> String? {
        guard let range = header.range(of: "'\(name)':") else { return nil }
        let rest = header[range.upperBound...].drop { $0 == " " }
        if rest.first == "(" {
            guard let close = rest.firstIndex(of: ")") else { return nil }
            return String(rest[...close])
        }
        return String(rest.prefix { $0 != "," && $0 != "}" }).trimmingCharacters(in: .whitespaces)
    }
}
