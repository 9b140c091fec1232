using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>A validated POST /jobs waiting for its grouped transaction.</summary>
public sealed record PendingJob(long TenantId, string Name, IReadOnlyList<string> Tasks, bool Open, IReadOnlyList<InlineDocument> Documents)
{
    internal InlineBatch Inline { get; } = InlineBatch.Build(Documents);

    public int ItemCount => Documents.Count * Tasks.Count;

    public string TasksJson { get; } = JobValidation.TasksJson(Tasks);

    /// <summary>Bytes this job sends to the database, for the batch size cap.</summary>
    public long Bytes => Inline.Bytes;

    /// <summary>The Idempotency-Key record this job is made under, if any: the job is marked on it in its own transaction.</summary>
    public IdempotencyRun? Key { get; init; }
}

/// <summary>
/// A job as its creating transaction committed it: everything its first status needs, so POST /jobs answers without
/// reading the job back. <paramref name="Value"/> and <paramref name="Mode"/> are null when the job got no lanes.
/// </summary>
public sealed record CreatedJob(long JobId, DateTime CreatedAt, IReadOnlyList<CreatedDocument> Documents, long? Value, string? Mode, bool Blocked)
{
    /// <summary>The jobs ahead, read for the whole group after its commit; null when that read failed (the status reads it then).</summary>
    public AheadFacts? Ahead { get; init; }

    /// <summary>Its items went straight to this process's claim-ahead buffer (<see cref="INewWorkIntake"/>): none waits in the database.</summary>
    public bool Held { get; init; }
}

/// <summary>
/// Creates many new jobs (with their inline documents, items and lanes) in one transaction and three round trips,
/// however many jobs: the job rows, then every job's documents, bytes, items, counters and placement facts, then
/// every lane. A job with many inline documents adds four round trips per 1,000 of them, to send their rows and bytes
/// as prepared statements (<see cref="PreparedFrom"/>). See docs/DESIGN.md "Grouped submissions".
/// </summary>
public sealed class JobCreator(MySqlDataSource db, TimeProvider clock, OrderingLanes lanes, INewWorkIntake intake, TenantCache tenants, WorkSignal signal)
{
    /// <summary>
    /// The group's positions, read after its commit on the connection that made it (a pooled connection of its own cost
    /// the pool's reset, two round trips, per group). It runs inside the retry's lambda, after the commit, so a failure
    /// here is caught and never thrown into the retry, which would create the jobs again. One dive and at most one walk
    /// for the whole group instead of one of each per job (docs/DESIGN.md "Position at depth"). The jobs are committed
    /// whatever happens here, so a failure only leaves each status to read its own.
    /// </summary>
    private static async Task<CreatedJob[]> WithPositionsAsync(MySqlConnection conn, IReadOnlyList<PendingJob> jobs, CreatedJob[] results, DateTime now,
        CancellationToken ct)
    {
        var placed = results.Select((r, i) => (r, i))
            .Where(x => x.r.Value is not null && !x.r.Blocked && jobs[x.i].ItemCount > 0)
            .Select(x => new NewJobPlace(x.r.JobId, x.r.Value!.Value, jobs[x.i].Tasks.Count))
            .ToList();
        if (placed.Count == 0)
        {
            return results;
        }
        try
        {
            var ahead = await QueuePosition.OfNewJobsAsync(conn, placed, now, ct);
            return results.Select(r => ahead.TryGetValue(r.JobId, out var a) ? r with { Ahead = a } : r).ToArray();
        }
        catch (Exception ex) when (ex is MySqlException or IOException or InvalidOperationException or System.Net.Sockets.SocketException)
        {
            // A connection reset here is not the jobs' failure: they committed, and each status reads its own position.
            return results;
        }
    }

