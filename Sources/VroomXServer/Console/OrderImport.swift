import Foundation
import VroomXModels

/// Orders from a CSV file (a header line, then a line per vehicle): every
/// line is checked by the same rules as the API before anything is
/// written; any bad line and nothing is imported. Lines with the same
/// order number are one order of several vehicles: the first gives the
/// order, each its vehicle and that vehicle's price (`revenue`).
enum OrderImport {
    static let maxLines = 5_000
    /// A file this wrong is answered with its first problems only.
    static let maxProblems = 1_000

    /// The columns a file may have; the header names them in any order.
    static let columns = [
        "number", "external_load_id", "customer", "customer_kind", "customer_email", "customer_phone", "trip", "year", "make", "model", "vin", "color",
        "type", "inoperable", "lot",
        "pickup_name", "pickup_address", "pickup_contact", "pickup_phone", "pickup_from", "pickup_to",
        "delivery_name", "delivery_address", "delivery_contact", "delivery_phone", "delivery_from", "delivery_to",
        "revenue", "payment_terms", "vin_confirmed",
    ]
    static let required = ["number", "pickup_address", "delivery_address", "revenue"]
    /// What a line says of its vehicle; every other column is the order's, given on its first line
    /// (a later line of the same order leaves them empty or says the same).
    static let vehicleColumns: Set = ["year", "make", "model", "vin", "color", "type", "inoperable", "lot", "revenue", "vin_confirmed"]

    /// A file to start from: the header and one example line.
    static let template = """
        \(columns.joined(separator: ","))
        EXAMPLE-1,LB-00000,Example Broker (replace me),broker,billing@example.com,555-0100,,2021,Toyota,Camry,4T1B11HK4MU123456,Silver,\
        sedan,,LOT 101,Example Auction,"1 Auction Way, Matteson, IL 60443",Gate desk,555-0111,12/30/2026,12/31/2026,Example Dealer,\
        "500 Lake St, Milwaukee, WI 53202",Sales desk,555-0122,1/2/2027,1/3/2027,450.00,Net 15,
        EXAMPLE-1,,,,,,,2019,Ford,F-150,,Blue,pickup,yes,LOT 102,,,,,,,,,,,,,525.00,,

        """

    typealias Problem = LineProblem

    struct Problems: Error {
        var lines: [Problem] = []
    }

    struct Outcome: Sendable {
        let count: Int
        /// How many went to a trip with a driver (the Assigned tab); the rest wait on New.
        let assigned: Int
        /// Customers the file named that the carrier did not have.
        var newCustomers = 0
        /// The board tab to open: New while any order waits there for a driver.
        var status: OrderStatus { assigned < count ? .new : .assigned }
    }

    /// The customer a line names, with what the file says of a new one.
    struct CustomerMention: Sendable {
        let line: Int
        let name: String
        let kind: String?
        let email: String?
        let phone: String?
    }

