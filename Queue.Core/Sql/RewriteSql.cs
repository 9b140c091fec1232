namespace Queue.Core.Sql;

/// <summary>
/// The ordering rewrite (docs/DESIGN.md, "The ordering table"): every lane's value and mode recomputed in one
/// transaction, set-based, plus the switching-off of expired overrides.
/// </summary>
public static class RewriteSql
{
    /// <summary>Serialises rewrites (and override sweeps) across every process; taken first in the transaction.</summary>
    public const string LockRewrite = "SELECT name FROM scheduler_state WHERE name = 'rewrite' FOR UPDATE";

    public const string PeriodRewritten = "SELECT COUNT(*) FROM rewrite_log WHERE period_start = @PeriodStart";

    public const string DropValues = "DROP TEMPORARY TABLE IF EXISTS rewrite_values";

    /// <summary>
    /// The cap of the in-memory working table below (the session's MEMORY table size; the server's default is 16 MiB,
    /// about 200,000 jobs). Set before CREATE, which fixes the table's cap. The same cap for the fill's own internal
    /// temporary table (the lanes grouped by job): above the default 16 MiB (about 250k jobs) it went to disk, and
    /// the fill of 1M jobs took 8.2 s against 4.1 s in memory.
    /// </summary>
    public const string CapValuesMemory = "SET SESSION max_heap_table_size = @Bytes, tmp_table_size = @Bytes";

    /// <summary>
    /// One row per job that has lanes. A temporary table is private to the connection and vanishes with it, so a
    /// rewrite killed half-way leaves nothing behind; CREATE/DROP TEMPORARY do not commit the transaction.
    /// </summary>
    public const string CreateValues = "CREATE TEMPORARY TABLE rewrite_values (" + ValuesColumns + ") ENGINE=MEMORY";

    /// <summary>The same table on disk, for a queue whose rewrite outgrows <see cref="CapValuesMemory"/>.</summary>
    public const string CreateValuesOnDisk = "CREATE TEMPORARY TABLE rewrite_values (" + ValuesColumns + ") ENGINE=InnoDB";

    private const string ValuesColumns = """
          job_id    BIGINT      NOT NULL,
          has_work  TINYINT     NOT NULL,
          value     BIGINT      NOT NULL,
          mode      VARCHAR(16) CHARACTER SET ascii NOT NULL,
          seen_mode VARCHAR(16) CHARACTER SET ascii NOT NULL,
          slice     INT         NOT NULL,
          PRIMARY KEY (job_id) USING BTREE,
          KEY (has_work),
          KEY (slice, job_id) USING BTREE
        """;

    /// <summary>
    /// Computes every job's new value from the jobs counters: smallest-first is the job's items not yet done, dead or
    /// cancelled; oldest-first is 10000 + 5 * rank by age (job id, so ties and provisional values agree with
    /// OrderingLanes), rank 0 being the oldest job with work; the newest active unexpired override wins over both.
    /// Each is stored in the rewrite's new band (@BandBase, <see cref="Ordering.OrderingBand"/>).
    /// Jobs that are cancelled or have no work left are kept with has_work = 0 so their lanes can be removed.
    /// seen_mode is the lanes' mode as this snapshot saw it, to detect overrides applied or cleared meanwhile.
    /// slice numbers the jobs in @SliceJobs from the tail of the claim order as this snapshot saw it (blocked jobs first,
    /// then by stored value and job id, descending), so <see cref="ApplyValues"/> writes the head of the walk last.
    /// STRAIGHT_JOIN keeps the lanes' GROUP BY materialised first: with it joined after jobs, MariaDB 10.11.19 chose a
    /// split ("LATERAL DERIVED") plan at 1M jobs that returned no row at all, so the rewrite ranked nothing and left
    /// every value as it was (found by `Queue.Bench rewrite --jobs 1000000`; optimizer_switch split_materialized=off
    /// gave the right rows, as does this join order).
    /// </summary>
    public const string FillValues = FillValuesSelect + "(ROW_NUMBER() OVER (ORDER BY r.blocked DESC, r.seen_value DESC, r.job_id DESC) - 1) DIV @SliceJobs\n"
        + FillValuesFromLanes + "\n" + FillValuesFromJobs;

