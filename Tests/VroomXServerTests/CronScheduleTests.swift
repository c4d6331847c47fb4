import Foundation
import Testing
@testable import VroomXServer

/// The backup schedule's cron expressions: what runs when, and what is refused.
@Suite("Cron schedules")
struct CronScheduleTests {
    let utc = TimeZone(identifier: "UTC")!
    let chicago = TimeZone(identifier: "America/Chicago")!

    func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test("the next time a schedule names, across days, months, weekdays and a time zone")
    func nextTimes() throws {
        let now = date("2026-11-30T05:47:31Z")  // a Monday
        #expect(try CronSchedule("15 2 * * *").next(after: now, in: utc) == date("2026-12-01T02:15:00Z"))
        #expect(try CronSchedule("*/15 * * * *").next(after: now, in: utc) == date("2026-11-30T06:00:00Z"))
        #expect(try CronSchedule("* * * * *").next(after: date("2026-11-30T05:47:00Z"), in: utc) == date("2026-11-30T05:48:00Z"), "strictly after")
        #expect(try CronSchedule("0 9 * * 1-5").next(after: date("2026-12-04T10:00:00Z"), in: utc) == date("2026-12-07T09:00:00Z"), "Friday → Monday")
        let sunday = try CronSchedule("0 0 * * 7").next(after: now, in: utc)
        #expect(try CronSchedule("0 0 * * 0").next(after: now, in: utc) == sunday && sunday == date("2026-12-06T00:00:00Z"), "Sunday is 0 and 7")
        #expect(try CronSchedule("30 1 29 2 *").next(after: now, in: utc) == date("2028-02-29T01:30:00Z"), "the next leap day")
        #expect(try CronSchedule("0 12 1 * 1").next(after: date("2026-12-01T13:00:00Z"), in: utc) == date("2026-12-07T12:00:00Z"),
                "both day fields: either matches, as in cron")
        #expect(try CronSchedule("5,35 3-4 * * *").next(after: date("2026-11-30T03:36:00Z"), in: utc) == date("2026-11-30T04:05:00Z"))
        #expect(try CronSchedule("10/20 * * * *").next(after: date("2026-11-30T03:31:00Z"), in: utc) == date("2026-11-30T03:50:00Z"))
        // The server's own zone: 02:15 in Chicago is 08:15 UTC in winter.
        #expect(try CronSchedule("15 2 * * *").next(after: now, in: chicago) == date("2026-11-30T08:15:00Z"))
    }

    @Test("summer time on the wall clock, as cron: a skipped time runs just after the change, a repeated one once")
    func summerTime() throws {
        let newYork = TimeZone(identifier: "America/New_York")!
        // 2027-03-14: 02:00 EST becomes 03:00 EDT. The nightly 02:15 runs at 03:15 EDT (07:15 UTC), not two days on.
        let nightly = try CronSchedule("15 2 * * *")
        #expect(nightly.next(after: date("2027-03-13T12:00:00Z"), in: newYork) == date("2027-03-14T07:15:00Z"))
        #expect(nightly.next(after: date("2027-03-14T07:15:00Z"), in: newYork) == date("2027-03-15T06:15:00Z"), "then 02:15 EDT")
        #expect(try CronSchedule("30 2 14 3 *").next(after: date("2027-01-01T00:00:00Z"), in: newYork) == date("2027-03-14T07:30:00Z"))
        // 2027-11-07: 02:00 EDT becomes 01:00 EST; 01:30 comes twice and runs once.
        let early = try CronSchedule("30 1 * * *")
        let first = early.next(after: date("2027-11-07T04:00:00Z"), in: newYork)
        #expect(first == date("2027-11-07T05:30:00Z"), "01:30 EDT")
        #expect(early.next(after: date("2027-11-07T05:30:30Z"), in: newYork) == date("2027-11-08T06:30:00Z"), "not 01:30 EST again")
        // Every 30 minutes through the spring change: no time runs twice, none goes backwards.
        var moment = date("2027-03-14T06:00:00Z")  // 01:00 EST
        var runs: [Date] = []
        for _ in 0..<5 {
            guard let next = try CronSchedule("*/30 * * * *").next(after: moment, in: newYork) else { break }
            runs.append(next)
            moment = next
        }
        #expect(runs == ["2027-03-14T06:30:00Z", "2027-03-14T07:00:00Z", "2027-03-14T07:30:00Z", "2027-03-14T08:00:00Z", "2027-03-14T08:30:00Z"].map(date))
    }

    @Test("what is not a schedule is refused with the field named", arguments: [
        ("", "five fields"), ("* * * *", "five fields"), ("60 * * * *", "minute"), ("* 24 * * *", "hour"), ("* * 0 * *", "day of month"),
        ("* * * 13 *", "month"), ("* * * * 8", "day of week"), ("*/0 * * * *", "step"), ("5-1 * * * *", "minute"), ("a * * * *", "minute"),
        ("0 0 31 2 *", "no month"), ("1,,2 * * * *", "minute"), ("--1 * * * *", "minute"), ("9223372036854775808 * * * *", "minute"),
    ])
    func refused(_ text: String, _ named: String) {
        #expect {
            try CronSchedule(text)
        } throws: { error in
            (error as? CronSchedule.Invalid)?.description.contains(named) == true
        }
    }

    @Test("the backup settings: defaults, a bucket's keys from the media's, and what is refused at start")
    func settings() throws {
        let plan = try #require(try ServerConfiguration.fromEnvironment(["VROOMX_BACKUP_TO": "/srv/backups"]).scheduledBackups)
        #expect(plan.target == .folder(URL(fileURLWithPath: "/srv/backups")) && plan.schedule.description == "15 2 * * *" && plan.keep == 14)
        #expect(try ServerConfiguration.fromEnvironment([:]).scheduledBackups == nil)
        let media = ["VROOMX_S3_ENDPOINT": "https://s3.example.com", "VROOMX_S3_BUCKET": "photos", "VROOMX_S3_ACCESS_KEY_ID": "media-key",
                     "VROOMX_S3_SECRET_ACCESS_KEY": "media-secret"]
        let bucket = try #require(try ServerConfiguration.fromEnvironment(media.merging(
            ["VROOMX_BACKUP_TO": "s3://yard-backups/nightly/", "VROOMX_BACKUP_S3_ACCESS_KEY_ID": "backup-key"]) { $1 }).scheduledBackups)
        guard case .bucket(let s3, let prefix) = bucket.target else { Issue.record("\(bucket.target)"); return }
        #expect(s3.bucket == "yard-backups" && prefix == "nightly/" && s3.accessKeyID == "backup-key" && s3.secretAccessKey == "media-secret"
                && s3.endpoint.absoluteString == "https://s3.example.com")
        for (environment, named) in [
            (["VROOMX_BACKUP_TO": "/srv/backups", "VROOMX_DATABASE_URL": "postgres://db/vroomx"], "PostgreSQL"),
            (["VROOMX_BACKUP_SCHEDULE": "0 3 * * *"], "VROOMX_BACKUP_TO"),
            (["VROOMX_BACKUP_TO": "/srv/backups", "VROOMX_BACKUP_KEEP": "0"], "VROOMX_BACKUP_KEEP"),
            (["VROOMX_BACKUP_TO": "/srv/backups", "VROOMX_BACKUP_SCHEDULE": "0 3 * *"], "VROOMX_BACKUP_SCHEDULE"),
            (["VROOMX_BACKUP_TO": "s3://yard-backups"], "VROOMX_BACKUP_S3_ENDPOINT"),
            (["VROOMX_BACKUP_TO": "s3://Not_A_Bucket", "VROOMX_BACKUP_S3_ENDPOINT": "https://s3.example.com"], "Not_A_Bucket"),
            (["VROOMX_BACKUP_TO": "s3://yard-backups", "VROOMX_BACKUP_S3_ENDPOINT": "https://s3.example.com"], "VROOMX_BACKUP_S3_ACCESS_KEY_ID"),
            (["VROOMX_BACKUP_TO": "s3://yard-backups", "VROOMX_BACKUP_S3_ENDPOINT": "s3.example.com"], "VROOMX_BACKUP_S3_ENDPOINT"),
            (["VROOMX_BACKUP_TO": "s3://yard-backups/../x", "VROOMX_BACKUP_S3_ENDPOINT": "https://s3.example.com"], ".."),
        ] {
            #expect("\(environment)", performing: { try ServerConfiguration.fromEnvironment(environment) }, throws: { error in
                "\(error)".contains(named)
            })
        }
    }
}