    public async Task<CreatedJob[]> CreateAsync(IReadOnlyList<PendingJob> jobs, CancellationToken ct)
    {
        var offers = await OffersAsync(jobs, ct);
        return await Retry.OnDeadlockAsync(async c =>
        {
            // DATETIME(6) keeps microseconds: the answer shows the instant as stored.
            var now = clock.GetUtcNow().UtcDateTime;
            now = now.AddTicks(-(now.Ticks % 10));
            await using var conn = await db.OpenConnectionAsync(c);
            var session = conn.ServerThread;
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var ids = await InsertJobsAsync(conn, tx, jobs, now, c);
            var (facts, created) = await FillJobsAsync(conn, tx, jobs, ids, now, c);
            var results = new CreatedJob[jobs.Count];
            await using (var placement = new MySqlBatch(conn, tx))
            {
                // Jobs without facts (no documents) get no lanes; the others' values come back in the same order.
                var placed = lanes.AddPlacements(placement,
                    [.. Enumerable.Range(0, jobs.Count).Where(i => facts[i] is not null).Select(i => new JobPlacement(ids[i], jobs[i].Tasks, facts[i]!))], now);
                var p = 0;
                for (var i = 0; i < jobs.Count; i++)
                {
                    results[i] = new CreatedJob(ids[i], now, created[i], null, null, false);
                    if (facts[i] is { } f)
                    {
                        var (value, mode) = placed[p++];
                        results[i] = results[i] with { Value = value, Mode = mode, Blocked = f.Blocked != 0 };
                    }
                }
                for (var i = 0; i < jobs.Count; i++)
                {
                    if (jobs[i].Key is { } key)
                    {
                        placement.BatchCommands.Add(IdempotencyMarks.Job(jobs[i].TenantId, ids[i], key));
                    }
                }
                if (placement.BatchCommands.Count > 0)
                {
                    await placement.ExecuteNonQueryAsync(c);
                }
            }
            var (held, epoch) = await ReserveOfferedAsync(conn, tx, jobs, offers, ids, created, results, now, c);
            // Said before the COMMIT, so that no look of the wake loop sees these items without knowing them for this
            // process's own: a look between the COMMIT and the submission's signal took a small job under a flood for
            // another process's, and sent the next /next to a claim transaction (24 ms) while the job's items waited here.
            signal.Holding(held.Max(h => h?.Items.Select(i => i.Id).DefaultIfEmpty(0).Max() ?? 0));
            // A COMMIT without an answer is checked, not redone: the group's jobs would exist twice.
            await CommitCheck.CommitAsync(tx, db, session, JobSql.JobLanded, new { Id = ids[0], jobs[0].TenantId, jobs[0].Name });
            // Committed: nothing below may throw into the retry, which would create the jobs again. The held items
            // reach the buffer before the positions are read, so a small job's first caller does not wait for that read.
            for (var i = 0; i < held.Length; i++)
            {
                if (held[i] is { } items)
                {
                    await intake.AdoptAsync(offers[i]!.Filter, items, epoch, CancellationToken.None);
                    results[i] = results[i] with { Held = true };
                }
            }
            return await WithPositionsAsync(conn, jobs, results, clock.GetUtcNow().UtcDateTime, c);
        }, ct);
    }

    /// <summary>
    /// Which jobs of the group go straight to a claim-ahead buffer (<see cref="INewWorkIntake.Offer"/>), asked once
    /// before the transaction: a job too large for the buffer, or one whose tenant already has work there or waiting,
    /// is created claimable as always.
    /// </summary>
    private async Task<Offer?[]> OffersAsync(IReadOnlyList<PendingJob> jobs, CancellationToken ct)
    {
        var offers = new Offer?[jobs.Count];
        for (var i = 0; i < jobs.Count; i++)
        {
            if (jobs[i].ItemCount > 0 && intake.Offer(jobs[i].TenantId, jobs[i].Tasks, jobs[i].ItemCount) is { } filter
                && await tenants.GetAsync(jobs[i].TenantId, ct) is { } tenant)
            {
                offers[i] = new Offer(filter, tenant.Name);
            }
        }
        return offers;
    }

