namespace Queue.Core.Sql;

/// <summary>Keeping the ordering lanes current between rewrites: provisional values, overrides, blocks, removal.</summary>
public static class OrderingSql
{
    /// <summary>Smallest-first value of one job: its items not yet done or dead (cancelled ones are gone too).</summary>
    public const string ActiveCount = """
        SELECT items_total - items_done - items_dead - items_cancelled FROM jobs WHERE id = @JobId
        """;

    /// <summary>
    /// Everything provisional placement needs, in one round trip. MaxOldest reads the top of ix_ordering_mode
    /// (blocked, mode, value) once per blocked value, so it never scans the ordering. Values read here are stored
    /// values (band included); the band is read, share-locked, for the values the caller computes (<see cref="Band"/>).
    /// </summary>
    public const string PlacementFacts = PlacementFactsHead + CurrentOldestColumn + NextOldestValue + " AS NextOldest FROM jobs j WHERE j.id = @JobId";

    /// <summary>
    /// <see cref="PlacementFacts"/> for a smallest-first period, which places by the job's count and uses neither
    /// oldest-first fact: it leaves out their reads, whose parsing and optimizing cost about 100 us per statement
    /// (docs/DESIGN.md "Placement during a rewrite").
    /// </summary>
    /// <remarks>Both columns are typed BIGINT, as in the other form, so that one row type reads both.</remarks>
    public const string PlacementFactsSmallestFirst = PlacementFactsHead + """
               NULLIF(j.id, j.id) AS CurrentOldest, j.id - j.id AS NextOldest FROM jobs j WHERE j.id = @JobId
        """;

    /// <summary>
    /// <see cref="PlacementFacts"/> in an oldest-first period for a job whose lanes already carry an oldest-first value,
    /// which placement keeps (<see cref="JobsPlacedOldestFirst"/>): it leaves out the next oldest-first value, the costly
    /// part (six subqueries to parse and optimize, docs/DESIGN.md "Placement during a rewrite").
    /// </summary>
    public const string PlacementFactsPlaced = PlacementFactsHead + CurrentOldestColumn + "j.id - j.id AS NextOldest FROM jobs j WHERE j.id = @JobId";

    /// <summary>
    /// The oldest-first lanes of the jobs @Ids, locked (PRIMARY range per job), so that their placement can read
    /// <see cref="PlacementFactsPlaced"/>: a claim or the lane janitor that would remove one meanwhile skips it (both use
    /// SKIP LOCKED), and an override or a rewrite waits. The upload writes these lanes in the same transaction anyway;
    /// taking them before the band (read share-locked with the facts) also means that an upload to a job a rewrite is
    /// moving waits for the rewrite here, holding no band lock, instead of deadlocking with it later.
    /// </summary>
    public const string JobsPlacedOldestFirst = "SELECT job_id FROM ordering WHERE job_id IN @Ids AND mode = 'oldest' FOR UPDATE";

    private const string PlacementFactsHead = """
        SELECT j.tenant_id AS TenantId, j.blocked AS Blocked, (SELECT band FROM ordering_band WHERE id = 1 LOCK IN SHARE MODE) AS Band,
               j.items_total - j.items_done - j.items_dead - j.items_cancelled AS Active,
               (SELECT priority FROM overrides WHERE job_id = @JobId AND active = 1 AND expires_at > @Now ORDER BY id DESC LIMIT 1) AS OverridePriority,
        """ + "\n";

    /// <summary>The job's oldest-first value as its lanes carry it, when they carry one (PRIMARY range of the job).</summary>
    private const string CurrentOldestColumn = "       (SELECT value FROM ordering WHERE job_id = @JobId AND mode = 'oldest' LIMIT 1) AS CurrentOldest,\n       ";

    /// <summary>
    /// The one placement fact a brand-new job needs from the database: the next oldest-first value (the top of
    /// ix_ordering_mode per blocked value, two B-tree descents). Everything else about a new job is known: its tenant,
    /// its active items, no override and no lane yet. One read serves a whole group of new jobs, as before: every job
    /// of a group read it before any of the group's lanes went in.
    /// </summary>
    public const string NextOldest = "SELECT " + NextOldestValue + " AS NextOldest, " + Band + " AS Band";

