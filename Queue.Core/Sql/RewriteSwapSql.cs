namespace Queue.Core.Sql;

/// <summary>
/// The swap rewrite (docs/DESIGN.md, "The swap rewrite"): the new ordering is built beside the old one in
/// <c>ordering_next</c> and renamed into its place, instead of moving every lane in place in each of ordering's five
/// indexes. Lanes written while it builds are first noted in <c>ordering_touched</c> by triggers, then mirrored into
/// <c>ordering_next</c> by triggers, and the noted ones copied again as they stand; the rename waits for every
/// transaction that wrote the old table, so none of their writes is left behind.
/// </summary>
public static class RewriteSwapSql
{
    private const string Columns = "job_id, task, tenant_id, value, mode, blocked, available_at, updated_at";

    /// <summary>
    /// The leftovers of a rewrite that stopped half-way (its process killed): triggers first, since a trigger whose
    /// table is gone fails every write of ordering.
    /// </summary>
    public static readonly string[] DropTriggers =
    [
        "DROP TRIGGER IF EXISTS ordering_rewrite_ai",
        "DROP TRIGGER IF EXISTS ordering_rewrite_au",
        "DROP TRIGGER IF EXISTS ordering_rewrite_ad",
    ];

    /// <summary>The swap's triggers that a rewrite stopped half-way left on ordering.</summary>
    public const string LeftTriggers = """
        SELECT COUNT(*) FROM information_schema.TRIGGERS
        WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'ordering' AND TRIGGER_NAME LIKE 'ordering\_rewrite\_%'
        """;

    public const string DropWorkTables = "DROP TABLE IF EXISTS ordering_next, ordering_retired";

    public const string ForgetTouched = "TRUNCATE TABLE ordering_touched";

    /// <summary>
    /// The swap's fence (docs/DESIGN.md "The fence"): a named lock, held by the connection that builds and renames, and
    /// taken by whatever else removes a swap's triggers or tables (the override sweep, a failed swap's clean-up). Unlike
    /// the 'rewrite' row lock it survives the DDL's implicit commits, and it ends with its connection, so a swap that
    /// lost its connection can rename nothing. Named after the schema, as named locks are the server's. 1 when taken
    /// within @Seconds. No table.
    /// </summary>
    public const string TakeFence = "SELECT GET_LOCK(CONCAT('queue_ordering_swap_', MD5(DATABASE())), @Seconds)";

    public const string ReleaseFence = "SELECT RELEASE_LOCK(CONCAT('queue_ordering_swap_', MD5(DATABASE())))";

    /// <summary>Bounds how long a DDL statement below waits for ordering's metadata lock, and so how long claims queue behind it.</summary>
    public const string BoundMetadataWait = "SET SESSION lock_wait_timeout = 1";

    /// <summary>
    /// <paramref name="ddl"/> taking ordering's metadata lock only if nobody holds it at that instant, failing at once
    /// (1205) otherwise: a statement that waits for it queues every claim that comes after behind it. For this statement
    /// alone, so the session keeps <see cref="BoundMetadataWait"/>.
    /// </summary>
    public static string WithoutMetadataWait(string ddl) => "SET STATEMENT lock_wait_timeout = 0 FOR " + ddl;

    public const string CreateNext = "CREATE TABLE ordering_next LIKE ordering";

    /// <summary>While the copy runs: the key of every lane written, whatever the writer.</summary>
    public static readonly string[] NoteTriggers =
    [
        "CREATE OR REPLACE TRIGGER ordering_rewrite_ai AFTER INSERT ON ordering FOR EACH ROW INSERT IGNORE INTO ordering_touched (job_id, task) VALUES (NEW.job_id, NEW.task)",
        "CREATE OR REPLACE TRIGGER ordering_rewrite_au AFTER UPDATE ON ordering FOR EACH ROW INSERT IGNORE INTO ordering_touched (job_id, task) VALUES (NEW.job_id, NEW.task)",
        "CREATE OR REPLACE TRIGGER ordering_rewrite_ad AFTER DELETE ON ordering FOR EACH ROW INSERT IGNORE INTO ordering_touched (job_id, task) VALUES (OLD.job_id, OLD.task)",
    ];