    static func run(_ text: String, store: Store, tenant: ID<Tenant>) async throws -> Outcome {
        let table = try read(text)
        // Only the trips the file names, not every trip the carrier ever ran: found by the database's `lower`, which
        // folds ASCII letters only (SQLite), so a file naming a trip with other letters reads them all, for
        // `TripNumbers` to fold every letter (and refuse lookalikes) as it always did.
        let named = Set(table.lines.compactMap { $0.values["trip"] }.filter { !$0.isEmpty })
        let trips = named.allSatisfy { $0.unicodeScalars.allSatisfy(\.isASCII) }
            ? try await store.trips.numbered(named.sorted(), tenant: tenant)
            : try await store.trips.list(.dispatch(tenant: tenant))
        var (orders, lines, problems, mentions) = parse(table, trips: TripNumbers(trips), now: store.now)
        // Customers by name: the carrier's, or new ones made with the orders.
        var newCustomers = OrderService.NewCustomers()
        var known: [String: ID<Customer>] = [:]
        for (index, mention) in mentions.enumerated() {
            guard let mention else { continue }
            let key = CustomerRepository.key(mention.name)
            if let id = known[key] { orders[index].customerID = id; continue }
            if let fields = newCustomers.fields[key] {
                // A new customer is made once, from its first line: a later line saying otherwise is a question, not a quiet loss.
                let first = mentions.compactMap { $0 }.first { CustomerRepository.key($0.name) == key }?.line ?? mention.line
                if let email = mention.email, (try? Validate.email(email)) != fields.email {
                    problems.append(Problem(line: mention.line, field: "customer_email",
                                            message: "Line \(first) gives \(mention.name) another email. Give a new customer's details once, or the same on every line."))
                    continue
                }
                if let phone = mention.phone, TextLimit.normalized(phone) != fields.phone {
                    problems.append(Problem(line: mention.line, field: "customer_phone",
                                            message: "Line \(first) gives \(mention.name) another phone. Give a new customer's details once, or the same on every line."))
                    continue
                }
                newCustomers.orders[key, default: []].append(index)
                continue
            }
            if let customer = try await store.customers.named(mention.name, tenant: tenant) {
                known[key] = customer.id
                orders[index].customerID = customer.id
                continue
            }
            var refusals = VroomXServer.Problems()
            let kind = mention.kind.map { CustomerKind(rawValue: $0.lowercased()) }
            if case .some(nil) = kind {
                problems.append(Problem(line: mention.line, field: "customer_kind",
                                        message: "customer_kind is one of \(CustomerKind.allCases.map(\.rawValue).joined(separator: ", "))."))
                continue
            }
            let fields = CustomerService.checked(CreateCustomerRequest(name: mention.name, kind: kind ?? nil, email: mention.email,
                                                                       phone: mention.phone), &refusals)
            if let refusal = refusals.all.first {
                let field = ["name": "customer", "email": "customer_email", "phone": "customer_phone"][refusal.body.field ?? ""] ?? "customer"
                problems.append(Problem(line: mention.line, field: field, message: FieldErrors.besideItsField(refusal)))
                continue
            }
            newCustomers.fields[key] = fields
            newCustomers.orders[key] = [index]
        }
        // The lines only the database can judge are checked in the same pass as the rest: every bad line named at once.
        var all = problems
        for refusal in try await store.orders.refusals(ofNew: orders, tenant: tenant) {
            all.append(Problem(line: lines[refusal.index], field: column(for: refusal.error.body.field),
                               message: FieldErrors.besideItsField(refusal.error)))
        }
        guard all.isEmpty else {
            throw Problems(lines: Array(all.sorted { $0.line < $1.line }.prefix(maxProblems)))
        }
        do {
            let count = try await store.orders.createMany(orders, tenant: tenant, newCustomers: newCustomers)
            // An order on a trip with a driver is assigned; any other waits on New.
            let drivers = Dictionary(trips.map { ($0.id, $0.driverID) }) { first, _ in first }
            return Outcome(count: count, assigned: orders.filter { order in order.tripID.flatMap { drivers[$0] ?? nil } != nil }.count,
                           newCustomers: newCustomers.fields.count)
        } catch let refusal as BatchRefusal {
            // A number already taken in this carrier (or a trip gone meanwhile): nothing was written.
            throw Problems(lines: [Problem(line: lines[refusal.index], field: column(for: refusal.error.body.field),
                                           message: FieldErrors.besideItsField(refusal.error))])
        } catch let error as AppError where error.body.field == "name" {
            // A new customer someone created meanwhile under the same name.
            throw Problems(lines: [Problem(line: 1, field: "customer", message: error.body.message + " Import the file again to use it.")])
        }
    }

    /// Checked orders and the line each came from, or every problem found.
    /// A file's trip column names trips by number: written exactly as the
    /// trip's number, or in other letter case when only one trip matches so.
    /// (Numbers differing only in case, or in how an accent is encoded, are
    /// distinct trips; the file never picks one of them by chance.)
    struct TripNumbers {
        private let exact: [[UInt8]: Trip]
        private let folded: [String: [Trip]]

