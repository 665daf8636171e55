import Crypto

/// SHA-256 of byte collections (content hashes, model identities, migration checksums), computed
/// by swift-crypto.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = Crypto.SHA256()
        if bytes.withContiguousStorageIfAvailable({ hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }) == nil {
            hasher.update(data: Array(bytes))
        }
        return Array(hasher.finalize())
    }

    /// The digest of `bytes` as lowercase hexadecimal.
    public static func hex<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        digest(bytes).map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }
}
