import Foundation
import Hummingbird
import VroomXModels

/// The carrier's settings: what its bill of lading and its emails to
/// customers say of it, and what they include.
struct ConsoleSettingsPages {
    let console: ConsoleController
    var store: Store { console.store }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/settings") { request in
            let profile = try await store.carrierProfile.profile(tenant: request.tenant)
            return page(request, values: Self.formValues(profile), errors: FieldErrors(), saved: request.query("saved") == "1")
        }
        console.post(router, "/settings", save)
    }

    static func formValues(_ profile: CarrierProfile) -> [String: String] {
        ["legal_name": profile.legalName, "mc_number": profile.mcNumber.isEmpty ? "" : "MC-" + profile.mcNumber,
         "dot_number": profile.dotNumber, "address": profile.address, "phone": profile.phone, "email": profile.email,
         "bol_terms": profile.bolTerms, "tracking_link_in_emails": profile.trackingLinkInEmails ? "yes" : "",
         "factoring_company": profile.factoringCompany, "factoring_remit_to": profile.factoringRemitTo, "factoring_notice": profile.factoringNotice,
         "detention_free_minutes": String(profile.detentionFreeMinutes),
         "detention_rate": ConsoleFormat.dollars(profile.detentionCentsPerHour), "dry_run_fee": ConsoleFormat.dollars(profile.dryRunFeeCents),
         "alert_email": profile.alertEmail,
         "base_version": String(profile.version)]
    }

    private func page(_ request: ConsoleRequest, values: [String: String], errors: FieldErrors, saved: Bool,
                      status: HTTPResponse.Status = .ok) -> Response {
        console.pages.page("settings", title: "Settings", session: request.session, section: "settings", SettingsView(
            v: values, e: errors.messages, hasErrors: !errors.isEmpty && errors.messages["base_version"] == nil,
            notice: saved ? "Saved. Bills of lading, invoices and emails to customers say this from now on." : "",
            carrier: request.session.carrier), status: status)
    }

    private func save(_ request: ConsoleRequest) async throws -> Response {
        let form = request.form
        var errors = FieldErrors()
        let free = FormValue.integer(form["detention_free_minutes"], field: "detention_free_minutes", range: StopTimes.freeMinutesRange, errors: &errors)
        let rate = Self.charge(form["detention_rate"], field: "detention_rate", errors: &errors)
        let fee = Self.charge(form["dry_run_fee"], field: "dry_run_fee", errors: &errors)
        let edit = UpdateCarrierProfileRequest(legalName: form["legal_name"], mcNumber: form["mc_number"], dotNumber: form["dot_number"],
                                               address: form["address"], phone: form["phone"], email: form["email"], bolTerms: form["bol_terms"],
                                               trackingLinkInEmails: form["tracking_link_in_emails"] == "yes",
                                               factoringCompany: form["factoring_company"], factoringRemitTo: form["factoring_remit_to"],
                                               factoringNotice: form["factoring_notice"], detentionFreeMinutes: free,
                                               detentionCentsPerHour: rate, dryRunFeeCents: fee, alertEmail: form["alert_email"],
                                               baseVersion: Int(form["base_version"]) ?? -1)
        var problems = Problems()
        _ = CarrierProfileService.edited(CarrierProfile(), by: edit, &problems)
        guard problems.all.isEmpty, errors.isEmpty else {
            errors.add(problems)
            return page(request, values: form.firstValues, errors: errors, saved: false, status: .unprocessableContent)
        }
        do {
            _ = try await store.carrierProfile.update(edit, tenant: request.tenant)
            return ConsolePages.redirect("/settings?saved=1")
        } catch let error as AppError where error.status == 409 {
            let current = try await store.carrierProfile.profile(tenant: request.tenant)
            var errors = FieldErrors()
            errors.add("base_version", "Someone else saved the settings while you were editing. This form now shows what they saved; make your change again.")
            return page(request, values: Self.formValues(current), errors: errors, saved: false, status: .conflict)
        }
    }
}

extension ConsoleSettingsPages {
    /// A rate or a fee in dollars: empty is none ($0), at most $10,000.
    static func charge(_ text: String, field: String, errors: inout FieldErrors) -> Int? {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { return 0 }
        let most = "At most \(MoneyFormat.dollars(StopTimes.chargeCentsRange.upperBound))."
        // Whole dollars past the limit say this field's limit, not the largest amount money may be.
        let whole = text.filter { $0 != "$" && $0 != "," && !$0.isWhitespace }.prefix { $0 != "." }
        if whole.count > 5, whole.allSatisfy(\.isASCII), whole.allSatisfy(\.isNumber) {
            errors.add(field, most)
            return nil
        }
        guard let cents = FormValue.cents(text, field: field, errors: &errors) else { return nil }
        guard StopTimes.chargeCentsRange.contains(cents) else {
            errors.add(field, "At most \(MoneyFormat.dollars(StopTimes.chargeCentsRange.upperBound)).")
            return nil
        }
        return cents
    }
}

/// The settings form.
struct SettingsView: ConsoleView {
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let notice: String
    /// The account's name, which documents carry when no legal name is set.
    let carrier: String
}
