#if canImport(SwiftUI)
import DriverKit
import VroomXModels
import SwiftUI

/// Earnings: pay per week and per month, and the completed trips behind it.
struct EarningsView: View {
    let model: EarningsViewModel
    @State private var byMonth = false

    var body: some View {
        NavigationStack {
            List {
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
        }
    }
}
#endif
