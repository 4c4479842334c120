import Foundation
import ShopKitPinning

/// A CT log list (Chrome's v3 JSON) through `CTLogList(json:)`, as `pin-check log-list` and apps read it.
enum CTLogListTarget {
    static func run(_ bytes: [UInt8]) {
        guard let list = try? CTLogList(json: Data(bytes)) else { return }
        // Every log is found by its id, and each log's operator at any time is one the list names for it.
        for entry in list.operators {
            FuzzCheck.require(!entry.name.isEmpty, "an operator without a name was read")
            for log in entry.logs {
                FuzzCheck.require(list.log(id: log.logID) == log, "a log is not found by its own id")
                FuzzCheck.require(log.logID.count == 32, "a log id that is not 32 bytes was read")
                FuzzCheck.require(log.operatorName == entry.name, "a log read under another operator")
                let names = Set(log.previousOperators.map(\.name) + [entry.name])
                for date in [Date.distantPast, log.previousOperators.first?.end ?? .distantPast, Date.distantFuture] {
                    FuzzCheck.require(names.contains(log.operatorName(at: date)), "an SCT's operator the list never names")
                }
                if let interval = log.temporalInterval {
                    FuzzCheck.require(interval.start < interval.end, "a temporal interval that holds nothing")
                }
            }
        }
        // The same list published in a signed document is read alike: one list, one reading, whichever way it came
        // (a list nested as deep as the reader allows once failed here as a document).
        let issuedAt = (list.timestamp.timeIntervalSince1970 + 1).rounded(.up)
        guard issuedAt < 253_402_128_000 else { return }  // 9999-12-30: a document's dates must be writable
        let json: String
        do {
            json = try CTLogListDocument.json(
                version: 1, issuedAt: Date(timeIntervalSince1970: issuedAt),
                expiresAt: Date(timeIntervalSince1970: issuedAt + 86_400), audience: "fuzz", logList: Data(bytes))
        } catch {
            FuzzCheck.require(false, "a list the reader took cannot be put in a document: \(error)")
            return
        }
        do {
            let document = try CTLogListDocument(json: Array(json.utf8))
            FuzzCheck.require(document.logList == list, "the list in a document reads as another list")
        } catch {
            FuzzCheck.require(false, "a list the reader took is refused in a document: \(error)")
        }
    }
}
