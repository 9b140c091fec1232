namespace Queue.Core.Sql;

/// <summary>
/// The claim path (POST /next), leases (complete, fail, extend, document) and the worker-side statistics.
/// See docs/DESIGN.md "Claims": lanes are picked from the ordering index alone, items inside one lane with SKIP LOCKED.
/// </summary>
public static class ClaimSql
{
    // ---- Lane selection (seed policy). Both walk an index in (value, job_id) order and stop at LIMIT: no sort, no join.
    //      Each starts at the current band (OrderingSql.InCurrentBand), a range on the same index.

    /// <summary>Lanes of any task, in claim order. Lanes whose hint says "nothing before later" are skipped by their row (the hint is not in the index: docs/DESIGN.md "Lane hints off the indexes").</summary>
    public const string SeedLanesAny = $"""
        SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value
        FROM ordering FORCE INDEX (ix_ordering_any)
        WHERE blocked = 0 AND {OrderingSql.InCurrentBand} AND available_at <= @Now
        ORDER BY value, job_id, task
        LIMIT @Limit
        """;

    /// <summary>Lanes of one task, in claim order; a worker's task list runs this once per task and merges.</summary>
    public const string SeedLanesForTask = $"""
        SELECT job_id AS JobId, task AS Task, tenant_id AS TenantId, value AS Value
        FROM ordering FORCE INDEX (ix_ordering_task)
        WHERE blocked = 0 AND task = @Task AND {OrderingSql.InCurrentBand} AND available_at <= @Now
        ORDER BY value, job_id
        LIMIT @Limit
        """;

    // ---- The claim epoch (migrations/V21): moved by anything that takes back claimed-ahead items, read before a handout
    //      from memory. Both are point reads or writes of the one row of claim_epoch (PRIMARY).

    /// <summary>The epoch as it stands; a handout from the claim-ahead buffer trusts only items claimed under it.</summary>
    public const string ReadEpoch = "SELECT epoch FROM claim_epoch WHERE id = 1";

    /// <summary>Moves the epoch, inside the transaction of a cancel, block, override or requeue.</summary>
    public const string BumpEpoch = "UPDATE claim_epoch SET epoch = epoch + 1 WHERE id = 1";

    // ---- Inside one lane.

    /// <summary>
    /// The claimable items of as many lanes as <paramref name="floored"/> has (lane k: <c>@j</c>k, <c>@k</c>k, at most <c>@l</c>k rows),
    /// each lane's lowest ids first, its position in <c>Lane</c>. Ready items and expired leases alike have due_at &lt;=
    /// now; rows another claimer holds are skipped rather than waited for. One statement whatever the number of lanes
    /// (a part per lane, each its own locking read on ix_items_claim, run in order): a round of eight one-item jobs sent
    /// eight statements here. A lane whose <paramref name="floored"/> is true starts after <c>@f</c>k, its floor
    /// (<see cref="Claims.LaneFloors"/>), so the entries below it that purge has not removed yet are not walked again;
    /// the others walk the whole lane with equality on every key part before id (a ref access: <c>id &gt; 0</c> would
    /// make it a range, which cost about 10 % of the claims under 16 concurrent SKIP LOCKED claimers).
    /// </summary>
    public static string LockLanesItems(IReadOnlyList<bool> floored) =>
        string.Join("\nUNION ALL\n", floored.Select((f, k) => SqlRows.Row(f ? LockLanePartFromFloor : LockLanePart, k)));

    /// <summary>One lane of <see cref="LockLanesItems"/>, walked from its first item: equality on every key part before id.</summary>
    private static readonly string LockLanePart = LockLane.Replace("{floor}", "", StringComparison.Ordinal);

    /// <summary>One lane of <see cref="LockLanesItems"/>, walked from after its floor.</summary>
    private static readonly string LockLanePartFromFloor = LockLane.Replace("{floor}", " AND id > @f#", StringComparison.Ordinal);

    private const string LockLane = """
        (SELECT # AS Lane, id AS Id, job_id AS JobId, document_id AS DocumentId, task AS Task, state AS State,
                attempts AS Attempts, lease_expires_at AS LeaseExpiresAt
         FROM items FORCE INDEX (ix_items_claim)
         WHERE job_id = @j# AND task = @k# AND active = 1{floor} AND due_at <= @Now
         ORDER BY id
         LIMIT @l#
         FOR UPDATE SKIP LOCKED)
        """;