    /// <summary>
    /// After the copy: every write of a lane is written into ordering_next too, in the writer's own transaction. A new
    /// lane is taken whole. An updated lane keeps the rewrite's value and mode unless the writer changed them itself
    /// (a technician's override, a provisional value), as <see cref="RewriteSql.ApplyValues"/> leaves such lanes. An
    /// oldest-first value a writer placed against the old ordering (<see cref="OldestPlaced"/>) is not taken as it is:
    /// the job's value in ordering_next when it has one (PRIMARY prefix of ordering_next: an upload to a job the
    /// rewrite ranked), else the value moved past the last rank by <paramref name="oldestShift"/>, as the copy does
    /// (<see cref="Ordering.OrderingSwap.OldestShift"/>). A literal, since a trigger takes no parameters; it is a number.
    /// </summary>
    public static string[] MirrorTriggers(long oldestShift) =>
    [
        $"""
        CREATE OR REPLACE TRIGGER ordering_rewrite_ai AFTER INSERT ON ordering FOR EACH ROW
        BEGIN
          DECLARE v BIGINT;
          SET v = NEW.value;
          IF NEW.mode = 'oldest' THEN
            SET v = COALESCE({JobsOldestInNext}, NEW.value + {oldestShift});
          END IF;
          INSERT INTO ordering_next ({Columns})
          VALUES (NEW.job_id, NEW.task, NEW.tenant_id, v, NEW.mode, NEW.blocked, NEW.available_at, NEW.updated_at)
          ON DUPLICATE KEY UPDATE tenant_id = NEW.tenant_id, value = v, mode = NEW.mode, blocked = NEW.blocked,
            available_at = NEW.available_at, updated_at = NEW.updated_at;
        END
        """,
        $"""
        CREATE OR REPLACE TRIGGER ordering_rewrite_au AFTER UPDATE ON ordering FOR EACH ROW
        BEGIN
          DECLARE v BIGINT;
          SET v = NEW.value;
          IF {OldestPlaced} THEN
            SET v = COALESCE({JobsOldestInNext}, NEW.value + {oldestShift});
          END IF;
          INSERT INTO ordering_next ({Columns})
          VALUES (NEW.job_id, NEW.task, NEW.tenant_id, v, NEW.mode, NEW.blocked, NEW.available_at, NEW.updated_at)
          ON DUPLICATE KEY UPDATE tenant_id = NEW.tenant_id, blocked = NEW.blocked, available_at = NEW.available_at,
            updated_at = NEW.updated_at,
            value = IF(NEW.value <> OLD.value OR NEW.mode <> OLD.mode, v, value),
            mode = IF(NEW.value <> OLD.value OR NEW.mode <> OLD.mode, NEW.mode, mode);
        END
        """,
        "CREATE OR REPLACE TRIGGER ordering_rewrite_ad AFTER DELETE ON ordering FOR EACH ROW DELETE FROM ordering_next WHERE job_id = OLD.job_id AND task = OLD.task",
    ];

    /// <summary>
    /// An update that placed an oldest-first value (an upload in an oldest-first period): not an override set or cleared,
    /// whose value the technician's transaction computed, nor a hint or a block, which leave value and mode alone.
    /// </summary>
    private const string OldestPlaced = "NEW.mode = 'oldest' AND OLD.mode <> 'override' AND (NEW.value <> OLD.value OR NEW.mode <> OLD.mode)";

    /// <summary>The job's oldest-first value in the new ordering, if a lane of it has one there (PRIMARY prefix).</summary>
    private const string JobsOldestInNext = "(SELECT n.value FROM ordering_next n WHERE n.job_id = NEW.job_id AND n.mode = 'oldest' LIMIT 1)";

    /// <summary>
    /// A lane as the new ordering holds it (lane o, its job's row v of rewrite_values or NULL for a job the snapshot did
    /// not see): the rewrite's value and mode, unless a technician changed the lane's override since the snapshot
    /// (the rule of <see cref="RewriteSql.ApplyValues"/>); otherwise the lane as it stands.
    /// </summary>
    private const string Rewritten = "v.has_work = 1 AND (o.mode = v.seen_mode OR (o.mode <> 'override' AND v.seen_mode <> 'override'))";

    /// <remarks>
    /// A lane the rewrite did not rank (its job created after the snapshot, or run dry and given work again) that carries
    /// an oldest-first value was placed against the old ordering: moved by @OldestShift past the last rank
    /// (<see cref="Ordering.OrderingSwap.OldestShift"/>), so no job placed while the rewrite builds comes before an older one.
    /// </remarks>
    private const string NewLane = $"""
        o.job_id, o.task, o.tenant_id,
               IF({Rewritten}, IF(o.mode = 'override' AND v.mode = 'override', {RewriteSql.LaneValue} + @BandBase, v.value),
                  o.value + IF(o.mode = 'oldest' AND (v.job_id IS NULL OR v.has_work = 0), @OldestShift, 0)),
               IF({Rewritten}, v.mode, o.mode),
               o.blocked, o.available_at,
               IF({Rewritten}, @Now, o.updated_at)
        """;

    /// <summary>
    /// Lanes of jobs the snapshot saw with no work left are left out, unless the job has work again now (read again
    /// here, as <see cref="RewriteSql.RemoveFinished"/> does).
    /// </summary>
    private const string StillWanted = $"""
        (v.job_id IS NULL OR v.has_work = 1
               OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = o.job_id AND j.state <> {JobStateSql.Cancelled}
                          AND j.items_total - j.items_done - j.items_dead - j.items_cancelled > 0))
        """;

