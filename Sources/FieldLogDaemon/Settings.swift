// Public: a conformance is as visible as its type and protocol, and Logger.Level and ExpressibleByArgument are
// public (the retroactive conformance below).
public import ArgumentParser
import Logging

/// A group of options read back as fieldlog.conf's entries: each option's long name (its property's name, as
/// argument-parser spells it: `maxEph` is `--max-eph`) and its value as the file writes it, in the order they
/// are declared, an option group's in its place. Flags and plain properties are no settings.
extension ParsableArguments {
    package var settingEntries: [(key: String, value: String?)] {
        Mirror(reflecting: self).children.flatMap { child -> [(key: String, value: String?)] in
            switch child.value {
            case let option as any SettingOption:
                return [(Self.optionName(child.label ?? ""), option.settingText)]
            case let group as any SettingGroup:
                return group.settingEntries
            default:
                return []
            }
        }
    }

    /// `_maxEph` (a property wrapper's storage) as `max-eph`.
    private static func optionName(_ label: String) -> String {
        var name = ""
        for character in label.drop(while: { $0 == "_" }) {
            if character.isUppercase {
                name += "-" + character.lowercased()
            } else {
                name.append(character)
            }
        }
        return name
    }
}

/// A value as fieldlog.conf writes it; nil for none.
package protocol SettingText {
    var settingText: String? { get }
}

extension String: SettingText {
    package var settingText: String? { self }
}

extension Int: SettingText {
    package var settingText: String? { "\(self)" }
}

extension Double: SettingText {
    package var settingText: String? { "\(self)" }
}

extension HostAndPort: SettingText {
    package var settingText: String? { description }
}

extension Logger.Level: SettingText {
    package var settingText: String? { "\(self)" }
}

extension Optional: SettingText where Wrapped: SettingText {
    package var settingText: String? { self?.settingText ?? nil }
}

/// Values given one option each (`--share A --share B`) are one line of the file, separated by spaces.
extension Array: SettingText where Element == String {
    package var settingText: String? {
        let words = flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }) }
        return words.isEmpty ? nil : words.joined(separator: " ")
    }
}

private protocol SettingOption {
    var settingText: String? { get }
}

extension Option: SettingOption where Value: SettingText {
    fileprivate var settingText: String? { wrappedValue.settingText }
}

private protocol SettingGroup {
    var settingEntries: [(key: String, value: String?)] { get }
}

extension OptionGroup: SettingGroup {
    fileprivate var settingEntries: [(key: String, value: String?)] { wrappedValue.settingEntries }
}

extension HostAndPort: ExpressibleByArgument {
    package init?(argument: String) {
        self.init(argument)
    }

    package var defaultValueDescription: String { description }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