    /// <summary>
    /// Reserves the offered jobs' items in the creating transaction, as a claim would, and reads them back with their
    /// tokens, with the claim epoch: one round trip, and none for a group with no offer.
    /// </summary>
    private async Task<(NewJobItems?[] Held, long Epoch)> ReserveOfferedAsync(MySqlConnection conn, MySqlTransaction tx, IReadOnlyList<PendingJob> jobs,
        Offer?[] offers, long[] ids, IReadOnlyList<CreatedDocument>[] created, CreatedJob[] results, DateTime now, CancellationToken ct)
    {
        var held = new NewJobItems?[jobs.Count];
        var offered = Enumerable.Range(0, jobs.Count).Where(i => offers[i] is not null && results[i].Value is not null && !results[i].Blocked).ToList();
        if (offered.Count == 0)
        {
            return (held, 0);
        }
        var until = now + intake.Reservation;
        await using var batch = new MySqlBatch(conn, tx);
        batch.BatchCommands.Add(new MySqlBatchCommand(ClaimSql.ReadEpoch));
        foreach (var i in offered)
        {
            batch.BatchCommands.Add(BatchCommand.Of(JobSql.ReserveNewJobItems, ("@JobId", ids[i]), ("@Until", until), ("@Now", now)));
            batch.BatchCommands.Add(BatchCommand.Of(JobSql.HideNewJobLanes, ("@JobId", ids[i]), ("@Until", until)));
            batch.BatchCommands.Add(BatchCommand.Of(JobSql.ReservedNewJobItems, ("@JobId", ids[i])));
        }
        await using var reader = await batch.ExecuteReaderAsync(ct);
        var rows = new BatchResults(reader);
        var epoch = await rows.NextLongAsync(ct);
        foreach (var i in offered)
        {
            var documents = created[i].Select((d, k) => (d.Id, k)).ToDictionary(x => x.Id, x => jobs[i].Documents[x.k]);
            var items = new List<ReservedNewItem>(jobs[i].ItemCount);
            await rows.NextAsync(ct);
            while (await reader.ReadAsync(ct))
            {
                var document = documents[reader.GetInt64(1)];
                items.Add(new ReservedNewItem(reader.GetInt64(0), reader.GetInt64(1), reader.GetString(2), (byte[])reader.GetValue(3),
                    document.Name, document.ContentType));
            }
            held[i] = new NewJobItems(ids[i], jobs[i].TenantId, offers[i]!.TenantName, results[i].Value!.Value, now, until, items);
        }
        return (held, epoch);
    }

    private sealed record Offer(string Filter, string TenantName);

    /// <summary>Every job row with its final state and counters, each followed by its id, in one batch.</summary>
    private static async Task<long[]> InsertJobsAsync(MySqlConnection conn, MySqlTransaction tx, IReadOnlyList<PendingJob> jobs, DateTime now, CancellationToken ct)
    {
        await using var batch = new MySqlBatch(conn, tx);
        foreach (var job in jobs)
        {
            long items = job.ItemCount;
            var state = job.Open ? JobStates.Open : items == 0 ? JobStates.Done : JobStates.Closed;
            batch.BatchCommands.Add(BatchCommand.Of(JobSql.InsertNewJob, ("@TenantId", job.TenantId), ("@Name", job.Name), ("@State", state),
                ("@Tasks", string.Join(',', job.Tasks)), ("@Documents", job.Documents.Count), ("@Items", items),
                ("@ClosedAt", job.Open ? DBNull.Value : now), ("@FinishedAt", state == JobStates.Done ? now : DBNull.Value), ("@Now", now)));
            batch.BatchCommands.Add(new MySqlBatchCommand(JobSql.LastInsertId));
        }
        var ids = new long[jobs.Count];
        await using var reader = await batch.ExecuteReaderAsync(ct);
        var rows = new BatchResults(reader);
        for (var i = 0; i < jobs.Count; i++)
        {
            ids[i] = await rows.NextLongAsync(ct);
        }
        return ids;
    }

