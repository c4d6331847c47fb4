import Foundation

/// The map: tiles (when the carrier has a tile server) or the shipped base
/// map with its cities, drivers' positions,
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

    /// A city of the base map, named beside its dot.
    struct City: ConsoleView {
        let x: Double
        let y: Double
        let name: String
        let label: Label
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
    /// The address of the base map's drawing of this view (without a tile server).
    let baseMap: String?
    let cities: [City]
    let drivers: [Driver]
    let tracks: [Track]
    let fences: [Fence]
    let rows: [Row]
    let empty: Bool
}
