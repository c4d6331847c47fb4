import Foundation
import VroomXModels

/// The carrier's profile: what its bill of lading and its emails to
/// customers say of it. Dispatch reads and edits it; a carrier that never
/// saved one reads the defaults (version 0).
struct CarrierProfileService: Sendable {
    let store: Store

    func profile(tenant: ID<Tenant>) async throws -> CarrierProfile {
        try await store.read { try await CarrierProfileRepository.find(tenant: tenant, $0) } ?? CarrierProfile()
    }

    /// Changes the fields given; with `base_version`, a profile someone else saved since is a `conflict`.
    func update(_ request: UpdateCarrierProfileRequest, tenant: ID<Tenant>) async throws -> CarrierProfile {
        return try await store.write(tenant: tenant) { tx in
            let current = try await CarrierProfileRepository.find(tenant: tenant, locking: true, tx.db) ?? CarrierProfile()
            if let base = request.baseVersion, !(0...current.version).contains(base) {
                throw AppError.validation("base_version", "base_version is the version the edit started from: 0 to \(current.version).")
            }
            if let base = request.baseVersion, base != current.version {
                throw AppError(409, .conflict, "Someone else changed the carrier's profile since version \(base); it is now version \(current.version).",
                               field: "base_version")
            }
            var edited = try Problems.first { Self.edited(current, by: request, &$0) }
            guard edited != current else { return current }
            edited.version = current.version + 1
            edited.updatedAt = tx.now
            try await CarrierProfileRepository.save(edited, tx)
            return edited
        }
    }

    /// The profile with the edits applied, each refusal kept in `problems`.
    static func edited(_ profile: CarrierProfile, by request: UpdateCarrierProfileRequest, _ problems: inout Problems) -> CarrierProfile {
        var edited = profile
        if let name = request.legalName { edited.legalName = problems.check(name) { try Validate.line(name, FieldLimits.legalName) } }
        if let mc = request.mcNumber {
            edited.mcNumber = problems.check(mc) { try digits(mc, prefix: "MC", field: "mc_number", max: FieldLimits.mcNumberDigits) }
        }
        if let dot = request.dotNumber {
            edited.dotNumber = problems.check(dot) { try digits(dot, prefix: "USDOT", field: "dot_number", max: FieldLimits.dotNumberDigits) }
        }
        if let address = request.address {
            edited.address = problems.check(address) { try Validate.text(address, FieldLimits.carrierAddress) }
        }
        if let phone = request.phone { edited.phone = problems.check(phone) { try Validate.line(phone, FieldLimits.phone) } }
        if let email = request.email {
            edited.email = problems.check(email) {
                let trimmed = email.trimmingCharacters(in: .whitespacesAndNewlines)
                return trimmed.isEmpty ? "" : try Validate.email(trimmed)
            }
        }
        if let terms = request.bolTerms { edited.bolTerms = problems.check(terms) { try Validate.text(terms, FieldLimits.bolTerms) } }
        if let tracking = request.trackingLinkInEmails { edited.trackingLinkInEmails = tracking }
        if let company = request.factoringCompany {
            edited.factoringCompany = problems.check(company) { try Validate.line(company, FieldLimits.factoringCompany) }
        }
        if let remit = request.factoringRemitTo {
            edited.factoringRemitTo = problems.check(remit) { try Validate.text(remit, FieldLimits.factoringRemitTo) }
        }
        if let notice = request.factoringNotice {
            edited.factoringNotice = problems.check(notice) { try Validate.text(notice, FieldLimits.factoringNotice) }
        }
        if let free = request.detentionFreeMinutes {
            edited.detentionFreeMinutes = problems.check(free) { try Validate.number(free, FieldLimits.detentionFreeMinutes, unit: "minutes") }
        }
        if let rate = request.detentionCentsPerHour {
            edited.detentionCentsPerHour = problems.check(rate) { try Validate.number(rate, FieldLimits.detentionCentsPerHour, unit: "cents") }
        }
        if let fee = request.dryRunFeeCents {
            edited.dryRunFeeCents = problems.check(fee) { try Validate.number(fee, FieldLimits.dryRunFeeCents, unit: "cents") }
        }
        if let email = request.alertEmail {
            edited.alertEmail = problems.check(email) {
                let trimmed = email.trimmingCharacters(in: .whitespacesAndNewlines)
                return trimmed.isEmpty ? "" : try Validate.email(trimmed, field: "alert_email")
            }
        }
        if !edited.factoringCompany.isEmpty, edited.factoringRemitTo.isEmpty {
            _ = problems.check("") {
                throw AppError.validation("factoring_remit_to", "Say where customers send payment to \(edited.factoringCompany).")
            }
        }
        return edited
    }

