import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Drivers write to dispatch and dispatch answers: each message once, on
/// its trip or order thread, with who read what; another carrier or driver
/// never sees it.
@Suite("Conversations with drivers")
struct ConversationTests {
    /// Times as stored: to the millisecond.
    func ms(_ date: Date?) -> Int64? { date.map(WireTime.milliseconds) }

    @Test("a driver's message reaches dispatch's inbox once, unread; opening it reads it (the driver's feed says so); dispatch replies on the thread; an urgent message is answered Got it", arguments: TestBackend.available)
    func bothWays(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        try await server.run { api in
            let (driver, dispatch) = (alpha.drivers[0].accessToken, alpha.dispatcher.accessToken)
            let trip = alpha.trips[0][0]
            let order = alpha.orders[trip.id]![0]
            let message = SendDriverMessageRequest(body: "  Customer not at the gate — waiting.  ", orderID: order.id,
                                                   sentAt: server.clock.now.addingTimeInterval(-600))
            let sent = try await api.call(.sendMessage, json: message, token: driver)
            #expect(sent.status == 201, "\(sent.text)")
            let stored = try sent.decode(DriverMessage.self)
            #expect(stored.body == "Customer not at the gate — waiting." && stored.orderID == order.id && stored.readByDispatchAt == nil)
            #expect(ms(stored.sentAt) == ms(server.clock.now.addingTimeInterval(-600)), "sent when the phone says, not when it arrived")
            // Again (a lost answer): the same message, recorded once.
            let again = try await api.call(.sendMessage, json: message, token: driver)
            let replayed = try again.decode(DriverMessage.self)
            #expect(again.status == 201 && replayed == stored)
            var other = message
            other.body = "Something else"
            let reused = try await api.call(.sendMessage, json: other, token: driver)
            #expect(reused.status == 409 && reused.error?.code == .idempotencyKeyReused, "\(reused.text)")
            // Refused: empty, too long, another driver's order, another carrier's trip.
            for (bad, code) in [(SendDriverMessageRequest(body: "   "), 422), (SendDriverMessageRequest(body: String(repeating: "x", count: 2001)), 422),
                                (SendDriverMessageRequest(body: "hi", orderID: alpha.orders[alpha.trips[1][0].id]![0].id), 404),
                                (SendDriverMessageRequest(body: "hi", tripID: beta.trips[0][0].id), 404)] {
                let answer = try await api.call(.sendMessage, json: bad, token: driver)
                #expect(answer.status == code, "\(answer.text)")
            }
            #expect(try await api.call(.sendMessage, json: SendDriverMessageRequest(body: "hi"), token: dispatch).status == 403)

            // Dispatch's inbox: one conversation, unread; another carrier's is empty.
            var inbox = try await api.call(.dispatchConversations, token: dispatch).decode(Items<ConversationSummary>.self).items
            #expect(inbox.count == 1 && inbox[0].driverID == alpha.driverID(0) && inbox[0].unread == 1 && inbox[0].lastFrom == .driver, "\(inbox)")
            #expect(try await api.call(.dispatchConversations, token: beta.dispatcher.accessToken).decode(Items<ConversationSummary>.self).items.isEmpty)
            #expect(try await api.call(.dispatchConversation, alpha.driverID(0).rawValue, token: beta.dispatcher.accessToken).status == 404)
            // Read: the driver's feed carries the read time.
            let cursor = try await api.call(.sync, query: "since=0&limit=1000", token: driver).decode(SyncPage.self).cursor
            #expect(try await api.call(.dispatchReadConversation, alpha.driverID(0).rawValue, token: dispatch).status == 204)
            let feed = try await api.call(.sync, query: "since=\(cursor)", token: driver).decode(SyncPage.self)
            let readRow = feed.changes.compactMap { change -> DriverMessage? in if case .message(let read)? = change.row { return read }; return nil }
            #expect(readRow.count == 1 && ms(readRow.first?.readByDispatchAt) == ms(server.clock.now), "\(feed.changes.map(\.entity))")
            inbox = try await api.call(.dispatchConversations, token: dispatch).decode(Items<ConversationSummary>.self).items
            #expect(inbox[0].unread == 0)

            // A reply on the order's thread, then an urgent one the driver answers.
            server.clock.advance(by: 60)
            let reply = try await api.call(.dispatchSendMessage, json: SendMessageRequest(
                driverID: alpha.driverID(0), type: .dispatchMessage, title: "Dispatch replied", body: "Wait 20 min, then call.",
                tripID: trip.id, orderID: order.id), token: dispatch)
            #expect(reply.status == 201)
            server.clock.advance(by: 60)
            let urgent = try await api.call(.dispatchSendMessage, json: SendMessageRequest(
                driverID: alpha.driverID(0), type: .urgent, title: "Road closed", body: "I-80 closed at exit 12"), token: dispatch).decode(DriverNotification.self)
            #expect(try await api.call(.acknowledgeNotification, reply.decode(DriverNotification.self).id.rawValue, token: driver).status == 409,
                    "only an urgent message takes Got it")
            server.clock.advance(by: 30)
            let acknowledged = try await api.call(.acknowledgeNotification, urgent.id.rawValue, token: driver).decode(DriverNotification.self)
            #expect(ms(acknowledged.acknowledgedAt) == ms(server.clock.now) && ms(acknowledged.readAt) == ms(server.clock.now))
            server.clock.advance(by: 30)
            #expect(try await api.call(.acknowledgeNotification, urgent.id.rawValue, token: driver).decode(DriverNotification.self) == acknowledged,
                    "the first Got it stays")
            #expect(try await api.call(.acknowledgeNotification, urgent.id.rawValue, token: alpha.drivers[1].accessToken).status == 404)