        init(_ trips: [Trip]) {
            exact = Dictionary(trips.map { (Array($0.number.utf8), $0) }) { first, _ in first }
            folded = Dictionary(grouping: trips) { $0.number.lowercased() }
        }

        func trip(_ number: String) -> Result<Trip, AppError> {
            if let trip = exact[Array(number.utf8)] { return .success(trip) }
            let alike = folded[number.lowercased()] ?? []
            if alike.count == 1 { return .success(alike[0]) }
            return .failure(AppError.validation("trip", alike.isEmpty
                ? "No trip numbered \(number)."
                : "\(alike.count) trips are numbered like \(number) (\(alike.map(\.number).sorted().joined(separator: ", "))): write the number exactly."))
        }
    }

    /// The lines that are right, with their line numbers and the customer
    /// each names, and the problems of the others; a file whose shape is
    /// wrong (its header, its size) throws.
    static func parse(_ text: String, trips: TripNumbers, now: Date) throws
        -> (orders: [ValidOrder], lines: [Int], problems: [Problem], customers: [CustomerMention?]) {
        parse(try read(text), trips: trips, now: now)
    }

    /// The file's lines by column; a file whose shape is wrong (its header, its size) throws.
    static func read(_ text: String) throws -> CSV.Table {
        do {
            return try CSV.Table(text, columns: columns, required: required, maxLines: maxLines, noun: "orders")
        } catch {
            throw Problems(lines: error.problems)
        }
    }

