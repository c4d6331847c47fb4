/// A carrier's change number: the position in its change feed that a write
/// reached (the feed's cursor counts in the same numbers).
///
/// Every write through the API answers with the number its commit reached in
/// this header; a client that sends the highest number it holds back on a
/// read (`Parameter.changeSeen`) reads its own writes even when another
/// server instance answers, one that may not have heard of them yet.
public enum ChangeNumber {
    public static let header = "X-VroomX-Change"
}
