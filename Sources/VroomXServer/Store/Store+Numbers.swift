import VroomXModels

/// Trip and order numbers are a carrier's names for its work, read out on
/// the phone and typed by hand: "t-1002" is "T-1002". A number that another
/// row of the carrier holds, ignoring case (A–Z), is refused as an exact
/// duplicate is (`409 already_exists`), so the driver never sees two trips
/// that read the same. Numbers saved before this rule may still collide;
/// the order import's lookup handles those (`OrderImport`).
enum NumberedWork: String, Sendable {
    case trip = "trips"
    case order = "orders"

    /// "A trip", "An order": how a sentence starts with it.
    var withArticle: String { self == .trip ? "A trip" : "An order" }

    /// The refusal of `number` when another row holds it as `held`.
    func taken(_ number: String, heldAs held: String) -> AppError {
        AppError(409, .alreadyExists, held == number
            ? "\(withArticle) numbered \(number) already exists."
            : "\(self == .trip ? "Trip" : "Order") \(held) already has this number (numbers ignore capital letters).", field: "number")
    }
}

extension Store {
    /// Refuses `number` when another trip or order (`except` the one being
    /// renumbered) holds it ignoring case (an index on the folded number
    /// answers). On PostgreSQL the carrier's claims take turns (a lock that
    /// lasts until the transaction ends), so two lookalikes written at once
    /// cannot both pass the check; SQLite's writers already do. Call it
    /// before the transaction locks any row: a writer holding a row while it
    /// waits for the claim could wait on one that holds the claim and waits
    /// for that row.
    func claim(_ number: String, for work: NumberedWork, except id: String? = nil, _ tx: TenantTransaction) async throws {
        try await takeClaimTurn(for: work, tx)
        let other: SQL = id.map { " AND id <> \($0)" } ?? ""
        guard let held = try await tx.first("""
            SELECT number FROM \(unsafeRaw: work.rawValue)
            WHERE tenant_id = \(tx.tenant) AND lower(number) = lower(\(number))\(other) LIMIT 1
            """).map({ try $0.string("number") }) else { return }
        throw work.taken(number, heldAs: held)
    }

    /// Waits for this carrier's turn to claim numbers (PostgreSQL; once per
    /// transaction). A batch takes it before locking any row.
    func takeClaimTurn(for work: NumberedWork, _ tx: TenantTransaction) async throws {
        guard tx.db.dialect == .postgres, tx.numberClaims.insert(work).inserted else { return }
        _ = try await tx.query("SELECT pg_advisory_xact_lock(hashtext(\(tx.tenant.rawValue + " " + work.rawValue))) AS held")
    }
}