    /// <summary>
    /// <see cref="FillValues"/> for the jobs from @FromJob up to @ToJob (a range of ordering's primary key), every one in
    /// slice 0, for the swap rewrite (<see cref="RewriteSwapSql"/>). The swap writes no lane in place and so has no order
    /// to keep (the claim-order numbering is a sort of every job, about 0.2 s of the 0.5 s fill at 100k jobs). Ranks
    /// go on from @RankBase, the jobs with work in the ranges before. One statement for every job kept one read view
    /// open for the whole fill, so purge stopped: at 1M jobs under claims the undo history grew from 400 to 7,200 in
    /// its 16 s, and each claim's walk, stepping over the delete-marked entries of the lane hints, took 1.9 ms
    /// instead of 0.5 (docs/DESIGN.md "The swap rewrite").
    /// </summary>
    public const string FillValuesRange = FillValuesSelect + "0\n" + FillValuesFromLanes + "\nWHERE job_id >= @FromJob AND job_id < @ToJob\n" + FillValuesFromJobs;

    /// <summary>The first and last job with lanes (the ends of ordering's primary key), for <see cref="FillValuesRange"/>.</summary>
    public const string LaneJobSpan = "SELECT MIN(job_id) AS First, MAX(job_id) AS Last FROM ordering";

    /// <summary>The jobs with work that one <see cref="FillValuesRange"/> ranked (rewrite_values' BTREE primary key).</summary>
    public const string RankedInRange = "SELECT COUNT(*) FROM rewrite_values WHERE job_id >= @FromJob AND job_id < @ToJob AND has_work = 1";

    /// <summary>
    /// A job's new value from a row of <see cref="FillValuesFromLanes"/> (alias r): the ranking rules themselves, shared
    /// with the preview (<see cref="PreviewSql"/>) so that a preview ranks exactly as the rewrite will.
    /// </summary>
    internal const string NewValue = """
        CASE WHEN r.has_work = 0 THEN 0
                    WHEN r.priority IS NOT NULL THEN @BandBase + r.priority
                    WHEN @Mode = 'smallest' THEN @BandBase + r.remaining
                    ELSE @BandBase + 10000 + 5 * (@RankBase + r.age_rank - 1) END
        """;

    private const string FillValuesSelect = """
        INSERT INTO rewrite_values (job_id, has_work, value, mode, seen_mode, slice)
        SELECT r.job_id, r.has_work,
        """ + "\n       " + NewValue + ",\n" + """
               CASE WHEN r.has_work = 0 THEN ''
                    WHEN r.priority IS NOT NULL THEN 'override'
                    ELSE @Mode END,
               r.seen_mode,
        """;

    internal const string FillValuesFromLanes = $"""
        FROM (
          SELECT j.id AS job_id,
                 IF(j.state <> {JobStateSql.Cancelled} AND j.items_total - j.items_done - j.items_dead - j.items_cancelled > 0, 1, 0) AS has_work,
                 j.items_total - j.items_done - j.items_dead - j.items_cancelled AS remaining,
                 o.priority, l.seen_mode, l.seen_value, l.blocked,
                 ROW_NUMBER() OVER (
                   PARTITION BY IF(j.state <> {JobStateSql.Cancelled} AND j.items_total - j.items_done - j.items_dead - j.items_cancelled > 0, 1, 0)
                   ORDER BY j.id) AS age_rank
          FROM (SELECT job_id, MIN(mode) AS seen_mode, MIN(value) AS seen_value, MAX(blocked) AS blocked FROM ordering
        """;

    internal const string FillValuesFromJobs = """
        GROUP BY job_id) l
          STRAIGHT_JOIN jobs j ON j.id = l.job_id
          LEFT JOIN (
            SELECT ov.job_id, ov.priority
            FROM overrides ov
            JOIN (SELECT job_id, MAX(id) AS id FROM overrides WHERE active = 1 AND expires_at > @Now GROUP BY job_id) m ON m.id = ov.id
          ) o ON o.job_id = j.id
        ) r
        """;

    /// <summary>
    /// Removes the lanes of jobs with no work left. The jobs row is read again here, so a job that received an upload
    /// after the snapshot keeps its lanes. STRAIGHT_JOIN: driven from the few candidates, so only their lanes are read
    /// with locks, never a locking scan of the whole ordering (which would queue behind any claimer's lane update).
    /// </summary>
    public const string RemoveFinished = $"""
        DELETE o
        FROM rewrite_values v
        STRAIGHT_JOIN jobs j ON j.id = v.job_id
        STRAIGHT_JOIN ordering o ON o.job_id = v.job_id
        WHERE v.has_work = 0
          AND (j.state = {JobStateSql.Cancelled} OR j.items_total - j.items_done - j.items_dead - j.items_cancelled <= 0)
        """;

