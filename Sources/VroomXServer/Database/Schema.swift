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
    static let migrations: [Migration] = core + migrations2to9 + migrations10to16 + migrations17on + migrations30on
}

/// The text of an order that the board's search looks in. Each migration
/// that builds the index names its own columns, so a later change of the
/// searched text never rewrites an earlier migration.
enum OrderSearch {
    /// What migration 15 indexed.
    static let firstColumns = ["number", "vehicle_vin", "vehicle_make", "vehicle_model", "pickup_name", "pickup_address",
                               "pickup_contact_name", "delivery_name", "delivery_address", "delivery_contact_name"]
    /// What migration 17 indexed: the load board's reference too.
    static let columns17 = firstColumns + ["external_load_id"]
    /// Since migration 21: the other vehicles of a load and every lot
    /// number too (`OrderRepository.vehicleSearch`).
    static let columns = columns17 + ["vehicle_search"]

    /// The columns (of the row `prefix` names, as `NEW.`) joined by line
    /// breaks: `char(10)` in SQLite, `chr(10)` in PostgreSQL; a column that
    /// may be null counts as empty.
    static func text(_ prefix: String, _ dialect: SQLDialect = .sqlite, columns: [String] = columns) -> String {
        columns.map { firstColumns.contains($0) ? prefix + $0 : "coalesce(\(prefix)\($0), '')" }
            .joined(separator: dialect == .sqlite ? " || char(10) || " : " || chr(10) || ")
    }

    /// The SQLite index over `columns`: a view to read the text from, the
    /// full-text table (filled from the orders already there), and the
    /// triggers that keep it in step.
    static func sqliteIndex(_ columns: [String]) -> String {
        """
        CREATE VIEW order_search_source AS SELECT rowid AS order_rowid, \(text("", columns: columns)) AS body FROM orders;
        CREATE VIRTUAL TABLE order_search USING fts5(body, tokenize = 'trigram', content = 'order_search_source', content_rowid = 'order_rowid');
        INSERT INTO order_search (order_search) VALUES ('rebuild');
        CREATE TRIGGER order_search_insert AFTER INSERT ON orders BEGIN INSERT INTO order_search (rowid, body) VALUES (NEW.rowid, \(text("NEW.", columns: columns))); END;
        CREATE TRIGGER order_search_delete AFTER DELETE ON orders BEGIN INSERT INTO order_search (order_search, rowid, body) VALUES ('delete', OLD.rowid, \(text("OLD.", columns: columns))); END;
        CREATE TRIGGER order_search_update AFTER UPDATE OF \(columns.joined(separator: ", ")) ON orders BEGIN INSERT INTO order_search (order_search, rowid, body) VALUES ('delete', OLD.rowid, \(text("OLD.", columns: columns))); INSERT INTO order_search (rowid, body) VALUES (NEW.rowid, \(text("NEW.", columns: columns))); END
        """
    }

    /// PostgreSQL's: a generated column of the text, under a trigram index.
    static func postgresIndex(_ columns: [String]) -> String {
        """
        ALTER TABLE orders ADD COLUMN search_text TEXT GENERATED ALWAYS AS (lower(\(text("", .postgres, columns: columns)))) STORED;
        CREATE INDEX orders_search ON orders USING gin (search_text gin_trgm_ops)
        """
    }
}

/// A migration that adds an entity to the change log's CHECK constraint.
/// SQLite cannot change a CHECK constraint, so the table is rebuilt there,
/// with the columns it had before migration 12 (a later use must add
/// `mutation_id`).
enum ChangeLogEntities {
    static func sqlite(_ suffix: String, _ entities: [String], withMutation: Bool = false) -> String {
        let mutation = withMutation ? ", mutation_id" : ""
        return """
        CREATE TABLE change_log_\(suffix) (
            tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            seq BIGINT NOT NULL CHECK (seq >= 1),
            entity TEXT NOT NULL CHECK (entity IN (\(list(entities)))),
            entity_id TEXT NOT NULL,
            op TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
            driver_id TEXT,
            dispatch_visible BIGINT NOT NULL CHECK (dispatch_visible IN (0, 1)),
            payload TEXT,
            committed_at BIGINT NOT NULL,\(withMutation ? "\n    mutation_id TEXT," : "")
            PRIMARY KEY (tenant_id, seq),
            CHECK (op = 'delete' OR payload IS NOT NULL)
        );
        INSERT INTO change_log_\(suffix) SELECT tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload, committed_at\(mutation)
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
