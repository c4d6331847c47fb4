import Foundation
import HTTPTypes
import Logging
import Hummingbird
import NIOCore
import VroomXModels
import VroomXSecurity

/// The dispatch console: the carrier's office in the browser, served by the
/// same binary over the same store and services as the API. Pages are
/// rendered on the server; a little script adds live updates and keys.
///
/// Safety: a session cookie (`HttpOnly`, `SameSite=Lax`, `Secure` behind a
/// proxy that says the browser came over HTTPS) with idle and absolute
/// expiry; every form and state-changing request carries the session's
/// CSRF token (sign-in forms a double-submit cookie); a strict CSP; drivers
/// are refused; another carrier's ids are simply not found.
struct ConsoleController {
    let pages: ConsolePages
    let store: Store
    let auth: AuthService
    let invitations: DriverInvitations
    let policy: AuthPolicy
    let trustedProxyHops: Int
    let hub: ChangeHub
    /// Live streams count with the realtime sockets.
    let live: RealtimeCapacity
    let media: any MediaStorage
    /// Photos of units go through the same upload path as the API's.
    let uploads: UploadService
    /// Carriers with an order import under way on this instance.
    let imports = CarrierTurns()
    /// Each carrier's pages in the making on this instance.
    let lanes = CarrierLanes()
    /// Tiles behind the map, when the carrier configured a tile server.
    var mapTiles: MapTiles? = nil
    /// Fills in stops' coordinates from their addresses, when a geocoder is configured.
    var stops = StopLocator(geocoder: nil, logger: Logger(label: "vroomx"))
    /// Customers' tracking links (signed with the server's key).
    var tracking: TrackingService? = nil

    static let sessionCookie = "vroomx_console"
    static let signInCookie = "vroomx_signin"
    /// Forms are small; the CSV import is the largest.
    static let maxFormBytes = 4 << 20
    /// A sign-in form is an email, a code and two tokens; before a session
    /// exists nobody may make the server read more.
    static let maxSignInBytes = 4 << 10

    func register(_ router: Router<AppRequestContext>) {
        router.get("/") { request, _ in
            let signedIn = try await session(request) != nil
            return ConsolePages.redirect(signedIn ? "/board" : "/sign-in")
        }
        router.get("/console/static/:name") { _, context in
            try pages.asset(context.parameters.get("name") ?? "")
        }
        // Browsers ask for it on their own, whatever the page says.
        router.get("/favicon.ico") { _, _ in try pages.asset("favicon.svg") }
        registerSignIn(router)
        ConsoleOrderPages(console: self).register(router)
        ConsoleTripPages(console: self).register(router)
        ConsolePeoplePages(console: self).register(router)
        ConsoleConversationPages(console: self).register(router)
        ConsoleFleetPages(console: self).register(router)
        ConsoleCustomerPages(console: self).register(router)
        ConsoleInvoicePages(console: self).register(router)
        ConsoleSettlementPages(console: self).register(router)
        ConsoleSettingsPages(console: self).register(router)
        ConsoleUnitPages(console: self).register(router)
        ConsoleMapPages(console: self).register(router)
        ConsoleLive(console: self).register(router)
    }

    // MARK: Pages behind sign-in

    func get(_ router: Router<AppRequestContext>, _ path: String,
             _ handler: @escaping @Sendable (ConsoleRequest) async throws -> Response) {
        router.get(RouterPath(path)) { request, context in
            guard let session = try await session(request) else {
                // Back to the page asked for after signing in, with its query (the board's tab, a search, a page).
                let asked = request.uri.path + (request.uri.query.map { $0.isEmpty ? "" : "?" + $0 } ?? "")
                return ConsolePages.redirect("/sign-in?next=" + ConsolePages.queryValue(asked))
            }
            return await rendering(session) {
                try await handler(ConsoleRequest(request: request, context: context, session: session, form: ConsoleForm()))
            }
        }
    }

    /// A state-changing request: it must carry the session's CSRF token (a
    /// form's `_csrf` field, or the `X-CSRF-Token` header from the page's
    /// script) and, when the browser names its origin, come from this site.
    ///
    /// `page`: for an address that has no page of its own, the page (a path
    /// template with the same parameters) that opening it shows instead. A
    /// refused form is answered at the address it posted to, and the
    /// dispatcher may open that address again from the address bar.
    func post(_ router: Router<AppRequestContext>, _ path: String, page: String? = nil,
              _ handler: @escaping @Sendable (ConsoleRequest) async throws -> Response) {
        if let page { opens(router, path, page) }
        router.post(RouterPath(path)) { request, context in
            // Signed out meanwhile: nothing is saved; sign in again.
            guard let session = try await session(request) else { return ConsolePages.redirect("/sign-in?expired=1") }
            return await rendering(session) {
                let form = try await Self.readForm(request)
                try checkCSRF(request, token: request.headers[.csrfToken] ?? form["_csrf"], session: session)
                return try await handler(ConsoleRequest(request: request, context: context, session: session, form: form))
            }
        }
    }