    /// <summary>
    /// Writes the new values of one slice of jobs (@Slice, see <see cref="FillValues"/>), every one in the new band, so
    /// each lane moves (a rerun of the same period moves them again, into the band after). Driven from the slice's rows
    /// of rewrite_values by its index on (slice, job_id), so each lane is read by primary key in key order. A lane is left
    /// alone when a technician changed its override since the snapshot: its mode moved to or from 'override' meanwhile;
    /// <see cref="MoveToBand"/> then moves it into the new band as it stands. An override lane whose override still stands keeps the technician's priority
    /// as the lane carries it now (set by the technician's own transaction at once), moved into the new band. Lanes
    /// created after the snapshot are not in rewrite_values and keep their provisional value, moved into the band by
    /// <see cref="MoveToBand"/>.
    /// </summary>
    public const string ApplyValues = $"""
        UPDATE rewrite_values v
        STRAIGHT_JOIN ordering o ON o.job_id = v.job_id
        SET o.value = IF(o.mode = 'override' AND v.mode = 'override', {LaneValue} + @BandBase, v.value),
            o.mode = v.mode, o.updated_at = @Now
        WHERE v.slice = @Slice
          AND v.has_work = 1
          AND (o.value <> v.value OR o.mode <> v.mode)
          AND (o.mode = v.seen_mode OR (o.mode <> 'override' AND v.seen_mode <> 'override'))
        """;

    /// <summary>The last slice of <see cref="ApplyValues"/>; -1 when there is no lane to write.</summary>
    public const string LastSlice = "SELECT COALESCE(MAX(slice), -1) FROM rewrite_values";

    /// <summary>The band, read without a lock: only a rewrite changes it, and rewrites are serialised by <see cref="LockRewrite"/>.</summary>
    public const string Band = "SELECT band FROM ordering_band WHERE id = 1";

    /// <summary>
    /// Only a rewrite moves the band, inside its transaction, under the 'rewrite' lock, after its lanes are written:
    /// the row lock waits for the writers that share-locked the old band (OrderingSql.Band) to commit, and holds later
    /// ones until this transaction commits.
    /// </summary>
    public const string SetBand = "UPDATE ordering_band SET band = @Band WHERE id = 1";

    /// <summary>The newest job the snapshot saw; lanes of later jobs were placed meanwhile, in the old band.</summary>
    public const string LastJobInSnapshot = "SELECT COALESCE(MAX(job_id), 0) FROM rewrite_values";

    /// <summary>
    /// Inside the rewrite, after <see cref="SetBand"/> (whose new band this transaction reads): the lanes of jobs created
    /// since the snapshot (a primary-key range), moved into the new band with their provisional values, so they are claimable in the new band from the
    /// commit on. The few other lanes written meanwhile (an override set since the snapshot, a job that ran dry and got
    /// work again) are moved by <see cref="MoveToBand"/> right after the commit. An oldest-first provisional value was
    /// placed against the old ordering, which in a rewrite into oldest-first has no oldest-first lane, so it starts again
    /// at 10000, the rank of the oldest job: @OldestShift (5 per job ranked, <see cref="Ordering.OrderingSwap.OldestShift"/>)
    /// puts these jobs after every ranked one, in the order they were placed.
    /// </summary>
    public const string MoveNewJobsToBand = $"""
        UPDATE ordering o
        JOIN ordering_band b ON b.id = 1
        SET o.value = {LaneValue} + {CurrentBandBase} + IF(o.mode = 'oldest', @OldestShift, 0)
        WHERE o.job_id > @AfterJobId AND {OutsideCurrentBand}
        """;

    /// <summary>
    /// Moves every lane stored outside the current band into it, keeping its value (the priority, count or rank it
    /// carries): lanes a rewrite did not write because they were created after its snapshot, or written in the old band
    /// by a writer that read the band before the rewrite committed. The band is read in the statement (a const table),
    /// so a rewrite committed meanwhile is never undone. Two ranges of ix_ordering_any per blocked value, below and
    /// above the band: empty but for those stragglers once purge has removed the rewrite's old entries.
    /// </summary>
    public const string MoveToBand = $"""
        UPDATE ordering o
        JOIN ordering_band b ON b.id = 1
        SET o.value = {LaneValue} + {CurrentBandBase}
        WHERE o.blocked IN (0, 1) AND {OutsideCurrentBand}
        """;

