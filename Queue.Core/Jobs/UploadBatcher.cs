using Dapper;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Queue.Core.Hosting;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>A document read whole into memory before its upload's transaction.</summary>
public sealed record BufferedDocument(string Name, string ContentType, byte[] Content, byte[] Sha256);

/// <summary>An upload to an open job whose every byte is in hand, waiting for its grouped transaction.</summary>
public sealed record SmallUpload(long TenantId, long JobId, IReadOnlyList<string> Tasks, IReadOnlyList<BufferedDocument> Documents)
{
    public string TasksJson { get; } = JobValidation.TasksJson(Tasks);

    /// <summary>Bytes this upload sends to the database, for the group's size cap (read under the batcher's lock).</summary>
    public long Bytes { get; } = Documents.Sum(d => (long)d.Content.Length + d.Name.Length + 64);

    /// <summary>The Idempotency-Key record this upload runs under, if any: its documents are marked on it in its transaction.</summary>
    public IdempotencyRun? Key { get; init; }
}

/// <summary>
/// Groups concurrent small uploads of this process into one transaction, as job creations are grouped: the job rows
/// locked in id order, then every document, its bytes, its items and its job's counters and placement facts, then the
/// lanes; four round trips and one commit for the whole group. An upload to a job that was closed or cancelled meanwhile
/// gets its 409 and writes nothing; the others go on. See docs/DESIGN.md "Grouped submissions".
/// </summary>
public sealed partial class UploadBatcher
{
    private readonly MySqlDataSource db;
    private readonly TimeProvider clock;
    private readonly OrderingLanes lanes;
    private readonly GroupedWrites<SmallUpload, (Outcome Outcome, UploadResult? Result)> writes;

    public UploadBatcher(MySqlDataSource db, TimeProvider clock, OrderingLanes lanes, IOptions<JobOptions> options, BackgroundWork host, ILogger<UploadBatcher> logger)
    {
        this.db = db;
        this.clock = clock;
        this.lanes = lanes;
        writes = new(host, WriteAsync, u => u.Bytes, options.Value.GroupLimits, "uploads", (ex, n) => LogGroupFailed(logger, ex, n));
    }

    public Task<(Outcome Outcome, UploadResult? Result)> UploadAsync(SmallUpload upload, CancellationToken ct) => writes.RunAsync(upload, ct);

    private Task<(Outcome Outcome, UploadResult? Result)[]> WriteAsync(IReadOnlyList<SmallUpload> uploads, CancellationToken ct) =>
        Retry.OnDeadlockAsync(async c =>
        {
            var now = clock.GetUtcNow().UtcDateTime;
            now = now.AddTicks(-(now.Ticks % 10)); // DATETIME(6)
            var results = new (Outcome, UploadResult?)[uploads.Count];
            await using var conn = await db.OpenConnectionAsync(c);
            var session = conn.ServerThread;
            await using var tx = await conn.BeginReadCommittedAsync(c);
            var (open, placed) = await LockOpenJobsAsync(conn, tx, uploads, now, c);
            var accepted = new List<int>();
            for (var i = 0; i < uploads.Count; i++)
            {
                if (open.Contains(uploads[i].JobId))
                {
                    accepted.Add(i);
                }
                else
                {
                    results[i] = (Outcome.Conflict, null); // closed or cancelled since the upload began: nothing of it lands
                }
            }
            if (accepted.Count > 0)
            {
                var jobs = accepted.Select(i => uploads[i]).DistinctBy(u => u.JobId).ToList();
                var facts = await InsertAsync(conn, tx, uploads, accepted, jobs, placed, results, now, c);
                await using var placement = new MySqlBatch(conn, tx);
                lanes.AddPlacements(placement, [.. jobs.Select((job, j) => new JobPlacement(job.JobId, job.Tasks, facts[j]))], now);
                foreach (var i in accepted)
                {
                    if (uploads[i].Key is { } key)
                    {
                        placement.BatchCommands.Add(IdempotencyMarks.Upload(uploads[i].TenantId, uploads[i].JobId, key, results[i].Item2!.Documents));
                    }
                }
                if (placement.BatchCommands.Count > 0)
                {
                    await placement.ExecuteNonQueryAsync(c);
                }
            }
            if (accepted.Count == 0)
            {
                await tx.CommitAsync(c); // nothing written: a lost answer here changes nothing
                return results;
            }
            // A COMMIT without an answer is checked, not redone: the group's documents would exist twice.
            var first = results[accepted[0]].Item2!.Documents[0];
            await CommitCheck.CommitAsync(tx, db, session, JobSql.DocumentLanded, new { first.Id, first.Name });
            return results;
        }, ct);