    /// A file sent by a page's script as the request body (streamed, never
    /// held whole): the session's CSRF token comes in the `X-CSRF-Token`
    /// header, and errors are answered in the API's JSON shape for the
    /// script to show.
    func postFile(_ router: Router<AppRequestContext>, _ path: String, page: String,
                  _ handler: @escaping @Sendable (ConsoleRequest) async throws -> Response) {
        opens(router, path, page)
        router.post(RouterPath(path)) { request, context in
            guard let session = try await session(request) else { throw AppError(401, .missingToken, "Sign in again.") }
            try checkCSRF(request, token: request.headers[.csrfToken] ?? "", session: session)
            return try await ActingUser.$current.withValue(session.identity.user) {
                try await handler(ConsoleRequest(request: request, context: context, session: session, form: ConsoleForm()))
            }
        }
    }

    /// Opening `path` (a form's address) shows `page` instead.
    private func opens(_ router: Router<AppRequestContext>, _ path: String, _ page: String) {
        router.get(RouterPath(path)) { _, context in ConsolePages.redirect(Self.fill(page, context.parameters)) }
    }

    /// `template` with each `:name` segment replaced by that parameter.
    static func fill(_ template: String, _ parameters: Parameters) -> String {
        let safe = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_."))
        return template.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            guard segment.hasPrefix(":") else { return String(segment) }
            // Parameters arrive as the address had them, percent-encoded: decoded first, so encoded once.
            let raw = parameters.get(String(segment.dropFirst())) ?? ""
            return (raw.removingPercentEncoding ?? raw).addingPercentEncoding(withAllowedCharacters: safe) ?? ""
        }.joined(separator: "/")
    }

    /// A browser asked for an address that is no page: the console's own
    /// "not found" page, in the frame when signed in. API paths, other
    /// methods and clients that do not ask for HTML keep the JSON answer.
    func routeMissPage(_ request: Request) async -> Response? {
        guard request.method == .get || request.method == .head, !request.uri.path.hasPrefix("/v1/"),
              (request.headers[.accept] ?? "").contains("text/html") else { return nil }
        let session = try? await session(request)
        let heading = "Page not found"
        var page = pages.page("message", title: heading, session: session ?? nil, MessagePageView(
            heading: heading, text: "There is no page at \(request.uri.path). It may have moved, or the address is mistyped.",
            code: ErrorCode.routeNotFound.rawValue), status: .notFound)
        if request.method == .head { page.body = ResponseBody() }
        return page
    }

    /// The session's CSRF token, from a page of this site.
    private func checkCSRF(_ request: Request, token: String, session: ConsoleSession) throws {
        guard sameOrigin(request), constantTimeEqual(Array(token.utf8), Array(session.csrfToken.utf8)) else {
            throw AppError(403, .csrfFailed, "This form has expired or did not come from this page. Reload the page and try again.")
        }
    }

    /// Errors a page did not handle itself become an error page in the frame.
    private func rendering(_ session: ConsoleSession, _ body: () async throws -> Response) async -> Response {
        do {
            return try await lanes.run(session.identity.tenant) {
                try await ActingUser.$current.withValue(session.identity.user) { try await body() }
            }
        } catch {
            let appError = ErrorMiddleware.appError(for: error)
            let heading = switch appError.status {
            case 404: "Not found"
            case 403: "Not allowed"
            case 429: "Too many pages at once"
            case 503, 507: "The server is busy"
            default: "Something went wrong"
            }
            var page = pages.page("message", title: heading, session: session,
                                  MessagePageView(heading: heading, text: appError.body.message, code: appError.body.code.rawValue),
                                  status: HTTPResponse.Status(code: appError.status))
            // Busy: say when to come back (a script's retry, a proxy, a person reloading).
            if let retryAfter = appError.headers["Retry-After"] { page.headers[.retryAfter] = retryAfter }
            return page
        }
    }

    /// The posted form (pages post only forms; any other body reads as empty).
    static func readForm(_ request: Request, limit: Int = maxFormBytes) async throws -> ConsoleForm {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw AppError(413, .payloadTooLarge, "That is more than \(limit >> 10) KB; send it in parts.")
        }
        guard (request.headers[.contentType] ?? "").hasPrefix("application/x-www-form-urlencoded") else { return ConsoleForm() }
        return ConsoleForm(encoded: String(buffer: buffer))
    }

    /// A browser's `Origin` (or, without it, `Referer`) names this host
    /// (behind a trusted proxy, the host the browser asked the proxy for).
    func sameOrigin(_ request: Request) -> Bool {
        let forwarded = trustedProxyHops > 0 ? request.headers[.forwardedHost]?.split(separator: ",").last.map {
            $0.trimmingCharacters(in: .whitespaces)
        } : nil
        guard let host = forwarded ?? request.head.authority else { return false }
        let origin = request.headers[.origin] ?? request.headers[.referer]
        guard let origin, origin != "null" else { return request.headers[.origin] == nil }
        guard let url = URL(string: origin), let originHost = url.host else { return false }
        let originAuthority = url.port.map { "\(originHost):\($0)" } ?? originHost
        return originAuthority.lowercased() == host.lowercased()
    }

    // MARK: Sessions

    /// The signed-in dispatcher of a request's cookie, if the session is live.
    func session(_ request: Request) async throws -> ConsoleSession? {
        guard let token = Self.cookie(Self.sessionCookie, in: request), token.utf8.count <= 128 else { return nil }
        let hash = SecureToken.sha256Hex(token)
        guard let session = try await store.consoleSession(tokenHash: hash, idleTimeout: policy.consoleIdleTimeout),
              session.identity.role == .dispatcher else { return nil }
        // One write a minute at most restarts the idle clock.
        if store.now.timeIntervalSince(session.lastUsedAt) > 60 { try await store.touchConsoleSession(tokenHash: hash) }
        return session
    }

    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// Behind a trusted proxy that says the browser used HTTPS, the cookie
    /// is only ever sent back over HTTPS.
    func setCookie(_ name: String, _ value: String, maxAge: Int, _ request: Request) -> String {
        let forwardedHTTPS = trustedProxyHops > 0 && request.headers[.forwardedProto]?.lowercased() == "https"
        return "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Lax" + (forwardedHTTPS ? "; Secure" : "")
    }

    // MARK: Sign-in

    private func registerSignIn(_ router: Router<AppRequestContext>) {
        router.get("/sign-in") { request, _ in
            if try await session(request) != nil { return ConsolePages.redirect("/board") }
            return signInPage(request, step: .email, values: [:], errors: FieldErrors())
        }
        router.post("/sign-in") { request, context in
            let form = try await Self.readForm(request, limit: Self.maxSignInBytes)
            guard sameOrigin(request), signInTokenMatches(request, form) else { return signInExpired(request) }
            do {
                let client = ClientAddress.of(request, peer: context.peerAddress, trustedHops: trustedProxyHops)
                _ = try await auth.sendCode(SendCodeRequest(email: form["email"]), clientAddress: client)
                return signInPage(request, step: .code, values: ["email": form["email"], "next": form["next"]], errors: FieldErrors(),
                                  notice: "If \(form["email"]) belongs to a VroomX dispatcher, a 6-digit code is on its way. It is valid for 10 minutes.",
                                  resendWait: Int(policy.codeResendInterval))
            } catch let error as AppError where error.code == .rateLimited && error.body.field == "email" {
                // Asked again within the minute (one code per email a minute): the latest code, unless used, still works.
                return signInPage(request, step: .code, values: ["email": form["email"], "next": form["next"]], errors: FieldErrors(),
                                  notice: "A code was sent to \(form["email"]) less than a minute ago: enter the newest one from your email.",
                                  noticeWait: Int(error.headers["Retry-After"] ?? "") ?? 60,
                                  resendWait: Int(error.headers["Retry-After"] ?? ""), status: .tooManyRequests)
            } catch let error as AppError {
                return signInPage(request, step: .email, values: form.firstValues, errors: FieldErrors(error, fallbackField: "email"),
                                  status: .init(code: error.status))
            }
        }
        // The code step's address, opened again: start over at the email step.
        router.get("/sign-in/code") { _, _ in ConsolePages.redirect("/sign-in") }
        router.post("/sign-in/code") { request, context in
            let form = try await Self.readForm(request, limit: Self.maxSignInBytes)
            guard sameOrigin(request), signInTokenMatches(request, form) else { return signInExpired(request) }
            do {
                let client = ClientAddress.of(request, peer: context.peerAddress, trustedHops: trustedProxyHops)
                let verify = VerifyCodeRequest(email: form["email"], code: form["code"], carrierID: ID(form["carrier"]))
                let token = try await auth.signInToConsole(verify, clientAddress: client)
                let destination = Self.isLocalPath(form["next"]) ? form["next"] : "/board"
                return ConsolePages.redirect(destination, headers: [
                    .setCookie: setCookie(Self.sessionCookie, token, maxAge: Int(policy.consoleSessionLifetime), request),
                ])
            } catch let error as AppError where error.code == .carrierRequired {
                // A person who dispatches for several carriers: the same code signs in to the one chosen.
                let carriers = (error.body.carriers ?? []).map { SignInView.Carrier(id: $0.id.rawValue, name: $0.name) }
                return signInPage(request, step: .carrier, values: ["email": form["email"], "code": form["code"], "next": form["next"]],
                                  errors: FieldErrors(), carriers: carriers)
            } catch let error as AppError where error.status == 403 {
                return signInPage(request, step: .email, values: [:], errors: FieldErrors(error, fallbackField: "email"), status: 403)
            } catch let error as AppError {
                let errors = FieldErrors(error, fallbackField: "code")
                // The new-code button keeps counting down (without the wait, the page no longer shows it): no wait is better than no page.
                let wait = try? await auth.codeResendWait(email: form["email"])
                return signInPage(request, step: .code, values: ["email": form["email"], "next": form["next"]], errors: errors,
                                  resendWait: wait, status: .init(code: error.status))
            }
        }
        post(router, "/sign-out", page: "/") { request in
            if let token = Self.cookie(Self.sessionCookie, in: request.request) {
                try await store.endConsoleSession(tokenHash: SecureToken.sha256Hex(token))
            }
            return ConsolePages.redirect("/sign-in", headers: [.setCookie: setCookie(Self.sessionCookie, "", maxAge: 0, request.request)])
        }
    }

    enum SignInStep { case email, code, carrier }

    /// The sign-in page; its forms carry a token that must match a cookie
    /// set here (double submit), as no session exists yet.
    private func signInPage(_ request: Request, step: SignInStep, values: [String: String], errors: FieldErrors,
                            notice: String? = nil, noticeWait: Int? = nil, resendWait: Int? = nil,
                            carriers: [SignInView.Carrier] = [], status: HTTPResponse.Status = .ok) -> Response {
        let token = Self.cookie(Self.signInCookie, in: request).flatMap { Self.isToken($0) ? $0 : nil }
            ?? SecureToken.random()
        var values = values
        if values["next"] == nil { values["next"] = request.uri.queryParameters.get("next").map { String($0) } ?? "" }
        var response = pages.page("sign-in", title: "Sign in", session: nil, SignInView(
            stepEmail: step == .email, stepCode: step == .code, stepCarrier: step == .carrier, carriers: carriers,
            v: values, e: errors.messages, notice: notice, signinToken: token,
            resendWait: resendWait.flatMap { (1...3600).contains($0) ? $0 : nil },
            noticeWait: noticeWait.flatMap { (1...3600).contains($0) ? $0 : nil }), status: status)
        response.headers[.setCookie] = setCookie(Self.signInCookie, token, maxAge: 3600, request)
        return response
    }

    /// Only a plain path of this site may follow sign-in: a letter after the
    /// first slash and nothing a browser would strip or reinterpret (tabs,
    /// backslashes, a second slash), so it can never lead elsewhere.
    static func isLocalPath(_ path: String) -> Bool {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-_.?=&%+,")
        let scalars = Array(path.unicodeScalars)
        return path.utf8.count <= 512 && scalars.count >= 2 && scalars[0] == "/" && CharacterSet.lowercaseLetters.contains(scalars[1])
            && scalars.allSatisfy { $0.isASCII && allowed.contains($0) } && !path.contains("//")
    }

    /// What `SecureToken.random()` makes: 43 base64url characters.
    static func isToken(_ text: String) -> Bool {
        text.utf8.count == 43 && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") }
    }

    private func signInTokenMatches(_ request: Request, _ form: ConsoleForm) -> Bool {
        guard let cookie = Self.cookie(Self.signInCookie, in: request) else { return false }
        return constantTimeEqual(Array(cookie.utf8), Array(form["_signin"].utf8))
    }

    private func signInExpired(_ request: Request) -> Response {
        var errors = FieldErrors()
        errors.add("email", "This sign-in form expired. Enter your email again.")
        return signInPage(request, step: .email, values: [:], errors: errors, status: .forbidden)
    }
}

extension HTTPField.Name {
    static let csrfToken = HTTPField.Name("X-CSRF-Token")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!
}
