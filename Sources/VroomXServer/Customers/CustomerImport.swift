import Foundation
import VroomXModels

/// Customers from a CSV file (a header line, then one customer per line,
/// as an accounting program exports them). A name the carrier already has
/// (ignoring case) updates that customer with the columns given; any other
/// line creates one. Every line is checked by the API's rules before
/// anything is written; one bad line and nothing is imported.
enum CustomerImport {
    static let maxLines = 5_000
    static let columns = ["name", "kind", "billing_contact", "email", "phone", "address", "payment_terms", "notes"]

    static func run(_ text: String, store: Store, tenant: ID<Tenant>) async throws -> ImportResult {
        let table: CSV.Table
        do {
            table = try CSV.Table(text, columns: columns, required: ["name"], maxLines: maxLines, noun: "customers")
        } catch {
            throw EquipmentImport.failure(error.problems)
        }
        var problems = table.problems
        var edits: [(line: Int, request: UpdateCustomerRequest)] = []
        var seen: [String: Int] = [:]
        for line in table.lines {
            guard problems.count < OrderImport.maxProblems else { break }
            let values = line.values
            var request = UpdateCustomerRequest(name: values["name"] ?? "", billingContact: values["billing_contact"], email: values["email"],
                                                phone: values["phone"], address: values["address"], paymentTerms: values["payment_terms"],
                                                notes: values["notes"])
            if let word = values["kind"] {
                guard let kind = CustomerKind(rawValue: word.lowercased()) else {
                    problems.append(LineProblem(line: line.line, field: "kind",
                                                message: "kind is one of \(CustomerKind.allCases.map(\.rawValue).joined(separator: ", "))."))
                    continue
                }
                request.kind = kind
            }
            var refusals = Problems()
            let checked = CustomerService.edited(Customer(id: ID(), name: "", kind: .broker, createdAt: Date(), updatedAt: Date()), by: request,
                                                 &refusals)
            if let refusal = refusals.all.first {
                problems.append(LineProblem(line: line.line, field: refusal.body.field ?? "line", message: refusal.body.message))
                continue
            }
            let key = CustomerRepository.key(checked.name)
            if let earlier = seen[key] {
                problems.append(LineProblem(line: line.line, field: "name", message: "\(checked.name) is also on line \(earlier)."))
                continue
            }
            seen[key] = line.line
            edits.append((line.line, request))
        }
        guard problems.isEmpty else { throw EquipmentImport.failure(problems.sorted { $0.line < $1.line }) }
        return try await store.customers.importLines(edits, tenant: tenant)
    }
}

extension CustomerService {
    /// Creates or updates the customers of an import in one transaction.
    func importLines(_ lines: [(line: Int, request: UpdateCustomerRequest)], tenant: ID<Tenant>) async throws -> ImportResult {
        try await DatabaseDeadline.allowing(OrderService.importDeadline) {
            try await store.write(tenant: tenant) { tx in
                var result = ImportResult(created: 0, updated: 0)
                for (line, request) in lines {
                    do {
                        if let current = try await CustomerRepository.named(request.name ?? "", tenant: tenant, tx.db) {
                            // The name finds the customer; its spelling stays as the carrier wrote it.
                            var edit = request
                            edit.name = nil
                            let edited = try Problems.first { Self.edited(current, by: edit, &$0) }
                            if try await save(edited, from: current, tx) != current { result.updated += 1 }
                        } else {
                            let create = CreateCustomerRequest(name: request.name ?? "", kind: request.kind, billingContact: request.billingContact,
                                                               email: request.email, phone: request.phone, address: request.address,
                                                               paymentTerms: request.paymentTerms, notes: request.notes)
                            _ = try await insert(try Problems.first { Self.checked(create, &$0) }, tx)
                            result.created += 1
                        }
                    } catch let error as AppError where error.status == 422 || error.status == 409 {
                        throw EquipmentImport.failure([LineProblem(line: line, field: error.body.field ?? "line", message: error.body.message)])
                    }
                }
                return result
            }
        }
    }
}