    /// <summary>
    /// The next oldest-first stored value: 5 past the highest one of the current band, blocked or not, or the first one
    /// (10000) of the current band. 4398046511104 is 2^42, one band, and 2199023255552 half of one
    /// (<see cref="Ordering.OrderingBand"/>). Two descents of ix_ordering_mode, each bounded so that it never steps over
    /// the uncommitted entries of a rewrite in progress, which sit in the next band (docs/DESIGN.md "Placement during a
    /// rewrite"): a backward read of the index skips an invisible entry by reading its row's old version, one by one, so an
    /// open rewrite of 100k lanes made this read take about 190 ms instead of 0.5.
    /// </summary>
    /// <remarks>
    /// The unblocked maximum starts below the next band. The blocked one is read only when the current band holds a
    /// blocked oldest-first lane (a forward probe): with none, its backward read would start at the end of the blocked
    /// range and step back into the tail of the unblocked one, where a rewrite to smallest-first writes its new entries.
    /// That read is an ORDER BY ... LIMIT 1, not a MAX: the optimizer resolves a MAX on an index while it optimizes the
    /// statement, so the guard would not keep it from running.
    /// </remarks>
    private const string NextOldestValue =
        "GREATEST(\n"
        + "  COALESCE((SELECT MAX(value) FROM ordering WHERE blocked = 0 AND mode = 'oldest' AND value < " + BandTop + "), 0),\n"
        + "  COALESCE(IF(EXISTS (SELECT 1 FROM ordering FORCE INDEX (ix_ordering_mode)\n"
        + "                      WHERE blocked = 1 AND mode = 'oldest' AND value >= " + BandBottom + " AND value < " + BandTop + "),\n"
        + "              (SELECT value FROM ordering FORCE INDEX (ix_ordering_mode)\n"
        + "               WHERE blocked = 1 AND mode = 'oldest' AND value < " + BandTop + " ORDER BY value DESC LIMIT 1), NULL), 0),\n"
        + "  " + Band + " * 4398046511104 + 9995) + 5";

    /// <summary>The first stored value above the current band (share-locked, as <see cref="Band"/>).</summary>
    private const string BandTop = "(" + Band + " * 4398046511104 + 2199023255552)";

    /// <summary>The current band's first stored value (share-locked, as <see cref="Band"/>).</summary>
    private const string BandBottom = "(" + Band + " * 4398046511104 - 2199023255552)";

    /// <summary>The current band, share-locked (<see cref="Band"/>).</summary>
    public const string CurrentBand = "SELECT " + Band;

    /// <summary>
    /// The band a writer puts its values in, share-locked until it commits: a rewrite moves the band only after every
    /// writer that read the old one has committed (and moves their lanes into the new band before its own commit),
    /// and a writer that comes later waits for that commit, milliseconds. So no lane is written in the old band after
    /// a rewrite commits, and claims may walk the current band alone (<see cref="InCurrentBand"/>). Writers never
    /// wait for a rewrite's seconds: the rewrite takes the band's row lock at its end.
    /// </summary>
    private const string Band = "(SELECT band FROM ordering_band WHERE id = 1 LOCK IN SHARE MODE)";

    /// <summary>
    /// A claim walk's (and a position's) lower bound: the current band's first stored value (2^41 below band * 2^42), a
    /// consistent read that never waits. The walk starts there, so it never steps over the old band's entries that a rewrite
    /// delete-marked and purge has not yet removed (a million of them after a rewrite of 1M jobs, for up to a minute).
    /// </summary>
    public const string InCurrentBand = "value >= (SELECT band FROM ordering_band WHERE id = 1) * 4398046511104 - 2199023255552";

    public const string ActiveOverride = """
        SELECT priority FROM overrides WHERE job_id = @JobId AND active = 1 AND expires_at > @Now ORDER BY id DESC LIMIT 1
        """;

    /// <summary>The job's value and mode, if it already has lanes (all lanes of a job share them).</summary>
    public const string CurrentValue = "SELECT value AS Value, mode AS Mode FROM ordering WHERE job_id = @JobId LIMIT 1";

    /// <summary>
    /// Adds or refreshes lanes, row k's parameters numbered k (<c>@j0, @k0, ...</c>): job, task, tenant, value, mode,
    /// blocked. New items are claimable now, so the skip hint drops to @Now. An override value is kept. One statement for
    /// every lane of a group of new jobs or uploads (PRIMARY, one row each): a statement per lane cost the server about
    /// 60-180 us each (docs/DESIGN.md "Grouped uploads").
    /// </summary>
    public static string UpsertLanes(int count) => SqlRows.Values(
        "INSERT INTO ordering (job_id, task, tenant_id, value, mode, blocked, available_at, updated_at) VALUES",
        "(@j#, @k#, @e#, @v#, @m#, @b#, @Now, @Now)", count, """
        ON DUPLICATE KEY UPDATE
          value = IF(mode = 'override', value, VALUES(value)),
          mode = IF(mode = 'override', mode, VALUES(mode)),
          available_at = LEAST(available_at, VALUES(available_at)),
          updated_at = VALUES(updated_at)
        """);