    /// <summary>
    /// Documents, bytes and items of every job, the one placement fact new jobs need, and the documents' ids (a lone
    /// document's from LAST_INSERT_ID, the ids of a larger job's documents read back). Row-less results are skipped by the
    /// reader, so the SELECTs are read in the order they were added.
    /// </summary>
    private static async Task<(PlacementFacts?[] Facts, IReadOnlyList<CreatedDocument>[] Created)> FillJobsAsync(
        MySqlConnection conn, MySqlTransaction tx, IReadOnlyList<PendingJob> jobs, long[] ids, DateTime now, CancellationToken ct)
    {
        var facts = new PlacementFacts?[jobs.Count];
        var created = new IReadOnlyList<CreatedDocument>[jobs.Count];
        Array.Fill(created, []);
        if (jobs.All(j => j.Documents.Count == 0))
        {
            return (facts, created);
        }
        await using var batch = new MySqlBatch(conn, tx);
        batch.BatchCommands.Add(new MySqlBatchCommand(OrderingSql.NextOldest));
        foreach (var (job, id) in jobs.Zip(ids))
        {
            if (job.Documents.Count == 1)
            {
                // One document (the commonest small job): no row numbering needed. Its id is read before the items'
                // insert moves LAST_INSERT_ID on.
                var d = job.Documents[0];
                batch.BatchCommands.Add(BatchCommand.Of(JobSql.InsertOneDocument, ("@JobId", id), ("@TenantId", job.TenantId), ("@Name", d.Name),
                    ("@ContentType", d.ContentType), ("@Size", (long)d.Content.Length), ("@Sha256", job.Inline.Hashes[0]), ("@Now", now)));
                batch.BatchCommands.Add(BatchCommand.Of(JobSql.InsertOneContent, ("@Content", d.Content)));
                batch.BatchCommands.Add(new MySqlBatchCommand(JobSql.LastInsertId));
                batch.BatchCommands.Add(job.Tasks.Count == 1
                    ? BatchCommand.Of(JobSql.InsertOneDocumentItem, ("@JobId", id), ("@Task", job.Tasks[0]), ("@Now", now))
                    : BatchCommand.Of(JobSql.InsertOneDocumentItems, ("@JobId", id), ("@Tasks", job.TasksJson), ("@Now", now)));
            }
            else if (job.Documents.Count > 0)
            {
                // Set-based statements whatever the number of documents: rows, bytes, items (a large job's rows and
                // bytes as prepared statements, sent before this batch).
                if (job.Documents.Count >= PreparedFrom)
                {
                    await InsertPreparedAsync(conn, tx, job, id, now, ct);
                }
                else
                {
                    batch.BatchCommands.Add(DocumentRows(job, id, now));
                    batch.BatchCommands.Add(ContentRows(job, id));
                }
                batch.BatchCommands.Add(BatchCommand.Of(JobSql.InsertItemsForNewJob, ("@JobId", id), ("@Tasks", job.TasksJson), ("@Now", now)));
                batch.BatchCommands.Add(BatchCommand.Of(JobSql.CreatedDocumentIds, ("@JobId", id)));
            }
        }
        await using var reader = await batch.ExecuteReaderAsync(ct);
        var rows = new BatchResults(reader);
        await rows.NextRowAsync(ct);
        var (nextOldest, band) = (rows.Reader.GetInt64(0), rows.Reader.GetInt32(1));
        for (var i = 0; i < jobs.Count; i++)
        {
            var job = jobs[i];
            if (job.Documents.Count == 0)
            {
                continue;
            }
            // A new job has no override (none can name an id that did not exist), no lane yet, and is not blocked.
            facts[i] = new PlacementFacts(job.TenantId, Blocked: 0, band, Active: job.ItemCount, OverridePriority: null, CurrentOldest: null, nextOldest);
            if (job.Documents.Count == 1)
            {
                var documentId = await rows.NextLongAsync(ct);
                created[i] = [Created(job, 0, documentId)];
                continue;
            }
            await rows.NextAsync(ct);
            var docs = new List<CreatedDocument>(job.Documents.Count);
            for (var k = 0; await reader.ReadAsync(ct); k++)
            {
                docs.Add(Created(job, k, reader.GetInt64(0)));
            }
            created[i] = docs;
        }
        return (facts, created);
    }