    /// <summary>
    /// The claimable items of <paramref name="count"/> lanes at once (lane k: <c>@j</c>k, <c>@k</c>k), at most @Cap rows:
    /// one range read of ix_items_claim per lane in one statement (key order, so LIMIT stops the scan and nothing past
    /// it is locked; an ORDER BY here would sort, and so lock, every claimable row of every lane first). About 8 us per
    /// lane against about 45 for a part of <see cref="LockLanesItems"/>, each of which the server optimizes as a query
    /// of its own (measured by hand with 114 one-item lanes: 0.8-1.1 ms against 5.5-6.2 ms). No per-lane limit: a lane
    /// with many items can fill the cap alone, so the caller asks the lanes that may have been cut short again, one
    /// part each (<see cref="Claims.ItemTaker"/>).
    /// </summary>
    public static string LockLanesItemsAtOnce(IReadOnlyList<string> tasks) => $"""
        SELECT id AS Id, job_id AS JobId, document_id AS DocumentId, task AS Task, state AS State,
               attempts AS Attempts, lease_expires_at AS LeaseExpiresAt
        FROM items FORCE INDEX (ix_items_claim)
        WHERE active = 1 AND {InLanes(tasks)}
          AND due_at <= @Now
        LIMIT @Cap
        FOR UPDATE SKIP LOCKED
        """;

    /// <summary>
    /// Hands <paramref name="count"/> items to workers in one statement (PRIMARY, point ranges): row k's id, fresh token,
    /// lease expiry (in due_at too) and worker are <c>@i</c>k, <c>@t</c>k, <c>@u</c>k and <c>@w</c>k, one attempt more
    /// each; the rows listed in <paramref name="expired"/> were expired leases and record "lease expired". Single-table
    /// SET clauses apply left to right, so due_at takes the new expiry.
    /// </summary>
    public static string LeaseItems(int count, IReadOnlyCollection<int> expired) => $"""
        UPDATE items
        SET state = {ItemStateSql.Leased}, attempts = attempts + 1,
            lease_token = CASE id {SqlRows.Join("WHEN @i# THEN @t#", count, " ")} END,
            lease_expires_at = CASE id {SqlRows.Join("WHEN @i# THEN @u#", count, " ")} END,
            due_at = lease_expires_at,
            worker = CASE id {SqlRows.Join("WHEN @i# THEN @w#", count, " ")} END,
            last_error = {ExpiredError(expired)},
            updated_at = @Now
        WHERE id IN ({SqlRows.Join("@i#", count, ", ")})
        """;

    private static string ExpiredError(IReadOnlyCollection<int> expired) => expired.Count == 0
        ? "last_error"
        : $"IF(id IN ({string.Join(", ", expired.Select(k => SqlRows.Parameter("@i", k)))}), 'lease expired', last_error)";

    /// <summary>
    /// Claim-ahead: holds <paramref name="count"/> items for this process under a short reservation in one statement
    /// (PRIMARY, point ranges; lease_expires_at stays NULL, which marks an item not yet handed out): row k's id, token and
    /// reservation expiry are <c>@i</c>k, <c>@t</c>k and <c>@u</c>k. A crashed process's reservations fall due within
    /// seconds and are reclaimed without counting a failed attempt; the rows in <paramref name="expired"/> were
    /// expired leases and record "lease expired".
    /// </summary>
    public static string ReserveItems(int count, IReadOnlyCollection<int> expired) => $"""
        UPDATE items
        SET state = {ItemStateSql.Leased},
            lease_token = CASE id {SqlRows.Join("WHEN @i# THEN @t#", count, " ")} END,
            lease_expires_at = NULL,
            due_at = CASE id {SqlRows.Join("WHEN @i# THEN @u#", count, " ")} END,
            worker = NULL,
            last_error = {ExpiredError(expired)},
            updated_at = @Now
        WHERE id IN ({SqlRows.Join("@i#", count, ", ")})
        """;