    static func parse(_ table: CSV.Table, trips: TripNumbers, now: Date)
        -> (orders: [ValidOrder], lines: [Int], problems: [Problem], customers: [CustomerMention?]) {
        var problems = Problems(lines: table.problems)
        // One order per number, in the file's order: its first line, and the line of each vehicle.
        var drafts: [(request: CreateOrderRequest, first: [String: String], lines: [Int], mention: CustomerMention?)] = []
        var numbers: [String: Int] = [:]
        for row in table.lines {
            guard problems.lines.count < maxProblems else { break }
            let value = row.values
            var errors = FieldErrors()
            let year = FormValue.integer(value["year"] ?? "", field: "year", range: FieldLimits.vehicleYear.range, errors: &errors)
            let price = FormValue.cents(value["revenue"] ?? "", field: "revenue", errors: &errors)
            if price == nil, errors.messages["revenue"] == nil { errors.add("revenue", "Enter what the order pays for this vehicle, in dollars.") }
            var type: VehicleType?
            if let text = value["type"], !text.isEmpty {
                type = VehicleType(rawValue: text.lowercased())
                if type == nil { errors.add("type", "type is one of \(VehicleType.allCases.map(\.rawValue).joined(separator: ", ")).") }
            }
            let vehicle = Vehicle(year: year, make: value["make"] ?? "", model: value["model"] ?? "", vin: (value["vin"] ?? "").uppercased(),
                                  color: value["color"] ?? "", type: type, operable: !CSV.isYes(value["inoperable"]), lotNumber: value["lot"],
                                  priceCents: price ?? 0)
            let number = TextLimit.normalized(value["number"] ?? "").lowercased()
            // A later line of an order: its vehicle, and nothing that contradicts the order's first line.
            if let index = numbers[number], !number.isEmpty {
                let first = drafts[index]
                let contradicted = columns.filter { !vehicleColumns.contains($0) && $0 != "number" }
                    .first { column in !(value[column] ?? "").isEmpty && value[column] != first.first[column] }
                if let contradicted {
                    errors.add(contradicted, "Line \(first.lines[0]) starts order \(value["number"] ?? "") and says otherwise: give an order's \(contradicted) on its first line only, or the same on each.")
                }
                guard errors.isEmpty else {
                    problems.lines += errors.messages.sorted { $0.key < $1.key }.map { Problem(line: row.line, field: $0.key, message: $0.value) }
                    continue
                }
                drafts[index].request.vehicles.append(vehicle)
                drafts[index].lines.append(row.line)
                if CSV.isYes(value["vin_confirmed"]) { drafts[index].request.acceptVINWarning = true }
                continue
            }
            let dates = ["pickup_from", "pickup_to", "delivery_from", "delivery_to"].map {
                FormValue.date(value[$0] ?? "", field: $0, errors: &errors)
            }
            var trip: ID<Trip>?
            if let number = value["trip"], !number.isEmpty {
                switch trips.trip(number) {
                case .success(let found):
                    // The store's rule, checked here too so every bad line is listed at once.
                    do { try OrderService.checkTakesOrders(found); trip = found.id } catch let refusal { errors.add("trip", refusal.body.message) }
                case .failure(let refusal): errors.add("trip", refusal.body.message)
                }
            }
            if value["customer"] == nil, value["customer_email"] != nil || value["customer_phone"] != nil || value["customer_kind"] != nil {
                errors.add("customer", "Name the customer whose email or phone this is.")
            }
            guard errors.isEmpty else {
                problems.lines += errors.messages.sorted { $0.key < $1.key }.map { Problem(line: row.line, field: $0.key, message: $0.value) }
                continue
            }
            let request = CreateOrderRequest(
                number: value["number"] ?? "", tripID: trip, vehicles: [vehicle],
                pickup: Stop(name: value["pickup_name"] ?? "", address: value["pickup_address"] ?? "",
                             contactName: value["pickup_contact"] ?? "", contactPhone: value["pickup_phone"] ?? "",
                             windowStart: dates[0], windowEnd: dates[1]),
                delivery: Stop(name: value["delivery_name"] ?? "", address: value["delivery_address"] ?? "",
                               contactName: value["delivery_contact"] ?? "", contactPhone: value["delivery_phone"] ?? "",
                               windowStart: dates[2], windowEnd: dates[3]),
                paymentTerms: value["payment_terms"], acceptVINWarning: CSV.isYes(value["vin_confirmed"]),
                externalLoadID: value["external_load_id"])
            numbers[number] = drafts.count
            drafts.append((request, value, [row.line], value["customer"].map {
                CustomerMention(line: row.line, name: $0, kind: value["customer_kind"], email: value["customer_email"], phone: value["customer_phone"])
            }))
        }
        var orders: [ValidOrder] = []
        var lines: [Int] = []
        var customers: [CustomerMention?] = []
        for draft in drafts {
            // Every refusal of the order at once; a vehicle's is its own line's, the order's its first line's.
            var refusals = VroomXServer.Problems()
            let valid = ValidOrder(draft.request, now: now, &refusals)
            guard !refusals.all.isEmpty else {
                orders.append(valid)
                lines.append(draft.lines[0])
                customers.append(draft.mention)
                continue
            }
            for error in refusals.all {
                let (index, field) = vehicleField(error.body.field)
                let line = index.flatMap { draft.lines.indices.contains($0) ? draft.lines[$0] : nil } ?? draft.lines[0]
                problems.lines.append(Problem(line: line, field: column(for: field), message: FieldErrors.besideItsField(error)))
            }
        }
        problems.lines.sort { $0.line < $1.line }
        return (orders, lines, problems.lines, customers)
    }

    /// A listed vehicle's field (`vehicles[2].vin`) as the vehicle's index
    /// and the field as a single vehicle's (`vehicle.vin`); any other field as it is.
    static func vehicleField(_ field: String?) -> (index: Int?, field: String?) {
        guard let field, field.hasPrefix("vehicles["), let close = field.firstIndex(of: "]"),
              let index = Int(field[field.index(field.startIndex, offsetBy: 9)..<close]) else { return (nil, field) }
        let rest = field[field.index(after: close)...]
        return (index, rest.isEmpty ? "vehicles" : "vehicle" + rest)
    }

