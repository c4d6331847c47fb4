import Foundation
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// The `vroomx` binary as an operator uses it: migrate, create a carrier,
/// serve, sign in with the code from the log, stop with SIGTERM.
@Suite("vroomx command")
struct ServerCommandTests {
    @Test("migrate, tenant create, serve, sign in, graceful shutdown", arguments: TestBackend.available)
    func operatorFlow(_ backend: TestBackend) async throws {
        let configuration = try await backend.freshConfiguration()
        var environment = ["VROOMX_DATA_DIR": configuration.dataDirectory.path, "VROOMX_LOG_LEVEL": "info"]
        if let url = configuration.databaseURL { environment["VROOMX_DATABASE_URL"] = url }

        let migrate = try await VroomXBinary.run(["migrate"], environment: environment)
        #expect(migrate.status == 0, "\(migrate.output)")
        #expect(migrate.output.contains("schema version"))

        let create = try await VroomXBinary.run(["tenant", "create", "--name", "Acme Hauling", "--dispatcher-email", "Boss@Acme.example"],
                                                environment: environment)
        #expect(create.status == 0, "\(create.output)")
        #expect(create.output.contains("boss@acme.example"))
        let duplicate = try await VroomXBinary.run(["tenant", "create", "--name", "Other", "--dispatcher-email", "boss@acme.example"],
                                                   environment: environment)
        #expect(duplicate.status != 0)
        #expect(duplicate.output.contains("already exists"))

        // Without a mail server, serving would print everyone's sign-in codes to the log: it refuses unless asked.
        let refused = try await VroomXBinary.run(["serve", "--port", String(try ChildProcess.freePort())], environment: environment)
        #expect(refused.status != 0 && refused.output.contains("VROOMX_SMTP_URL"), "\(refused.output)")
        environment["VROOMX_DEV_MAILBOX"] = "true"

        let port = try ChildProcess.freePort()
        let server = try VroomXBinary.start(["serve", "--port", String(port)], environment: environment)
        try await server.waitFor("listening on 127.0.0.1:\(port)")
        #expect(server.text.contains("push notifications are not configured"))
        let client = HTTPTestClient(baseURL: "http://127.0.0.1:\(port)")
        let sent = try await client.send(.sendCode, json: SendCodeRequest(email: "boss@acme.example"))
        #expect(sent.status == 202)
        let code = try await codeFromLog(server, email: "boss@acme.example")
        let session = try await client.send(.verifyCode, json: VerifyCodeRequest(email: "boss@acme.example", code: code)).decode(AuthSession.self)
        #expect(session.user.role == .dispatcher)
        let driver = try await client.send(.dispatchCreateDriver, json: CreateDriverRequest(
            email: "driver@acme.example", name: "Dana", payType: .perMile, payRate: 60), token: session.accessToken)
        #expect(driver.status == 201)

        await server.stop()
        #expect(server.exitStatus == 0, "\(server.text)")
    }

    func codeFromLog(_ process: ChildProcess, email: String) async throws -> String {
        try await process.waitFor("sign-in code:")
        let lines = process.text.split(separator: "\n").filter { $0.contains(email) && $0.contains("sign-in code:") }
        guard let line = lines.last, let range = line.range(of: #"code: \d{6}"#, options: .regularExpression) else {
            throw ProcessError("no code in the log: \(process.text)")
        }
        return String(line[range].suffix(6))
    }
}
