/// Why a signed CT log-list document (``CTLogListDocument``) was refused. A refused document never changes the log
/// list in force.
///
/// The refusals are those of pin-set documents, checked by the same code: switch on ``reason``. Only the message
/// differs: it names the CT log-list document, so an app printing the error (`"\(error)"`) is told which document
/// was refused, and, as for pin-set documents, whose input is at fault (the publisher's document or signature).
public struct CTLogListDocumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What refused the document: ``PinSetDocumentError/wrongLogListType(_:)`` for a token of another `typ` (a
    /// pin-set document among them), ``PinSetDocumentError/malformedLogListDocument(_:)`` for a payload that is not
    /// a valid log-list document, and the cases both kinds share (the JWS, the key, the signature, the audience,
    /// the version, the validity).
    public let reason: PinSetDocumentError

    /// The refusal of a log-list document for `reason`.
    public init(reason: PinSetDocumentError) {
        self.reason = reason
    }

    /// One line of printable text naming the CT log-list document (control characters written as `\u{1B}` escapes,
    /// as ``PinSetDocumentError/description`` writes them).
    public var description: String { reason.description(document: "CT log-list document") }
}
