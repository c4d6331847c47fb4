import Foundation

/// The map: tiles (when the carrier has a tile server), drivers' positions,
/// trips' tracks, the fences of stops ahead, and the table beside it.
struct MapView: ConsoleView {
    struct Tile: ConsoleView {
        let href: String
        let size: Double
        let x: Double
        let y: Double
    }

    struct Label: ConsoleView {
        let x: Double
        let y: Double
        let anchor: String

        init(_ placement: MapLabels.Placement) {
            x = placement.x
            y = placement.y
            anchor = placement.anchor
        }
    }

    struct Driver: ConsoleView {
        let x: Double
        let y: Double
        let label: Label
        let name: String
        let stale: Bool
    }

    struct Track: ConsoleView {
        let number: String
        let points: String
    }

    struct Fence: ConsoleView {
        let x: Double
        let y: Double
        let r: Double
        let kind: String
        let title: String
        let number: String
        let label: Label?
    }

    /// The stop a driver's app names as next.
    struct Next: ConsoleView {
        let order: String
        let orderID: String
        let stop: String
        let arrived: TimeView?
        let distance: String
        let eta: TimeView?
        let driverETA: TimeView?
    }

    struct Row: ConsoleView {
        let name: String
        let seen: TimeView?
        let point: String
        let trip: String
        let next: Next?
    }

    let width: Double
    let height: Double
    let tiles: [Tile]
    let tileSource: String?
    let drivers: [Driver]
    let tracks: [Track]
    let fences: [Fence]
    let rows: [Row]
    let empty: Bool
}