    /// <summary>
    /// Writes down, after the answer, the leases that /next handed out straight from the claim-ahead buffer
    /// (<see cref="Claims.HandoutLog"/>), <paramref name="count"/> rows in one statement (PRIMARY, point ranges): row k's
    /// id, token, worker's expiry and worker are <c>@i</c>k, <c>@t</c>k, <c>@u</c>k and <c>@w</c>k. Only a reservation
    /// still held by that token is touched: one that was completed, failed or extended first has already counted its
    /// attempt (<see cref="AttemptOfHandout"/>), and one lost to another claim is that claim's.
    /// </summary>
    public static string WriteHandouts(int count) => $"""
        UPDATE items
        SET attempts = attempts + 1,
            lease_expires_at = CASE id {SqlRows.Join("WHEN @i# THEN @u#", count, " ")} END,
            due_at = lease_expires_at,
            worker = CASE id {SqlRows.Join("WHEN @i# THEN @w#", count, " ")} END,
            updated_at = @Now
        WHERE id IN ({SqlRows.Join("@i#", count, ", ")}) AND state = {ItemStateSql.Leased} AND lease_expires_at IS NULL
          AND lease_token = CASE id {SqlRows.Join("WHEN @i# THEN @t#", count, " ")} END
        """;

    /// <summary>
    /// The first SET clause of every statement that finishes or extends a lease: a reservation finished by its token
    /// was handed out from the buffer and its lease not written down yet (<see cref="WriteHandouts"/>), so its attempt
    /// counts here. Single-table SET clauses apply left to right, so this must come before lease_expires_at changes.
    /// </summary>
    public const string AttemptOfHandout = "attempts = attempts + (lease_expires_at IS NULL)";

    /// <summary>
    /// After a claim's COMMIT got no answer (<see cref="Data.CommitCheck"/>): a row only that claim wrote, its item under
    /// the claim's token, shows whether it committed. Rides PRIMARY.
    /// </summary>
    public const string TakenWith = "SELECT id FROM items WHERE id = @Id AND lease_token = @Token LOCK IN SHARE MODE";

    /// <summary>Gives back a reservation that was never handed out: ready again at once, nothing counted.</summary>
    public const string ReleaseReservation = $"""
        UPDATE items SET state = {ItemStateSql.Ready}, lease_token = NULL, due_at = @Now, updated_at = @Now
        WHERE id = @Id AND lease_token = @Token AND state = {ItemStateSql.Leased} AND lease_expires_at IS NULL
        """;

    /// <summary>
    /// Gives back a lease that was claimed for a caller who left before it was handed out: as if never claimed. A lease
    /// handed out from the buffer and not written down yet is still a reservation in the row, and counted no attempt.
    /// </summary>
    public const string ReleaseLease = $"""
        UPDATE items SET state = {ItemStateSql.Ready}, attempts = attempts - (lease_expires_at IS NOT NULL), lease_token = NULL, lease_expires_at = NULL, worker = NULL,
            due_at = @Now, updated_at = @Now
        WHERE id = @Id AND lease_token = @Token AND state = {ItemStateSql.Leased}
        """;

    public const string RecordError = """
        INSERT INTO item_errors (item_id, attempt, error, at) VALUES (@Id, @Attempt, @Error, @Now)
        """;

    public const string MaxAttemptsOfJob = """
        SELECT t.max_attempts FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE j.id = @JobId
        """;

    public const string DocumentById = "SELECT id, name, content_type FROM documents WHERE id = @Id";

    public const string TenantNameById = "SELECT name FROM tenants WHERE id = @Id";

    // ---- The lane hints, when a claim may have emptied lanes (docs/DESIGN.md). One statement for all of a claim's
    //      lanes, lane k in (@j k, @k k): a claim of eight one-item jobs sent eight statements of each kind here. The
    //      lanes are written as `task = @k AND job_id IN (...)`, one such term per distinct task (<see cref="InLanes"/>):
    //      point ranges of PRIMARY (or of ix_items_claim) that the range optimizer builds in time linear in the lanes. A
    //      `(job_id, task) IN ((...), ...)` row-constructor list cost it more than linearly (about 0.1 ms more at 32
    //      pairs, 300 ms at 500) and was 14 % of mariadbd's CPU in a 16-worker drain (perf, 2026-11-29).

    /// <summary>The lanes, each locked without waiting (a lane an upload or a rewrite holds is skipped: they set the hint themselves); the ones locked.</summary>
    public static string LockLanes(IReadOnlyList<string> tasks) => $"""
        SELECT job_id, task FROM ordering
        WHERE {InLanes(tasks)}
        FOR UPDATE SKIP LOCKED
        """;

