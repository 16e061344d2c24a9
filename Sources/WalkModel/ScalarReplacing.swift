extension StringProtocol {
    /// Every occurrence of `target` replaced, matched by Unicode scalars: matching by Characters would miss
    /// the "\r" of "\r\n", or a key that a combining mark follows.
    package func replacingScalars(_ target: String, with replacement: String) -> String {
        String(
            String.UnicodeScalarView(unicodeScalars).replacing(target.unicodeScalars, with: replacement.unicodeScalars))
    }
}
