import VroomXModels

/// The signed-in user a request acts for, so the store can record who
/// changed something (an order's status history) without every write taking
/// it as a parameter, the way a request id reaches the log. Set once where a
/// request is authenticated (the API's routes and the console's pages); work
/// without a signed-in user (demo data, background jobs) records nobody.
enum ActingUser {
    @TaskLocal static var current: ID<User>?
}
