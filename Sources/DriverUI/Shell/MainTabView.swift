#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// The five tabs (seed 004) with the Messages badge; a tapped push or
/// message switches to its tab and opens what it names.
struct MainTabView: View {
    let app: DriverApp
    @State private var shell: TabShellViewModel

    init(app: DriverApp) {
        self.app = app
        _shell = State(initialValue: TabShellViewModel(app: app))
    }

    var body: some View {
        @Bindable var shell = shell
        TabView(selection: $shell.selected) {
            ForEach(MainTab.allCases) { tab in
                BannersView(model: BannersViewModel(app: app)) {
                    content(tab)
                }
                .tabItem { Label(tab.title, systemImage: tab.symbol) }
                .badge(shell.badge(tab))
                .accessibilityLabel(shell.accessibilityLabel(tab))
                .tag(tab)
            }
        }
        .onChange(of: app.push.destination) { shell.openPushDestination() }
        .alert(shell.alert?.title ?? "", isPresented: Binding(get: { shell.alert != nil }, set: { if !$0 { shell.dismissAlert() } })) {
            Button("OK") { shell.dismissAlert() }
        } message: {
            Text(shell.alert?.body ?? "")
        }
        .alert(app.push.urgentAlert?.title ?? "", isPresented: Binding(get: { app.push.urgentAlert != nil },
                                                                        set: { if !$0 { app.push.dismissUrgentAlert() } })) {
            Button("OK") { app.push.dismissUrgentAlert() }
        } message: {
            Text(app.push.urgentAlert?.body ?? "")
        }
    }

    @ViewBuilder
    private func content(_ tab: MainTab) -> some View {
        switch tab {
        case .home: HomeView(app: app, model: HomeViewModel(app: app))
        case .trips: TripsView(app: app, shell: shell)
        case .earnings: EarningsView(model: EarningsViewModel(app: app))
        case .messages: MessagesView(model: MessagesViewModel(app: app), shell: shell)
        case .profile: ProfileView(app: app, model: ProfileViewModel(app: app))
        }
    }
}

/// Offline, loading and error banners over a tab (seed 000); an error has
/// Retry and Dismiss.
struct BannersView<Content: View>: View {
    let model: BannersViewModel
    @ViewBuilder let content: () -> Content

    var body: some View {
        content()
            .safeAreaInset(edge: .top, spacing: 0) {
                VStack(spacing: 0) {
                    if let offline = model.state.offline {
                        banner(offline, symbol: "wifi.slash")
                    }
                    if let loading = model.state.loading {
                        HStack {
                            ProgressView().accessibilityHidden(true)
                            Text(loading)
                        }
                        .frame(maxWidth: .infinity)
                        .padding(8)
                        .background(.thinMaterial)
                        .accessibilityElement(children: .combine)
                    }
                    if let error = model.state.error {
                        HStack {
                            Image(systemName: "exclamationmark.triangle.fill").accessibilityHidden(true)
                            Text(error).frame(maxWidth: .infinity, alignment: .leading)
                            Button(BannerState.retryTitle) { Task { await model.retry() } }
                            Button(BannerState.dismissTitle, systemImage: "xmark") { model.dismissError() }
                                .labelStyle(.iconOnly)
                                .accessibilityLabel(BannerState.dismissTitle)
                        }
                        .padding(8)
                        .background(Color.red.opacity(0.15))
                    }
                }
            }
    }

    private func banner(_ text: String, symbol: String) -> some View {
        Label(text, systemImage: symbol)
            .frame(maxWidth: .infinity)
            .padding(8)
            .background(Color.yellow.opacity(0.25))
    }
}
#endif