    /// <summary>
    /// The earliest due time of each lane's active items; a lane without one has no row (ix_items_claim). Asked only of
    /// lanes whose locking read came back short (<see cref="LockLanesItems"/> asks each lane for one row more than it
    /// takes): what is left in them is leased, backing off, held or below a floor. The index is in id order, not due
    /// order, so MIN reads every active entry of the lane; asked of a lane with work left, that read a deep lane whole
    /// on every claim (docs/DESIGN.md "Lane hints at depth").
    /// </summary>
    public static string LanesNextDue(IReadOnlyList<string> tasks) => $"""
        SELECT job_id, task, MIN(due_at) FROM items FORCE INDEX (ix_items_claim)
        WHERE active = 1 AND {InLanes(tasks)}
        GROUP BY job_id, task
        """;

    /// <summary>Each lane's hint (<c>@a</c>k): nothing in it can be claimed before then.</summary>
    public static string SetLaneHints(IReadOnlyList<string> tasks) => $"""
        UPDATE ordering
        SET available_at = CASE {SqlRows.Join("WHEN job_id = @j# AND task = @k# THEN @a#", tasks.Count, " ")} ELSE available_at END
        WHERE {InLanes(tasks)}
        """;

    /// <summary>Lanes with no active item left (a claim's closing, and LaneJanitor for the jobs that ran dry).</summary>
    public static string DeleteLanes(IReadOnlyList<string> tasks) => $"""
        DELETE FROM ordering WHERE {InLanes(tasks)}
        """;

