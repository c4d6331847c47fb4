#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// The lock screen (seed 004 paths B and C): "Welcome back, Alex", the PIN
/// pad, Face ID when turned on; five wrong PINs lead to email sign-in.
struct LockView: View {
    @State private var model: LockScreenViewModel
    @Environment(\.scenePhase) private var scenePhase

    init(app: DriverApp) { _model = State(initialValue: LockScreenViewModel(app: app)) }

    var body: some View {
        ScrollView {
        VStack(spacing: 24) {
            Text(model.greeting).font(.title2.bold())
            PINDots(count: model.entered.count, length: LockScreenViewModel.pinLength)
                .accessibilityLabel(model.progressLabel)
            if let message = model.message {
                ErrorText(message).multilineTextAlignment(.center)
            }
            PINPad(onDigit: { digit in Task { await model.type(digit) } }, onDelete: { model.deleteDigit() })
                .disabled(model.isChecking)
            if model.canUseBiometrics {
                Button(model.biometricsTitle, systemImage: "faceid") { Task { await model.unlockWithBiometrics() } }
            }
            Button("Forgot PIN? Sign in with email") { Task { await model.forgotPIN() } }
                .font(.footnote)
        }
        .padding()
        }
        // Face ID asks once the app is in front (it cannot while the app is still in the background),
        // once each time: its own prompt makes the scene inactive and active again.
        .onChange(of: scenePhase, initial: true) {
            switch scenePhase {
            case .active: Task { await model.inFront() }
            case .background: model.wentToBackground()
            default: break
            }
        }
    }
}

/// Filled and empty circles for the digits typed (their count is also read out).
struct PINDots: View {
    let count: Int
    let length: Int

    var body: some View {
        HStack(spacing: 16) {
            ForEach(0..<length, id: \.self) { index in
                Image(systemName: index < count ? "circle.fill" : "circle")
                    .font(.title2)
            }
        }
        .accessibilityElement(children: .ignore)
        .accessibilityLabel("\(count) of \(length) digits entered")
    }
}

/// Large digit buttons, 1–9, 0 and delete.
struct PINPad: View {
    let onDigit: @MainActor (Int) -> Void
    let onDelete: @MainActor () -> Void
    /// Keys grow with the text size.
    @ScaledMetric(relativeTo: .title) private var key: CGFloat = 64

    var body: some View {
        Grid(horizontalSpacing: 24, verticalSpacing: 16) {
            ForEach([[1, 2, 3], [4, 5, 6], [7, 8, 9]], id: \.self) { row in
                GridRow {
                    ForEach(row, id: \.self) { digit in key(digit) }
                }
            }
            GridRow {
                Color.clear.frame(width: key, height: key)
                key(0)
                Button(action: onDelete) {
                    Image(systemName: "delete.left").font(.title2).frame(width: key, height: key)
                }
                .accessibilityLabel("Delete last digit")
            }
        }
    }

    private func key(_ digit: Int) -> some View {
        Button { onDigit(digit) } label: {
            Text("\(digit)").font(.title.monospacedDigit()).frame(width: key, height: key)
        }
        .buttonStyle(.bordered)
        .clipShape(Circle())
        .accessibilityLabel("\(digit)")
    }
}
#endif