    public const string SetJobValue = """
        UPDATE ordering SET value = @Value, mode = @Mode, updated_at = @Now WHERE job_id = @JobId
        """;

    public const string SetBlocked = "UPDATE ordering SET blocked = @Blocked, updated_at = @Now WHERE job_id = @JobId";

    public const string RemoveJob = "DELETE FROM ordering WHERE job_id = @JobId";

    /// <summary>The lanes of several jobs at once (PK range per job), for a batch of completions that ran jobs dry.</summary>
    public const string RemoveJobs = "DELETE FROM ordering WHERE job_id IN @JobIds";

    /// <summary>Makes every lane of a job eligible for claims again at once (requeue, unblock).</summary>
    public const string WakeJob = "UPDATE ordering SET available_at = @Now WHERE job_id = @JobId";


    /// <summary>Tasks of the job that still have active items: the lanes it should have.</summary>
    public const string ActiveTasks = """
        SELECT DISTINCT task FROM items WHERE job_id = @JobId AND active = 1
        """;

    /// <summary>Oldest-first rank value of one job among all jobs with lanes: 10000 + 5 * (older jobs with work).</summary>
    public const string OldestRankValue = """
        SELECT 10000 + 5 * COUNT(DISTINCT job_id) FROM ordering WHERE job_id < @JobId
        """;

    // ---- Position at any depth (docs/DESIGN.md "Position at depth"). Both cost the same with 10 or 10M jobs queued.
    //      Both start at the current band: the old band's entries a rewrite left for purge would cost the walk time and
    //      the dive's estimate phantom lanes (a million of them after a rewrite of 1M jobs).

    /// <summary>
    /// An index dive, not a scan: the optimizer's estimate (InnoDB records_in_range, two B-tree descents) of the lanes
    /// ahead of (@Value, @JobId) on ix_ordering_any. Exact for short ranges, within a few percent for long ones.
    /// </summary>
    public const string DiveLanesAhead = $"""
        EXPLAIN SELECT 1 FROM ordering FORCE INDEX (ix_ordering_any)
        WHERE blocked = 0 AND {InCurrentBand} AND (value < @Value OR (value = @Value AND job_id < @JobId))
        """;

    /// <summary>
    /// The claimable jobs ahead of (@Value, @JobId) themselves, in claim order, never past @Cap, each with its active
    /// items: what <see cref="CappedJobsAhead"/> counts, listed, so one walk gives the position of every job of a group
    /// created together (the rows before each). Same index and same cap as the count.
    /// </summary>
    public const string CappedJobsAheadList = """
        SELECT a.value AS Value, a.job_id AS JobId, CAST(j.items_total - j.items_done - j.items_dead - j.items_cancelled AS SIGNED) AS Active
        FROM
        """ + " " + ClaimableJobsAhead + " JOIN jobs j ON j.id = a.job_id ORDER BY a.value, a.job_id";

    /// <summary>
    /// Claimable jobs ahead of (@Value, @JobId), counted exactly but never past @Cap: ix_ordering_any in (value, job_id)
    /// order, grouped in index order, stopping at the LIMIT. With their active items (PK lookups of at most @Cap jobs).
    /// </summary>
    public const string CappedJobsAhead = """
        SELECT COUNT(*) AS Jobs, CAST(COALESCE(SUM(j.items_total - j.items_done - j.items_dead - j.items_cancelled), 0) AS SIGNED) AS Items
        FROM
        """ + " " + ClaimableJobsAhead + " JOIN jobs j ON j.id = a.job_id";

    /// <summary>
    /// Derived table <c>a</c>: the claimable jobs ahead of (@Value, @JobId), walked on ix_ordering_any in (value, job_id)
    /// order and grouped in index order, stopping at @Cap jobs. Shared by the count and the list above.
    /// </summary>
    private const string ClaimableJobsAhead = $"""
        (SELECT value, job_id FROM ordering FORCE INDEX (ix_ordering_any)
              WHERE blocked = 0 AND {InCurrentBand} AND (value < @Value OR (value = @Value AND job_id < @JobId))
              GROUP BY value, job_id HAVING MIN(available_at) <= @Now
              LIMIT @Cap) a
        """;
}
