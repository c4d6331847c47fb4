import Foundation

/// How a carrier presents itself on the documents it sends (the bill of
/// lading, emails to customers) and what it chooses for them.
public struct CarrierProfile: Codable, Sendable, Hashable {
    /// The name on the carrier's operating authority (the account's name otherwise).
    public var legalName: String
    /// Motor carrier number, digits only ("MC-123456" is stored as "123456").
    public var mcNumber: String
    /// USDOT number, digits only.
    public var dotNumber: String
    public var address: String
    public var phone: String
    /// Where customers' replies to the carrier's emails go.
    public var email: String
    /// The terms printed on every bill of lading.
    public var bolTerms: String
    /// Whether pickup and delivery emails to the customer carry a tracking link.
    public var trackingLinkInEmails: Bool
    /// The factoring company the carrier's invoices are assigned to (empty: none).
    public var factoringCompany: String
    /// Where customers send payment of an assigned invoice.
    public var factoringRemitTo: String
    /// The notice of assignment printed on every invoice while factoring.
    public var factoringNotice: String
    /// Minutes at a stop before detention starts.
    public var detentionFreeMinutes: Int
    /// Detention's hourly rate in cents (0: shown, not billed).
    public var detentionCentsPerHour: Int
    /// The dry-run fee in cents (0: not billed).
    public var dryRunFeeCents: Int
    /// Where dispatch's alerts of late and at-risk orders are emailed (empty: shown in the console only).
    public var alertEmail: String
    public var version: Int
    public var updatedAt: Date?

    public init(legalName: String = "", mcNumber: String = "", dotNumber: String = "", address: String = "", phone: String = "",
                email: String = "", bolTerms: String = "", trackingLinkInEmails: Bool = true, factoringCompany: String = "",
                factoringRemitTo: String = "", factoringNotice: String = "", detentionFreeMinutes: Int = StopTimes.defaultFreeMinutes,
                detentionCentsPerHour: Int = StopTimes.defaultDetentionCentsPerHour, dryRunFeeCents: Int = StopTimes.defaultDryRunCents,
                alertEmail: String = "", version: Int = 0, updatedAt: Date? = nil) {
        self.alertEmail = alertEmail
        self.detentionFreeMinutes = detentionFreeMinutes
        self.detentionCentsPerHour = detentionCentsPerHour
        self.dryRunFeeCents = dryRunFeeCents
        self.legalName = legalName
        self.mcNumber = mcNumber
        self.dotNumber = dotNumber
        self.address = address
        self.phone = phone
        self.email = email
        self.bolTerms = bolTerms
        self.trackingLinkInEmails = trackingLinkInEmails
        self.factoringCompany = factoringCompany
        self.factoringRemitTo = factoringRemitTo
        self.factoringNotice = factoringNotice
        self.version = version
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case address, phone, email, version
        case legalName = "legal_name"
        case mcNumber = "mc_number"
        case dotNumber = "dot_number"
        case bolTerms = "bol_terms"
        case trackingLinkInEmails = "tracking_link_in_emails"
        case factoringCompany = "factoring_company"
        case factoringRemitTo = "factoring_remit_to"
        case factoringNotice = "factoring_notice"
        case detentionFreeMinutes = "detention_free_minutes"
        case detentionCentsPerHour = "detention_cents_per_hour"
        case dryRunFeeCents = "dry_run_fee_cents"
        case alertEmail = "alert_email"
        case updatedAt = "updated_at"
    }
}

/// A dispatcher's edit of the carrier's profile: the fields present change.
public struct UpdateCarrierProfileRequest: Codable, Sendable, Hashable {
    public var legalName: String?
    public var mcNumber: String?
    public var dotNumber: String?
    public var address: String?
    public var phone: String?
    public var email: String?
    public var bolTerms: String?
    public var trackingLinkInEmails: Bool?
    public var factoringCompany: String?
    public var factoringRemitTo: String?
    public var factoringNotice: String?
    public var detentionFreeMinutes: Int?
    public var detentionCentsPerHour: Int?
    public var dryRunFeeCents: Int?
    public var alertEmail: String?
    /// The version the edit was based on (0 before the first save).
    public var baseVersion: Int?

    public init(legalName: String? = nil, mcNumber: String? = nil, dotNumber: String? = nil, address: String? = nil, phone: String? = nil,
                email: String? = nil, bolTerms: String? = nil, trackingLinkInEmails: Bool? = nil, factoringCompany: String? = nil,
                factoringRemitTo: String? = nil, factoringNotice: String? = nil, detentionFreeMinutes: Int? = nil,
                detentionCentsPerHour: Int? = nil, dryRunFeeCents: Int? = nil, alertEmail: String? = nil, baseVersion: Int? = nil) {
        self.alertEmail = alertEmail
        self.detentionFreeMinutes = detentionFreeMinutes
        self.detentionCentsPerHour = detentionCentsPerHour
        self.dryRunFeeCents = dryRunFeeCents
        self.legalName = legalName
        self.mcNumber = mcNumber
        self.dotNumber = dotNumber
        self.address = address
        self.phone = phone
        self.email = email
        self.bolTerms = bolTerms
        self.trackingLinkInEmails = trackingLinkInEmails
        self.factoringCompany = factoringCompany
        self.factoringRemitTo = factoringRemitTo
        self.factoringNotice = factoringNotice
        self.baseVersion = baseVersion
    }

    enum CodingKeys: String, CodingKey {
        case address, phone, email
        case legalName = "legal_name"
        case mcNumber = "mc_number"
        case dotNumber = "dot_number"
        case bolTerms = "bol_terms"
        case trackingLinkInEmails = "tracking_link_in_emails"
        case factoringCompany = "factoring_company"
        case factoringRemitTo = "factoring_remit_to"
        case factoringNotice = "factoring_notice"
        case detentionFreeMinutes = "detention_free_minutes"
        case detentionCentsPerHour = "detention_cents_per_hour"
        case dryRunFeeCents = "dry_run_fee_cents"
        case alertEmail = "alert_email"
        case baseVersion = "base_version"
    }
}

extension CarrierProfile {
    /// What it bills for time and dry runs at stops.
    public var stopChargeTerms: StopChargeTerms {
        StopChargeTerms(freeMinutes: detentionFreeMinutes, detentionCentsPerHour: detentionCentsPerHour, dryRunCents: dryRunFeeCents)
    }

    /// Whether the carrier's invoices are assigned to a factoring company.
    public var factors: Bool { !factoringCompany.isEmpty }

    /// The factoring a new invoice is sent under; nil when the carrier does not factor.
    public var invoiceFactoring: InvoiceFactoring? {
        factors ? InvoiceFactoring(company: factoringCompany, remitTo: factoringRemitTo, notice: noticeOfAssignment) : nil
    }

    /// What a factored invoice says when the carrier typed no notice of its own.
    public var noticeOfAssignment: String {
        guard factors else { return "" }
        return factoringNotice.isEmpty
            ? "NOTICE OF ASSIGNMENT: this invoice has been assigned to \(factoringCompany). Pay only to \(factoringCompany); payment to anyone else does not discharge the debt."
            : factoringNotice
    }
}