    /// <summary>
    /// <see cref="MoveToBand"/> for what a rewrite can leave behind, right after its commit: lanes in override mode or in
    /// the rewrite's own mode (@Mode; a lane placed or refreshed since the snapshot gets the period's mode), in the band
    /// before the rewrite's. On ix_ordering_mode (blocked, mode, value), so the scan never meets the rewrite's old
    /// entries of the other mode, which stay delete-marked until purge (a million of them after a rewrite of 1M jobs).
    /// Only the previous band: every writer that raced the rewrite wrote in the band it read, the previous one, and an
    /// unbounded range below it also walked the delete-marked entries of the same mode that earlier rewrites left to
    /// purge (about 170 ms at 100k jobs when purge lagged). The override sweep runs the unrestricted statement for
    /// anything else.
    /// </summary>
    public const string MoveToBandAfterRewrite = $"""
        UPDATE ordering o FORCE INDEX (ix_ordering_mode)
        JOIN ordering_band b ON b.id = 1
        SET o.value = {LaneValue} + {CurrentBandBase}
        WHERE o.blocked IN (0, 1) AND o.mode IN ('override', @Mode) AND {InPreviousBand}
        """;

    // ---- The band arithmetic of the statements above (Ordering.OrderingBand): 4398046511104 is 2^42, one band, and
    //      2199023255552 half of it. Lane o, band row b.

    /// <summary>The lane's value without its band: the priority, count or rank it carries (OrderingBand.Shown).</summary>
    internal const string LaneValue = "(o.value - ((o.value + 2199023255552) DIV 4398046511104) * 4398046511104)";

    /// <summary>The current band's base (OrderingBand.Base).</summary>
    private const string CurrentBandBase = "b.band * 4398046511104";

    /// <summary>The lane is stored outside the current band: two ranges of any ordering index, below and above it.</summary>
    private const string OutsideCurrentBand =
        "(o.value < b.band * 4398046511104 - 2199023255552 OR o.value >= b.band * 4398046511104 + 2199023255552)";

    /// <summary>
    /// The lane is stored in the band before the current one: one range of any ordering index. After the wrap to band 0
    /// the previous band is the last one (2^21 - 1), whose range reaches the top of BIGINT.
    /// </summary>
    private const string InPreviousBand =
        "o.value >= IF(b.band = 0, 2097151, b.band - 1) * 4398046511104 - 2199023255552 "
        + "AND (b.band = 0 OR o.value < b.band * 4398046511104 - 2199023255552)";

    public const string CountRanked = "SELECT COUNT(*) FROM rewrite_values WHERE has_work = 1";

    public const string InsertLog = """
        INSERT INTO rewrite_log (period_start, mode, jobs_ranked, duration_ms, started_at, finished_at, instance)
        VALUES (@PeriodStart, @Mode, @JobsRanked, @DurationMs, @StartedAt, @FinishedAt, @Instance)
        """;

    /// <summary>
    /// Expired overrides that are still switched on, locked so a technician's concurrent change waits. No join: a
    /// locking read would lock the jobs rows too, and completions update those.
    /// </summary>
    public const string ExpiredOverrides = """
        SELECT id AS Id, job_id AS JobId, priority AS Priority, reason AS Reason, expires_at AS ExpiresAt
        FROM overrides
        WHERE active = 1 AND expires_at <= @Now
        ORDER BY id
        FOR UPDATE
        """;

    public const string JobTenant = "SELECT tenant_id FROM jobs WHERE id = @JobId";

    public const string SwitchOffOverride = "UPDATE overrides SET active = 0, updated_at = @Now WHERE id = @Id AND active = 1";

    public const string AuditOverrideExpired = """
        INSERT INTO audit_log (at, actor, action, job_id, tenant_id, reason, before_json, after_json)
        VALUES (@Now, @Actor, @Action, @JobId, @TenantId, @Reason, @BeforeJson, @AfterJson)
        """;

    /// <summary>Jobs whose lanes still carry an override's value: after a sweep they go back to their mode's value.</summary>
    public const string JobHasOverrideLanes = "SELECT COUNT(*) FROM ordering WHERE job_id = @JobId AND mode = 'override'";
}
