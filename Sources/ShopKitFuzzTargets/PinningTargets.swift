import ShopKitPinning

/// Pins, pins files and host patterns: pure Swift parsers of configuration that may come from a file.
enum PinningTargets {
    /// A pin that parses prints in its canonical form, which parses back to the same pin.
    static func spkiPin(_ bytes: [UInt8]) {
        guard let pin = try? SPKIPin(String(fuzzInput: bytes)) else { return }
        FuzzCheck.require(pin.description.hasPrefix("sha256/"), "canonical form \(pin) lacks its prefix")
        FuzzCheck.require((try? SPKIPin(pin.description)) == pin, "canonical form \(pin) does not parse back")
    }

    /// Every entry of a pins file that parses is a canonical pin from a line that exists; `parse` agrees.
    static func pinsFile(_ bytes: [UInt8]) {
        let text = String(fuzzInput: bytes)
        let entries: [PinsFile.Entry]
        do { entries = try PinsFile.entries(text) } catch {
            FuzzCheck.require((try? PinsFile.parse(text)) == nil, "parse accepts what entries refuses")
            _ = error.description
            return
        }
        FuzzCheck.require(!entries.isEmpty, "a pins file with no pin was accepted")
        FuzzCheck.require((try? PinsFile.parse(text)) == entries.map(\.pin), "parse disagrees with entries")
        var lastLine = 0
        for entry in entries {
            FuzzCheck.require(entry.line > lastLine, "entries out of line order")
            lastLine = entry.line
            FuzzCheck.require((try? SPKIPin(entry.pin.description)) == entry.pin, "entry pin is not canonical")
        }
    }

    /// Input: `PATTERN\nHOST`. A pattern that parses is normalised (parsing its form again gives the same
    /// pattern), matches its own name when exact, and matching any host neither crashes nor hangs.
    static func hostPattern(_ bytes: [UInt8]) {
        let text = String(fuzzInput: bytes)
        let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let host = parts.count > 1 ? String(parts[1]) : ""
        let pattern: HostPattern
        do { pattern = try HostPattern(String(parts[0])) } catch {
            _ = error.description
            return
        }
        FuzzCheck.require((try? HostPattern(pattern.description)) == pattern, "normalised form does not parse back")
        FuzzCheck.require(pattern.description == pattern.description.lowercased(), "pattern not lowercased")
        switch pattern.kind {
        case .exact, .ipAddress:
            FuzzCheck.require(pattern.matches(pattern.description), "exact pattern does not match its own name")
        case .anyLabels:
            FuzzCheck.require(
                pattern.matches(String(pattern.description.dropFirst(3))), "**. pattern does not match its base")
        case .oneLabel:
            FuzzCheck.require(
                !pattern.matches(String(pattern.description.dropFirst(2))), "*. pattern matches its bare base")
        }
        _ = pattern.matches(host)
        _ = pattern.specificity
    }
}