    /// "MC-123456", "mc 123456" or "123456" → "123456"; anything else is refused.
    static func digits(_ raw: String, prefix: String, field: String, max: Int) throws -> String {
        var text = raw.trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
        if text.hasPrefix(prefix) { text = String(text.dropFirst(prefix.count)) }
        if prefix == "USDOT", text.hasPrefix("DOT") { text = String(text.dropFirst(3)) }
        text = text.trimmingCharacters(in: CharacterSet(charactersIn: " -#:"))
        guard text.isEmpty || (text.utf8.count <= max && text.utf8.allSatisfy { (48...57).contains($0) }) else {
            throw AppError.validation(field, "\(field) is up to \(max) digits\(prefix == "MC" ? ", as in MC-123456" : "").")
        }
        return text
    }
}

extension Store {
    /// What the carrier's documents say of it.
    var carrierProfile: CarrierProfileService { CarrierProfileService(store: self) }
}

/// Carrier profiles in the database.
enum CarrierProfileRepository {
    static func find(tenant: ID<Tenant>, locking: Bool = false, _ db: any SQLExecutor) async throws -> CarrierProfile? {
        let lock: SQL = locking ? Store.lockingRows(db) : ""
        return try await db.first("""
            SELECT legal_name, mc_number, dot_number, address, phone, email, bol_terms, tracking_link_in_emails, factoring_company,
                   factoring_remit_to, factoring_notice, detention_free_minutes, detention_cents_per_hour, dry_run_fee_cents,
                   alert_email, version, updated_at
            FROM carrier_profiles WHERE tenant_id = \(tenant)\(lock)
            """).map { row in
            CarrierProfile(legalName: try row.string("legal_name"), mcNumber: try row.string("mc_number"), dotNumber: try row.string("dot_number"),
                           address: try row.string("address"), phone: try row.string("phone"), email: try row.string("email"),
                           bolTerms: try row.string("bol_terms"), trackingLinkInEmails: try row.bool("tracking_link_in_emails"),
                           factoringCompany: try row.string("factoring_company"), factoringRemitTo: try row.string("factoring_remit_to"),
                           factoringNotice: try row.string("factoring_notice"),
                           detentionFreeMinutes: try row.int("detention_free_minutes"),
                           detentionCentsPerHour: try row.int("detention_cents_per_hour"), dryRunFeeCents: try row.int("dry_run_fee_cents"),
                           alertEmail: try row.string("alert_email"),
                           version: try row.int("version"), updatedAt: try row.date("updated_at"))
        }
    }

    static func save(_ profile: CarrierProfile, _ tx: TenantTransaction) async throws {
        let values: SQL = """
            \(profile.legalName), \(profile.mcNumber), \(profile.dotNumber), \(profile.address), \(profile.phone), \(profile.email),
            \(profile.bolTerms), \(profile.trackingLinkInEmails ? 1 : 0), \(profile.factoringCompany), \(profile.factoringRemitTo),
            \(profile.factoringNotice), \(profile.detentionFreeMinutes), \(profile.detentionCentsPerHour), \(profile.dryRunFeeCents),
            \(profile.alertEmail), \(profile.version), \(profile.updatedAt)
            """
        try await tx.execute("""
            INSERT INTO carrier_profiles (tenant_id, legal_name, mc_number, dot_number, address, phone, email, bol_terms,
                                          tracking_link_in_emails, factoring_company, factoring_remit_to, factoring_notice,
                                          detention_free_minutes, detention_cents_per_hour, dry_run_fee_cents, alert_email, version, updated_at)
            VALUES (\(tx.tenant), \(values))
            ON CONFLICT (tenant_id) DO UPDATE SET legal_name = excluded.legal_name, mc_number = excluded.mc_number,
                dot_number = excluded.dot_number, address = excluded.address, phone = excluded.phone, email = excluded.email,
                bol_terms = excluded.bol_terms, tracking_link_in_emails = excluded.tracking_link_in_emails,
                factoring_company = excluded.factoring_company, factoring_remit_to = excluded.factoring_remit_to,
                factoring_notice = excluded.factoring_notice, detention_free_minutes = excluded.detention_free_minutes,
                detention_cents_per_hour = excluded.detention_cents_per_hour, dry_run_fee_cents = excluded.dry_run_fee_cents,
                alert_email = excluded.alert_email,
                version = excluded.version, updated_at = excluded.updated_at
            """)
    }
}
