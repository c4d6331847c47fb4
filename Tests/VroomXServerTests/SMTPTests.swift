import Foundation
import Logging
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Sign-in codes through a real SMTP server process (aiosmtpd), not a fake.
@Suite("Email over SMTP", .enabled(if: SMTPTestServer.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true",
                                   "needs python3 with aiosmtpd (pip install aiosmtpd cryptography)"))
struct SMTPTests {
    @Test("a driver signs in with the code the SMTP server received")
    func signInThroughSMTP() async throws {
        let smtp = try await SMTPTestServer.start()
        let server = try await TestServer.make(.sqlite) {
            $0.mailer = nil
            $0.smtpURL = "smtp://127.0.0.1:\(smtp.port)"
        }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let email = carrier.driver.user.email
        try await server.run { api in
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: email)).status == 202)
            let message = parseMail(try #require(try await smtp.waitForMessages(1).first))
            #expect(message.headers["to"] == "<\(email)>")
            #expect(message.headers["subject"]?.hasPrefix("Your VroomX sign-in code") == true)
            let code = try #require(message.body.range(of: #"\d{6}"#, options: .regularExpression).map { String(message.body[$0]) })
            let session = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: code))
            #expect(session.status == 200)
        }
        await smtp.stop()
    }

    @Test("a subject with a line break or letters outside ASCII is encoded, so no name can start a header of its own")
    func subjectsAreEncoded() throws {
        for subject in ["Alpha\r\nBcc: someone@elsewhere.example invited you to VroomX", "Café Hauling invited you to VroomX"] {
            let text = SMTPMailer.render(MailMessage(to: "d@alpha.example", subject: subject, body: "Hello"), from: "<vroomx@alpha.example>")
            let headers = text.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n")
            #expect(!headers.contains { $0.hasPrefix("Bcc") })
            let encoded = try #require(headers.first { $0.hasPrefix("Subject: ") }?.dropFirst("Subject: ".count))
            #expect(encoded == "=?UTF-8?B?\(Data(subject.utf8).base64EncodedString())?=")
        }
    }

    @Test("STARTTLS and AUTH PLAIN")
    func startTLSAndAuth() async throws {
        let smtp = try await SMTPTestServer.start(tls: true, credentials: ("mailer", "s3cret"))
        let mailer = try SMTPMailer(url: "smtp://mailer:s3cret@127.0.0.1:\(smtp.port)?starttls=required&tls_verify=false",
                                    from: "VroomX <no-reply@vroomx.example>", logger: Logger(label: "test"))
        try await mailer.send(MailMessage(to: "driver@example.com", subject: "Grüße", body: "Line one\n.\nLine with a dot"))
        let message = parseMail(try #require(try await smtp.waitForMessages(1).first))
        #expect(message.headers["from"] == "VroomX <no-reply@vroomx.example>")
        #expect(message.headers["subject"] == "=?UTF-8?B?R3LDvMOfZQ==?=")
        #expect(message.body == "Line one\n.\nLine with a dot")
        await smtp.stop()
    }

    @Test("wrong credentials, missing STARTTLS and plaintext credentials are refused")
    func failures() async throws {
        let secured = try await SMTPTestServer.start(tls: true, credentials: ("mailer", "s3cret"))
        let wrongPassword = try SMTPMailer(url: "smtp://mailer:nope@127.0.0.1:\(secured.port)?tls_verify=false",
                                           from: "a@b.example", logger: Logger(label: "test"))
        await #expect(throws: SMTPError.self) { try await wrongPassword.send(MailMessage(to: "x@y.example", subject: "s", body: "b")) }
        await secured.stop()

        let plain = try await SMTPTestServer.start()
        let requiresTLS = try SMTPMailer(url: "smtp://127.0.0.1:\(plain.port)?starttls=required", from: "a@b.example", logger: Logger(label: "test"))
        await #expect(throws: SMTPError.self) { try await requiresTLS.send(MailMessage(to: "x@y.example", subject: "s", body: "b")) }
        let plaintextCredentials = try SMTPMailer(url: "smtp://user:pw@127.0.0.1:\(plain.port)", from: "a@b.example", logger: Logger(label: "test"))
        await #expect(throws: SMTPError.self) { try await plaintextCredentials.send(MailMessage(to: "x@y.example", subject: "s", body: "b")) }
        #expect(try plain.messages().isEmpty)
        await plain.stop()
    }
}
