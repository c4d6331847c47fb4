#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// The five tabs (seed 004) with the Messages badge; a tapped push or
/// message switches to its tab and opens what it names.
struct MainTabView: View {
    let app: DriverApp
    // Built once for the life of the shell: each follows the database on its own.
    @State private var shell: TabShellViewModel
    @State private var banners: BannersViewModel
    @State private var home: HomeViewModel
    @State private var earnings: EarningsViewModel
    @State private var messages: MessagesViewModel
    @State private var profile: ProfileViewModel

    init(app: DriverApp) {
        self.app = app
        _shell = State(initialValue: TabShellViewModel(app: app))
        _banners = State(initialValue: BannersViewModel(app: app))
        _home = State(initialValue: HomeViewModel(app: app))
        _earnings = State(initialValue: EarningsViewModel(app: app))
        _messages = State(initialValue: MessagesViewModel(app: app))
        _profile = State(initialValue: ProfileViewModel(app: app))
    }

    var body: some View {
        @Bindable var shell = shell
        TabView(selection: $shell.selected) {
            ForEach(MainTab.allCases) { tab in
                BannersView(model: banners) {
                    content(tab)
                }
                .tabItem { Label(tab.title, systemImage: tab.symbol) }
                .badge(shell.badge(tab))
                .tag(tab)
            }
        }
        // Initial too: a notification tapped while the app was locked opens once it is unlocked.
        .onChange(of: app.push.destination, initial: true) { shell.openPushDestination() }
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
        case .home: HomeView(app: app, model: home)
        case .trips: TripsView(app: app, shell: shell)
        case .earnings: EarningsView(model: earnings)
        case .messages: MessagesView(model: messages, shell: shell)
        case .profile: ProfileView(app: app, model: profile)
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
                        ViewThatFits(in: .horizontal) {
                            HStack { errorText(error); errorButtons }
                            VStack(alignment: .leading) { errorText(error); HStack { errorButtons } }
                        }
                        .padding(8)
                        .background(Color.red.opacity(0.15))
                    }
                }
            }
    }

    private func errorText(_ error: String) -> some View {
        Label(error, systemImage: "exclamationmark.triangle.fill").frame(maxWidth: .infinity, alignment: .leading)
    }

    @ViewBuilder private var errorButtons: some View {
        Button(BannerState.retryTitle) { Task { await model.retry() } }
        Button(BannerState.dismissTitle, systemImage: "xmark") { model.dismissError() }
            .labelStyle(.iconOnly)
            .accessibilityLabel(BannerState.dismissTitle)
    }

    private func banner(_ text: String, symbol: String) -> some View {
        Label(text, systemImage: symbol)
            .frame(maxWidth: .infinity)
            .padding(8)
            .background(Color.yellow.opacity(0.25))
    }
}
#endif