    /// <summary>
    /// The copy: every lane, in primary-key order, into the empty ordering_next. Run alone in a transaction with
    /// unique_checks and foreign_key_checks off, so InnoDB loads the empty table in bulk (MDEV-24621: its indexes sorted
    /// and built, one undo record): 100k lanes in 0.63 s against 2.2 s to update them in place. The bulk load locks
    /// ordering_next whole until its commit, which is why the triggers only note keys meanwhile. Never interrupted: a
    /// KILL QUERY that lands while InnoDB builds the indexes at the statement's end (MariaDB 10.11.19) empties the table
    /// and still answers OK with every row counted, and the commit that follows commits the empty table
    /// (docs/DESIGN.md "The count before the rename"); so it runs without a command timeout.
    /// </summary>
    public const string CopyAll = $"""
        INSERT INTO ordering_next ({Columns})
        SELECT {NewLane}
        FROM ordering o
        LEFT JOIN rewrite_values v ON v.job_id = o.job_id
        WHERE {StillWanted}
        """;

    /// <summary>
    /// Index statistics for the new table before it is renamed into place: a table loaded in bulk has none until
    /// InnoDB's background recount, and claims planned without them ran at p99 688 ms against 50 ms (100k jobs). Run
    /// before the mirror triggers exist, so no writer waits for it.
    /// </summary>
    public const string AnalyzeNext = "ANALYZE TABLE ordering_next";

    public const string BulkLoadOn = "SET SESSION unique_checks = 0, foreign_key_checks = 0";

    public const string BulkLoadOff = "SET SESSION unique_checks = 1, foreign_key_checks = 1";

    /// <summary>
    /// The noted lanes that still exist, locked, so their writers wait for <see cref="CopyTouched"/> to commit and then
    /// mirror on top of it.
    /// </summary>
    public const string LockTouched = """
        SELECT COUNT(*) FROM ordering_touched t
        STRAIGHT_JOIN ordering o ON o.job_id = t.job_id AND o.task = t.task
        FOR UPDATE
        """;

    public const string DeleteTouched = """
        DELETE n FROM ordering_touched t
        STRAIGHT_JOIN ordering_next n ON n.job_id = t.job_id AND n.task = t.task
        """;

    /// <summary>
    /// The noted lanes again, as they stand. A lane created and mirrored since <see cref="LockTouched"/> is already in
    /// ordering_next, as it stands: the duplicate takes it again.
    /// </summary>
    public const string CopyTouched = $"""
        INSERT INTO ordering_next ({Columns})
        SELECT {NewLane}
        FROM ordering_touched t
        STRAIGHT_JOIN ordering o ON o.job_id = t.job_id AND o.task = t.task
        LEFT JOIN rewrite_values v ON v.job_id = o.job_id
        WHERE {StillWanted}
        ON DUPLICATE KEY UPDATE tenant_id = VALUES(tenant_id), value = VALUES(value), mode = VALUES(mode),
          blocked = VALUES(blocked), available_at = VALUES(available_at), updated_at = VALUES(updated_at)
        """;

    /// <summary>Lanes of the snapshot's finished jobs that the new ordering leaves out.</summary>
    private const string LeftOut = """
        SELECT COUNT(*) FROM rewrite_values v
        STRAIGHT_JOIN ordering o ON o.job_id = v.job_id
        WHERE v.has_work = 0
          AND NOT EXISTS (SELECT 1 FROM ordering_next n WHERE n.job_id = o.job_id AND n.task = o.task)
        """;

    /// <summary>
    /// The lanes of ordering, of ordering_next and those left out on purpose, in one statement and so one read view.
    /// Once the mirror triggers are in place every write of ordering is written into ordering_next in the same
    /// transaction, so ordering holds exactly ordering_next's lanes and the left-out ones; any other difference is lanes
    /// the new table lost, and it must not be renamed into place (docs/DESIGN.md "The count before the rename"). Each
    /// COUNT reads one whole index of its table (PRIMARY, as EXPLAIN showed at 1M lanes): 0.2-0.4 s at 1M, once per
    /// rewrite; the left-out lanes ride rewrite_values' has_work key and ordering_next's PRIMARY.
    /// </summary>
    public const string CountLanes = $"""
        SELECT (SELECT COUNT(*) FROM ordering) AS Lanes,
               (SELECT COUNT(*) FROM ordering_next) AS Kept,
               ({LeftOut}) AS LeftOut
        """;

    /// <summary>
    /// ordering_next's rows as InnoDB estimates them, read right after <see cref="AnalyzeNext"/> and reported only when
    /// the count comes short: about none says the copy's commit lost its rows, about the rows copied says they went
    /// after it (docs/DESIGN.md "The count before the rename"). Read then, not at the count: InnoDB moves the estimate
    /// with every row deleted since. From the table's statistics, one row read.
    /// </summary>
    public const string AnalyzedRowsNext = """
        SELECT TABLE_ROWS FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ordering_next'
        """;

    /// <summary>
    /// One atomic rename: it waits for every transaction holding ordering (each of whose writes the triggers mirrored),
    /// and every statement after it reads the new ordering. The old table goes with its triggers.
    /// </summary>
    public const string Swap = "RENAME TABLE ordering TO ordering_retired, ordering_next TO ordering";

    public const string DropRetired = "DROP TABLE ordering_retired";
}
