/// Text from a document, a log list or a peer, made safe to print on one line of a terminal or a log: every
/// scalar that a terminal acts on or that breaks or reorders a line (controls such as ESC and NEL, format
/// characters such as U+202E RIGHT-TO-LEFT OVERRIDE, U+2028 LINE SEPARATOR and U+2029) is written as a `\u{202E}`
/// escape; everything else stays as it is.
package func printableOnOneLine(_ text: String) -> String {
    var printable = ""
    for scalar in text.unicodeScalars {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator:
            printable += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        default:
            printable.unicodeScalars.append(scalar)
        }
    }
    return printable
}