    /// <summary>The answer's entry for a job's <paramref name="k"/>-th document: its new id with what the request sent.</summary>
    private static CreatedDocument Created(PendingJob job, int k, long id) =>
        new(id, job.Documents[k].Name, job.Documents[k].Content.Length, Convert.ToHexStringLower(job.Inline.Hashes[k]));

    /// <summary>
    /// From this many inline documents a job's rows and bytes go in as server-side prepared statements: their values
    /// travel as binary parameters, so the server neither lexes nor unescapes a megabyte of SQL literals (a fifth of its
    /// time in a batched enqueue) and the Api builds no such text. Below it, two round trips more would cost a small job
    /// more than the lexing saves, so its rows stay in the group's batch.
    /// </summary>
    private const int PreparedFrom = 64;

    /// <summary>Documents per prepared statement: 4 placeholders each, well within the protocol's 65,535.</summary>
    private const int DocumentsPerStatement = 1000;

    /// <summary>
    /// A large job's document rows and bytes, <see cref="DocumentsPerStatement"/> at a time: each chunk's rows, then its
    /// bytes matched by row number to the ids that insert made (LAST_INSERT_ID() is the chunk's first id).
    /// </summary>
    private static async Task InsertPreparedAsync(MySqlConnection conn, MySqlTransaction tx, PendingJob job, long id, DateTime now, CancellationToken ct)
    {
        for (var first = 0; first < job.Documents.Count; first += DocumentsPerStatement)
        {
            var count = Math.Min(DocumentsPerStatement, job.Documents.Count - first);
            await using (var rows = new MySqlCommand(JobSql.InsertInlineDocuments(count), conn, tx))
            {
                AddDocumentRows(rows.Parameters, job, id, now, first, count);
                await rows.PrepareAsync(ct);
                await rows.ExecuteNonQueryAsync(ct);
            }
            await using var bytes = new MySqlCommand(JobSql.InsertInlineContents(count), conn, tx);
            AddContentRows(bytes.Parameters, job, id, first, count);
            await bytes.PrepareAsync(ct);
            await bytes.ExecuteNonQueryAsync(ct);
        }
    }

    private static MySqlBatchCommand DocumentRows(PendingJob job, long id, DateTime now)
    {
        var c = new MySqlBatchCommand(JobSql.InsertInlineDocuments(job.Documents.Count));
        AddDocumentRows(c.Parameters, job, id, now, 0, job.Documents.Count);
        return c;
    }

    private static MySqlBatchCommand ContentRows(PendingJob job, long id)
    {
        var c = new MySqlBatchCommand(JobSql.InsertInlineContents(job.Documents.Count));
        AddContentRows(c.Parameters, job, id, 0, job.Documents.Count);
        return c;
    }

    private static void AddDocumentRows(MySqlParameterCollection p, PendingJob job, long id, DateTime now, int first, int count)
    {
        var docs = job.Documents.Skip(first).Take(count).ToList();
        p.AddWithValue("@JobId", id);
        p.AddWithValue("@TenantId", job.TenantId);
        p.AddWithValue("@Now", now);
        p.AddNumbered("@n", docs.Select(d => d.Name));
        p.AddNumbered("@t", docs.Select(d => d.ContentType));
        p.AddNumbered("@s", docs.Select(d => (long)d.Content.Length));
        p.AddNumbered("@h", job.Inline.Hashes.Skip(first).Take(count));
    }

    private static void AddContentRows(MySqlParameterCollection p, PendingJob job, long id, int first, int count)
    {
        p.AddWithValue("@JobId", id);
        p.AddNumbered("@c", job.Documents.Skip(first).Take(count).Select(d => d.Content));
    }
}
