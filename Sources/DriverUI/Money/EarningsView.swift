#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI

/// Earnings: this week's settlement and the weeks dispatch settled (each
/// with its statement), pay per week and per month, and the completed trips.
struct EarningsView: View {
    let model: EarningsViewModel
    @State private var byMonth = false

    var body: some View {
        NavigationStack {
            List {
                let settlements = model.settlements
                if let current = settlements.current {
                    Section("This week · \(current.title)") {
                        SettlementWeekRows(week: current, model: model)
                    }
                }
                if !settlements.past.isEmpty {
                    Section("Settlements") {
                        ForEach(settlements.past) { week in
                            NavigationLink {
                                List { SettlementWeekRows(week: week, model: model) }.navigationTitle(week.title)
                            } label: {
                                LabeledContent(week.title) {
                                    VStack(alignment: .trailing) {
                                        Text(week.net).font(.headline).foregroundStyle(week.negative ? .red : .primary)
                                        Text(week.status).font(.caption)
                                    }
                                }
                            }
                            .accessibilityElement(children: .combine)
                        }
                    }
                }
                if let problem = model.settlementsProblem {
                    Section { Text(problem).font(.footnote).foregroundStyle(.secondary) }
                }
                let state = model.state
                Section {
                    LabeledContent("Earned", value: MoneyFormat.dollars(state.totalCents))
                    LabeledContent("On trips not finished", value: MoneyFormat.dollars(state.upcomingPayCents))
                }
                Section {
                    Picker("Period", selection: $byMonth) {
                        Text("By week").tag(false)
                        Text("By month").tag(true)
                    }
                    .pickerStyle(.segmented)
                    ForEach(byMonth ? state.months : state.weeks) { period in
                        LabeledContent(period.title) {
                            VStack(alignment: .trailing) {
                                Text(MoneyFormat.dollars(period.payCents)).font(.headline)
                                Text("\(period.trips) trip\(period.trips == 1 ? "" : "s")").font(.caption)
                            }
                        }
                        .accessibilityElement(children: .combine)
                    }
                }
                Section("Completed trips") {
                    ForEach(state.completed) { pay in
                        LabeledContent(pay.trip.number) {
                            VStack(alignment: .trailing) {
                                Text(MoneyFormat.dollars(pay.payCents))
                                if pay.expensesCents > 0 { Text("expenses \(MoneyFormat.dollars(pay.expensesCents))").font(.caption) }
                            }
                        }
                        .accessibilityElement(children: .combine)
                    }
                }
            }
            .navigationTitle("Earnings")
            .task { await model.refreshSettlements() }
            .refreshable { await model.refreshSettlements() }
        }
    }
}

/// One week's settlement: its lines, net pay and status, and its statement once settled.
private struct SettlementWeekRows: View {
    let week: SettlementsState.Week
    let model: EarningsViewModel
    @State private var statement: URL?
    @State private var problem: String?

    var body: some View {
        ForEach(week.lines) { line in
            LabeledContent {
                Text(line.amount).foregroundStyle(line.takesOff ? .red : .primary)
            } label: {
                VStack(alignment: .leading) {
                    Text(line.what).font(.subheadline)
                    Text(line.description).font(.caption).foregroundStyle(.secondary)
                }
            }
            .accessibilityElement(children: .combine)
        }
        LabeledContent("Net pay", value: week.net).font(.headline)
        Text(week.status).font(.footnote).foregroundStyle(.secondary)
        if week.settlementID != nil {
            if let statement {
                ShareLink("Share statement", item: statement)
            } else {
                Button("Get statement (PDF)") {
                    Task {
                        do { statement = try await model.statementFile(week) } catch { problem = "\(error)" }
                    }
                }
            }
        }
        if let problem { Text(problem).font(.footnote).foregroundStyle(.red) }
    }
}
#endif