            // The conversation, oldest first: the driver's, the reply, the urgent one answered.
            let lines = try await api.call(.dispatchConversation, alpha.driverID(0).rawValue, token: dispatch).decode(Items<ConversationLine>.self).items
            #expect(lines.map(\.from) == [.driver, .dispatch, .dispatch], "\(lines)")
            #expect(lines[0].readAt != nil && lines[1].orderID == order.id && lines[2].urgent && lines[2].acknowledgedAt == acknowledged.acknowledgedAt)
            // The server's notices about work are not lines of it.
            #expect(!lines.contains { $0.title.hasPrefix("New trip") })
            inbox = try await api.call(.dispatchConversations, token: dispatch).decode(Items<ConversationSummary>.self).items
            #expect(inbox[0].lastFrom == .dispatch && inbox[0].lastBody == "I-80 closed at exit 12")
        }
    }

    @Test("offline: the same message as a mutation twice is one message; Got it as a mutation keeps the phone's time", arguments: TestBackend.available)
    func asMutations(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run { api in
            let driver = alpha.drivers[0].accessToken
            let urgent = try await server.store.notifications.send(SendMessageRequest(
                driverID: alpha.driverID(0), type: .urgent, title: "Call me", body: "Now"), tenant: alpha.tenant.id)
            server.clock.advance(by: 300)
            let tapped = server.clock.now.addingTimeInterval(-120)
            let batch = MutationBatch([
                Mutation(.sendMessage(.init(body: "On my way", tripID: alpha.trips[0][0].id, sentAt: tapped))),
                Mutation(.acknowledgeNotification(.init(notificationID: urgent.id, readAt: tapped))),
            ])
            for _ in 0..<2 {
                let results = try await api.call(.mutations, json: batch, token: driver).decode(MutationBatchResult.self).results
                #expect(results.allSatisfy { $0.outcome == .applied }, "\(results)")
            }
            let lines = try await server.store.conversations.conversation(with: alpha.driverID(0), tenant: alpha.tenant.id)
            #expect(lines.filter { $0.from == .driver }.count == 1)
            #expect(ms(lines.first { $0.from == .dispatch }?.acknowledgedAt) == ms(tapped))
        }
    }

    @Test("a message names the driver's own work, consistently; a flood stops at 120 an hour; dispatch writes about the recipient's work only", arguments: TestBackend.available)
    func boundsAndReferences(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 2)
        try await server.run { api in
            let driver = alpha.drivers[0].accessToken
            let (trip, otherTrip) = (alpha.trips[0][0], alpha.trips[0][1])
            let order = alpha.orders[trip.id]![0]
            let mismatched = try await api.call(.sendMessage, json: SendDriverMessageRequest(body: "hi", tripID: otherTrip.id, orderID: order.id),
                                                token: driver)
            #expect(mismatched.status == 422 && mismatched.error?.field == "order_id", "\(mismatched.text)")
            // Dispatch about another driver's work: refused, named.
            for request in [SendMessageRequest(driverID: alpha.driverID(1), type: .dispatchMessage, title: "x", body: "y", tripID: trip.id),
                            SendMessageRequest(driverID: alpha.driverID(1), type: .dispatchMessage, title: "x", body: "y", orderID: order.id)] {
                let refused = try await api.call(.dispatchSendMessage, json: request, token: alpha.dispatcher.accessToken)
                #expect(refused.status == 422 && refused.text.contains("is not Driver 1 of Alpha's"), "\(refused.text)")
            }
            // 120 in an hour (all in one batch, as a phone back from a dead zone sends them), then no more until it passes.
            let batch = MutationBatch((0..<121).map { Mutation(.sendMessage(.init(body: "message \($0)"))) })
            let results = try await api.call(.mutations, json: batch, token: driver).decode(MutationBatchResult.self).results
            #expect(results.filter { $0.outcome == .applied }.count == 120, "\(results.last.map { "\($0)" } ?? "")")
            #expect(results.last?.code == .rateLimited)
            server.clock.advance(by: 3601)
            let (later, dispatch) = (try await server.services.signIn(email: alpha.drivers[0].user.email),
                                     try await server.services.signIn(email: alpha.dispatcher.user.email))
            #expect(try await api.call(.sendMessage, json: SendDriverMessageRequest(body: "later"), token: later.accessToken).status == 201)
            // The inbox still reads the newest line of each conversation.
            let inbox = try await api.call(.dispatchConversations, token: dispatch.accessToken).decode(Items<ConversationSummary>.self).items
            #expect(inbox.first?.lastBody == "later" && inbox.first?.unread == 121, "\(inbox)")
        }
    }
}
