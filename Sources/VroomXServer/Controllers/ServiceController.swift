import Hummingbird
import NIOCore
import VroomXModels

/// The service endpoints: liveness, readiness and the OpenAPI document.
struct ServiceController {
    let database: any SQLDatabase
    let readiness: Readiness

    func register(_ routes: Routes) {
        // Liveness: the process answers. It never waits on the database (an
        // orchestrator would restart healthy instances during an outage); it
        // reports what it last knew of it.
        routes.on(.health) { _, _ in
            try JSONBody.response(HealthResponse(status: "ok", database: database.dialect.rawValue,
                                                 databaseReachable: database.isReachable))
        }
        // Readiness: whether this instance should get traffic.
        routes.on(.ready) { _, _ in
            let report = await readiness.check()
            return try JSONBody.response(report, status: report.status == "ready" ? .ok : .serviceUnavailable)
        }
        routes.on(.openAPI) { _, _ in
            Reply(status: .ok, body: ByteBuffer(bytes: APIDocument.data))
        }
    }
}
