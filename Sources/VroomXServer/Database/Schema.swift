import Foundation

/// The schema, as numbered migrations. The SQL is shared by both backends:
/// ids and calendar dates are TEXT, instants are BIGINT epoch milliseconds,
/// money is BIGINT cents. Rules the data must obey are constraints, so no
/// code path can write a row that breaks them.
///
/// Rows the API serves also keep their wire JSON in `doc`, written in the
/// same statement as their columns. Reads answer with those bytes instead of
/// decoding columns and encoding JSON again (the dominant cost of a list
/// request); the columns remain the truth for queries and constraints, and
/// a test checks that both always agree.
///
/// Every tenant-owned table has `UNIQUE (tenant_id, id)`, and references
/// between tenant-owned rows are composite `(tenant_id, x_id)` foreign keys:
/// a row can never point at another carrier's row, whatever the code does.
enum Schema {
    static let migrations: [Migration] = core + migrations2to9 + migrations10to16
}

/// The text of an order that the board's search looks in.
enum OrderSearch {
    static let columns = ["number", "vehicle_vin", "vehicle_make", "vehicle_model", "pickup_name", "pickup_address",
                          "pickup_contact_name", "delivery_name", "delivery_address", "delivery_contact_name"]

    /// The columns (of the row `prefix` names, as `NEW.`) joined by line
    /// breaks: `char(10)` in SQLite, `chr(10)` in PostgreSQL.
    static func text(_ prefix: String, _ dialect: SQLDialect = .sqlite) -> String {
        columns.map { prefix + $0 }.joined(separator: dialect == .sqlite ? " || char(10) || " : " || chr(10) || ")
    }
}

/// A migration that adds an entity to the change log's CHECK constraint.
/// SQLite cannot change a CHECK constraint, so the table is rebuilt there,
/// with the columns it had before migration 12 (a later use must add
/// `mutation_id`).
enum ChangeLogEntities {
    static func sqlite(_ suffix: String, _ entities: [String]) -> String {
        """
        CREATE TABLE change_log_\(suffix) (
            tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            seq BIGINT NOT NULL CHECK (seq >= 1),
            entity TEXT NOT NULL CHECK (entity IN (\(list(entities)))),
            entity_id TEXT NOT NULL,
            op TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
            driver_id TEXT,
            dispatch_visible BIGINT NOT NULL CHECK (dispatch_visible IN (0, 1)),
            payload TEXT,
            committed_at BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, seq),
            CHECK (op = 'delete' OR payload IS NOT NULL)
        );
        INSERT INTO change_log_\(suffix) SELECT tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload, committed_at
            FROM change_log;
        DROP TABLE change_log;
        ALTER TABLE change_log_\(suffix) RENAME TO change_log;
        CREATE INDEX change_log_by_driver ON change_log (tenant_id, driver_id, seq);
        CREATE INDEX change_log_for_dispatch ON change_log (tenant_id, dispatch_visible, seq);
        CREATE INDEX change_log_by_age ON change_log (committed_at);
        """
    }

    static func postgres(_ entities: [String]) -> String {
        """
        ALTER TABLE change_log DROP CONSTRAINT change_log_entity_check;
        ALTER TABLE change_log ADD CONSTRAINT change_log_entity_check CHECK (entity IN (\(list(entities))));
        """
    }

    private static func list(_ entities: [String]) -> String { entities.map { "'\($0)'" }.joined(separator: ", ") }
}

struct Migration: Sendable {
    let version: Int
    let name: String
    let sql: String
    /// Statements for one backend only, where the dialects differ.
    var sqlite: String = ""
    var postgres: String = ""
    /// Rebuilds (drops and recreates) a table other tables' foreign keys
    /// point at. SQLite then runs the migrations with foreign keys off, so
    /// dropping the old table neither cascades nor rewrites the references,
    /// and checks every reference before committing.
    var rebuildsReferencedTable = false

    /// The statements of the migration for a backend, split on the `;` that
    /// ends a line.
    func statements(for dialect: SQLDialect) -> [String] {
        (sql + ";\n" + (dialect == .sqlite ? sqlite : postgres)).components(separatedBy: ";\n")
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .map { $0.hasSuffix(";") ? String($0.dropLast()) : $0 }
            .filter { !$0.isEmpty }
    }
}