    /// <summary>
    /// The uploads' open jobs, locked in id order; in an oldest-first period also, in the same round trip, their lanes that
    /// already carry an oldest-first value, which placement keeps: those jobs' facts leave out the next one (about a sixth
    /// of mariadbd's time per upload, docs/DESIGN.md "Grouped uploads").
    /// </summary>
    private async Task<(HashSet<long> Open, HashSet<long> Placed)> LockOpenJobsAsync(MySqlConnection conn, MySqlTransaction tx,
        IReadOnlyList<SmallUpload> uploads, DateTime now, CancellationToken ct)
    {
        var ids = uploads.Select(u => u.JobId).Distinct().Order().ToList();
        if (!lanes.OldestFirst(now))
        {
            return ((await conn.QueryAsync<long>(new CommandDefinition(JobSql.LockOpenJobsForUpload, new { Ids = ids }, tx, cancellationToken: ct))).ToHashSet(), []);
        }
        await using var read = await conn.QueryMultipleAsync(new CommandDefinition(
            JobSql.LockOpenJobsForUpload + ";\n" + OrderingSql.JobsPlacedOldestFirst, new { Ids = ids }, tx, cancellationToken: ct));
        var open = (await read.ReadAsync<long>()).ToHashSet();
        return (open, (await read.ReadAsync<long>()).ToHashSet());
    }

    /// <summary>Every accepted upload's documents, bytes, items and counters in one batch, then each job's placement facts.</summary>
    private async Task<PlacementFacts[]> InsertAsync(MySqlConnection conn, MySqlTransaction tx, IReadOnlyList<SmallUpload> uploads,
        List<int> accepted, List<SmallUpload> jobs, HashSet<long> placed, (Outcome, UploadResult?)[] results, DateTime now, CancellationToken ct)
    {
        await using var batch = new MySqlBatch(conn, tx);
        foreach (var i in accepted)
        {
            var u = uploads[i];
            foreach (var d in u.Documents)
            {
                batch.BatchCommands.Add(BatchCommand.Of(JobSql.InsertOneDocument, ("@JobId", u.JobId), ("@TenantId", u.TenantId), ("@Name", d.Name),
                    ("@ContentType", d.ContentType), ("@Size", (long)d.Content.Length), ("@Sha256", d.Sha256), ("@Now", now)));
                batch.BatchCommands.Add(new MySqlBatchCommand(JobSql.LastInsertId));
                batch.BatchCommands.Add(BatchCommand.Of(JobSql.InsertOneContent, ("@Content", d.Content)));
                batch.BatchCommands.Add(u.Tasks.Count == 1
                    ? BatchCommand.Of(JobSql.InsertOneDocumentItem, ("@JobId", u.JobId), ("@Task", u.Tasks[0]), ("@Now", now))
                    : BatchCommand.Of(JobSql.InsertOneDocumentItems, ("@JobId", u.JobId), ("@Tasks", u.TasksJson), ("@Now", now)));
            }
        }
        var counts = accepted.GroupBy(i => uploads[i].JobId)
            .Select(g => (JobId: g.Key, Documents: g.Sum(i => (long)uploads[i].Documents.Count), Items: g.Sum(i => (long)uploads[i].Documents.Count * uploads[i].Tasks.Count)))
            .ToList();
        foreach (var chunk in counts.Chunk(SqlRows.CaseRowsPerStatement))
        {
            batch.BatchCommands.Add(BatchCommand.Rows(JobSql.AddToJobs(chunk.Length), chunk, now,
                ("@j", c => c.JobId), ("@d", c => c.Documents), ("@n", c => c.Items)));
        }
        // After every upload's counters, so the smallest-first value counts all of them.
        foreach (var job in jobs)
        {
            batch.BatchCommands.Add(lanes.FactsCommand(job.JobId, now, placed.Contains(job.JobId)));
        }
        await using var reader = await batch.ExecuteReaderAsync(ct);
        var rows = new BatchResults(reader);
        foreach (var i in accepted)
        {
            var u = uploads[i];
            var created = new List<CreatedDocument>(u.Documents.Count);
            foreach (var d in u.Documents)
            {
                var id = await rows.NextLongAsync(ct);
                created.Add(new CreatedDocument(id, d.Name, d.Content.Length, Convert.ToHexStringLower(d.Sha256)));
            }
            results[i] = (Outcome.Ok, new UploadResult(created, (long)u.Documents.Count * u.Tasks.Count));
        }
        var facts = new PlacementFacts[jobs.Count];
        Func<System.Data.Common.DbDataReader, PlacementFacts>? parse = null;
        for (var j = 0; j < jobs.Count; j++)
        {
            await rows.NextRowAsync(ct);
            parse ??= reader.GetRowParser<PlacementFacts>();
            facts[j] = parse(reader);
        }
        return facts;
    }

    [LoggerMessage(EventId = 2002, Level = LogLevel.Warning, Message = "A grouped upload of {Count} requests failed; writing them one by one")]
    private static partial void LogGroupFailed(ILogger logger, Exception exception, int count);
}