    /// The file's column for an API field (`pickup.window_end` → `pickup_to`).
    static func column(for field: String?) -> String {
        switch field {
        case nil: return "line"
        case "revenue_cents", "vehicle.price_cents": return "revenue"
        case "vehicles": return "number"
        case "vehicle.lot_number": return "lot"
        case "trip_id": return "trip"
        case "customer_id": return "customer"
        case let field?:
            let flat = field.replacingOccurrences(of: ".", with: "_")
            return [
                "vehicle_year": "year", "vehicle_make": "make", "vehicle_model": "model", "vehicle_vin": "vin", "vehicle_color": "color",
                "pickup_contact_name": "pickup_contact", "pickup_contact_phone": "pickup_phone", "pickup_window_end": "pickup_to",
                "delivery_contact_name": "delivery_contact", "delivery_contact_phone": "delivery_phone", "delivery_window_end": "delivery_to",
            ][flat] ?? flat
        }
    }
}

/// RFC 4180 CSV: quoted fields may hold commas, quotes ("") and line
/// breaks; lines end in LF or CRLF. Each row knows the line it starts on.
enum CSV {
    struct Row: Sendable {
        let line: Int
        let fields: [String]
    }

    /// A file the parser refuses: where, and why.
    struct Refusal: Error, Sendable {
        let line: Int
        let message: String
    }

    /// More fields on a line than any import has columns: refused before
    /// the work grows with the file (a header of a million commas).
    static let maxFields = 64

    /// The rows of a file (a leading byte-order mark, as spreadsheets write,
    /// is skipped). A quote left open would swallow the rest of the file
    /// into one field, so it is refused, naming the line it opened on.
    /// Blank lines are skipped; more than `maxRows` rows (the header
    /// included) are refused at the first one too many.
    static func rows(_ text: String, maxRows: Int = .max) throws(Refusal) -> [Row] {
        var rows: [Row] = []
        var fields: [String] = []
        var field = ""
        var inQuotes = false
        var quoteLine = 1
        var line = 1
        var rowLine = 1
        var scalars = text.unicodeScalars[...]
        if scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }
        var iterator = scalars.makeIterator()
        var pending: Unicode.Scalar? = iterator.next()
        func endRow() {
            fields.append(field)
            if fields != [""] { rows.append(Row(line: rowLine, fields: fields)) }
            fields = []
            field = ""
        }
        while let scalar = pending {
            pending = iterator.next()
            if inQuotes {
                if scalar == "\"" {
                    if pending == "\"" { field.unicodeScalars.append("\""); pending = iterator.next() } else { inQuotes = false }
                } else {
                    if scalar == "\n" { line += 1 }
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"" where field.isEmpty:
                inQuotes = true
                quoteLine = line
            case ",":
                fields.append(field)
                field = ""
                guard fields.count < maxFields else {
                    throw Refusal(line: rowLine, message: "This line has more than \(maxFields) fields.")
                }
            case "\r" where pending == "\n": continue
            case "\n", "\r":
                endRow()
                guard rows.count <= maxRows else { throw Refusal(line: rowLine, message: "At most \(maxRows - 1) lines besides the header.") }
                line += 1
                rowLine = line
            default: field.unicodeScalars.append(scalar)
            }
        }
        if inQuotes { throw Refusal(line: quoteLine, message: "A quote opened on this line is never closed.") }
        if !field.isEmpty || !fields.isEmpty { endRow() }
        return rows
    }

    /// Header names as written (trimmed, lower case, spaces as `_`), or
    /// the problem with them: a name twice would let one column silently
    /// override the other.
    static func header(_ row: Row) -> (names: [String], repeated: String?) {
        let names = row.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased().replacingOccurrences(of: " ", with: "_") }
        var seen: Set<String> = []
        let repeated = names.first { !$0.isEmpty && !seen.insert($0).inserted }
        return (names, repeated)
    }
}