    /// <summary>
    /// Lanes k = 0.. (job <c>@j</c>k, task <c>@k</c>k, where <paramref name="tasks"/>[k] is lane k's task) as one term
    /// per distinct task: <c>task = @k</c>(first lane of that task)<c> AND job_id IN (@j...)</c>, OR-ed. Every lane's
    /// @k is bound, the unused ones too. The same rows as the lanes' pairs: a term's lanes share its task.
    /// </summary>
    public static string InLanes(IReadOnlyList<string> tasks)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(tasks.Count, 1);
        var terms = Enumerable.Range(0, tasks.Count).GroupBy(k => tasks[k], StringComparer.Ordinal)
            .Select(g => $"task = {SqlRows.Parameter("@k", g.First())} AND job_id IN ({string.Join(", ", g.Select(k => SqlRows.Parameter("@j", k)))})")
            .ToList();
        return terms.Count == 1 ? terms[0] : $"(({string.Join(") OR (", terms)}))";
    }

    /// <summary>The taken items' documents, for the answer (PRIMARY).</summary>
    public static string DocumentsByIds(int count) => $"""
        SELECT id, name, content_type FROM documents WHERE id IN ({SqlRows.Join("@d#", count, ", ")})
        """;

    /// <summary>Which of the jobs of released items were cancelled meanwhile (PRIMARY).</summary>
    public const string CancelledJobsAmong = $"SELECT id FROM jobs WHERE id IN @JobIds AND state = {JobStateSql.Cancelled}";

    /// <summary>An item became claimable at @At (a fail's due time, a release): the lane must not hide it.</summary>
    public const string LowerLaneHint = """
        UPDATE ordering SET available_at = LEAST(available_at, @At) WHERE job_id = @JobId AND task = @Task
        """;

    // ---- Finishing: complete, fail, dead, extend, document.

    /// <summary>A completion's <paramref name="count"/> items (<c>@i</c>k), locked (PRIMARY).</summary>
    public static string LockItemsForFinish(int count) => $"""
        SELECT id AS Id, job_id AS JobId, task AS Task, state AS State, lease_token AS LeaseToken, due_at AS DueAt,
               attempts AS Attempts, worker AS Worker, lease_expires_at AS LeaseExpiresAt
        FROM items WHERE id IN ({SqlRows.Join("@i#", count, ", ")}) FOR UPDATE
        """;

    public const string LockItemForFinish = """
        SELECT id AS Id, job_id AS JobId, task AS Task, state AS State, lease_token AS LeaseToken, due_at AS DueAt,
               attempts AS Attempts, worker AS Worker, lease_expires_at AS LeaseExpiresAt
        FROM items WHERE id = @Id FOR UPDATE
        """;

    /// <summary>
    /// Completes a grouped completion's items in one statement (PRIMARY), whatever their number: eight one-item jobs
    /// sent eight statements here. A done item keeps the token that completed it, so that the same complete sent again
    /// (its 204 lost, or its commit's outcome unknown) is recognised and answered 204 without a second completion.
    /// </summary>
    public static string CompleteItems(int count) => $"""
        UPDATE items SET {AttemptOfHandout}, state = {ItemStateSql.Done}, lease_expires_at = NULL, due_at = @Now, updated_at = @Now
        WHERE id IN ({SqlRows.Join("@i#", count, ", ")})
        """;

    public const string KillItem = $"""
        UPDATE items SET {AttemptOfHandout}, state = {ItemStateSql.Dead}, lease_token = NULL, lease_expires_at = NULL, last_error = @Error, due_at = @Now,
            updated_at = @Now
        WHERE id = @Id
        """;

    public const string CancelItem = $"""
        UPDATE items SET {AttemptOfHandout}, state = {ItemStateSql.Cancelled}, lease_token = NULL, lease_expires_at = NULL, last_error = @Error, due_at = @Now,
            updated_at = @Now
        WHERE id = @Id
        """;

    public const string RetryItem = $"""
        UPDATE items SET {AttemptOfHandout}, state = {ItemStateSql.Ready}, lease_token = NULL, lease_expires_at = NULL, last_error = @Error, due_at = @Due,
            updated_at = @Now
        WHERE id = @Id
        """;

    /// <summary>
    /// Counts finished items on the job and closes it out when it is closed and nothing is active any more. MariaDB
    /// applies single-table SET clauses left to right, so finished_at and state see the new counters.
    /// </summary>
    public const string CountFinished = $"""
        UPDATE jobs
        SET items_done = items_done + @Done, items_dead = items_dead + @Dead, items_cancelled = items_cancelled + @Cancelled,
            {CloseOutWhenFinished}
        WHERE id = @JobId
        """;

    /// <summary>After the counters in the same SET: a closed job with nothing active left is done, now.</summary>
    private const string CloseOutWhenFinished = $"""
        finished_at = IF(state = {JobStateSql.Closed} AND items_total = items_done + items_dead + items_cancelled, @Now, finished_at),
            state = IF(state = {JobStateSql.Closed} AND items_total = items_done + items_dead + items_cancelled, {JobStateSql.Done}, state),
            updated_at = @Now
        """;

    /// <summary>
    /// The lanes of <paramref name="count"/> jobs (<c>@j</c>k) that ran dry, locked without waiting (LaneJanitor), and
    /// only while the job still has no active item (an upload may have given it work since). Locks the jobs rows too,
    /// also skipping held ones. Point ranges of both primary keys, at most <see cref="SqlRows.InListValues"/> jobs each.
    /// </summary>
    public static string LockDryLanes(int count) => $"""
        SELECT o.job_id, o.task FROM ordering o JOIN jobs j ON j.id = o.job_id
        WHERE o.job_id IN ({SqlRows.Join("@j#", count, ", ")}) AND j.items_total - j.items_done - j.items_dead - j.items_cancelled <= 0
        FOR UPDATE SKIP LOCKED
        """;

    /// <summary>
    /// <see cref="CountFinished"/> for the completions of several jobs in one statement (PRIMARY, rows locked in id
    /// order): job k (<c>@j</c>k) gets <c>@n</c>k more done items and is closed out when nothing is left.
    /// </summary>
    public static string CountCompleted(int count) => $"""
        UPDATE jobs
        SET items_done = items_done + CASE id {SqlRows.Join("WHEN @j# THEN @n#", count, " ")} ELSE 0 END,
            {CloseOutWhenFinished}
        WHERE id IN ({SqlRows.Join("@j#", count, ", ")})
        """;

    /// <summary>The jobs after their counters moved, read back in the completion's batch: each one's tenant, and whether it ran dry.</summary>
    public static string JobsAfterCount(int count) => $"""
        SELECT id AS Id, tenant_id AS TenantId, items_total - items_done - items_dead - items_cancelled AS Active
        FROM jobs WHERE id IN ({SqlRows.Join("@j#", count, ", ")})
        """;

    /// <summary>A job's active items after its counters moved in this transaction (PK).</summary>
    public const string ActiveOfJob = """
        SELECT items_total - items_done - items_dead - items_cancelled FROM jobs WHERE id = @JobId
        """;

    public const string JobStateAndTenant = "SELECT state AS State, tenant_id AS TenantId FROM jobs WHERE id = @JobId";

    public const string ExtendLease = $"""
        UPDATE items SET {AttemptOfHandout}, lease_expires_at = @Expires, due_at = @Expires, worker = COALESCE(@Worker, worker), updated_at = @Now
        WHERE id = @Id AND lease_token = @Token AND state = {ItemStateSql.Leased} AND due_at > @Now
        """;

    public const string ItemExists = "SELECT COUNT(*) FROM items WHERE id = @Id";

    /// <summary>The document of a live lease; no row means a stale or foreign token (or no such item).</summary>
    public const string DocumentOfLease = $"""
        SELECT d.id AS Id, d.name AS Name, d.content_type AS ContentType, d.size AS Size
        FROM items i JOIN documents d ON d.id = i.document_id
        WHERE i.id = @Id AND i.lease_token = @Token AND i.state = {ItemStateSql.Leased} AND i.due_at > @Now
        """;

    public const string DocumentContent = "SELECT content FROM document_content WHERE document_id = @DocumentId";

    // ---- Statistics, flushed from memory every few seconds.

    public const string AddTenantCounters = """
        INSERT INTO tenant_counters (tenant_id, claims, completions, updated_at) VALUES (@TenantId, @Claims, @Completions, @Now)
        ON DUPLICATE KEY UPDATE claims = claims + VALUES(claims), completions = completions + VALUES(completions),
                                updated_at = VALUES(updated_at)
        """;

    public const string AddWorkerCounters = """
        INSERT INTO workers (name, first_seen_at, last_seen_at, claims, completions, failures)
        VALUES (@Name, @LastSeen, @LastSeen, @Claims, @Completions, @Failures)
        ON DUPLICATE KEY UPDATE last_seen_at = GREATEST(last_seen_at, VALUES(last_seen_at)), claims = claims + VALUES(claims),
                                completions = completions + VALUES(completions), failures = failures + VALUES(failures)
        """;

    public const string Workers = """
        SELECT name AS Name, first_seen_at AS FirstSeenAt, last_seen_at AS LastSeenAt, claims AS Claims,
               completions AS Completions, failures AS Failures
        FROM workers ORDER BY last_seen_at DESC LIMIT @Limit
        """;

    /// <summary>queue_items{tenant,state} from the jobs counters; live leases from the leased-items index of open jobs.</summary>
    public const string ItemsByTenant = """
        SELECT t.name AS Tenant,
               CAST(SUM(j.items_total - j.items_done - j.items_dead - j.items_cancelled) AS SIGNED) AS Active,
               CAST(SUM(j.items_done) AS SIGNED) AS Done, CAST(SUM(j.items_dead) AS SIGNED) AS Dead,
               CAST(SUM(j.items_cancelled) AS SIGNED) AS Cancelled
        FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        GROUP BY t.name
        """;

    public const string LeasedByTenant = $"""
        SELECT t.name AS Tenant, COUNT(*) AS Leased
        FROM jobs j FORCE INDEX (ix_jobs_state_finished)
        JOIN items i FORCE INDEX (ix_items_job_state) ON i.job_id = j.id AND i.state = {ItemStateSql.Leased} AND i.due_at > @Now
        JOIN tenants t ON t.id = j.tenant_id
        WHERE j.state IN ({JobStateSql.Open}, {JobStateSql.Closed}, {JobStateSql.Cancelled})
        GROUP BY t.name
        """;

    /// <summary>
    /// The newest item id: the end of the primary key, one B-tree descent at any depth ("Select tables optimized away").
    /// A process whose workers wait reads it every <c>Claims:WakeMilliseconds</c>; a change means another process
    /// committed new items, so its workers look at once instead of at the next full poll.
    /// </summary>
    public const string NewestItem = "SELECT COALESCE(MAX(id), 0) FROM items";

    /// <summary>The one shared poll per process while workers wait: is any unblocked lane claimable now?</summary>
    public const string AnyLaneAvailable = """
        SELECT EXISTS (SELECT 1 FROM ordering FORCE INDEX (ix_ordering_any) WHERE blocked = 0 AND available_at <= @Now)
        """;
}
