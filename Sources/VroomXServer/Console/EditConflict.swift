import Foundation

/// An edit form refused because someone else saved the record first. The
/// form carries the values it was filled with (hidden `was_` fields), so the
/// refusal can tell this dispatcher's changes from the other one's: the form
/// shows the record as saved now, and next to each field this dispatcher
/// changed, what they typed.
struct EditConflict {
    /// The form's fields, with the names the dispatcher reads.
    let fields: [(field: String, label: String)]
    /// True when an empty field means "keep the saved value" rather than "clear it".
    var emptyKeepsSaved = false

    /// The values the form was filled with, as it sent them back.
    func originals(_ form: ConsoleForm) -> [String: String] {
        Dictionary(uniqueKeysWithValues: fields.map { ($0.field, form["was_" + $0.field]) })
    }

    /// Hidden inputs that carry `originals` through the form.
    func hiddenFields(_ originals: [String: String]) -> [HiddenField] {
        fields.map { HiddenField(name: "was_" + $0.field, value: originals[$0.field] ?? "") }
    }

    /// The refusal: a notice (under `base_version`) and a note next to each field this dispatcher changed.
    func errors(record: String, typed: [String: String], originals: [String: String], saved: [String: String]) -> FieldErrors {
        var errors = FieldErrors()
        var changed: [String] = []
        for (field, label) in fields {
            let mine = (typed[field] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if emptyKeepsSaved, mine.isEmpty { continue }
            guard mine != (originals[field] ?? ""), mine != (saved[field] ?? "") else { continue }
            errors.add(field, mine.isEmpty ? "Not saved: you cleared this field." : "Not saved: you typed “\(mine)”.")
            changed.append(label)
        }
        errors.add("base_version", "Someone else changed this \(record) while you were editing, so nothing was saved. "
                   + "The form now shows the \(record) as it is"
                   + (changed.isEmpty ? "." : "; your changes to \(changed.joined(separator: ", ")) are marked below: make them again if they still apply."))
        return errors
    }
}

/// A form's hidden input.
struct HiddenField: ConsoleView {
    let name: String
    let value: String
}
